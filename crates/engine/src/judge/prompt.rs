//! The words the engine says to the model: the system prompt and every continuation. Kept in
//! one place so that they can be read, tuned and tested together.

use crate::domain::ContinuationSource;
use crate::judge::completion::VerificationFailure;
use crate::workspace::instructions::ProjectInstructions;

pub fn system_prompt(workspace: &str, marker: Option<&str>, instructions: Option<&ProjectInstructions>) -> String {
    let mut s = format!(
        "You are Finishline's agent. You work on the person's task inside the workspace folder {workspace} using the tools you are given.\n\
         - Plan with todo_write for tasks of more than one step, and keep the list current.\n\
         - Use paths relative to the workspace. Read before you edit.\n\
         - Do the work with tools; do not just describe what you would do.\n\
         - When you are finished, call complete_task with an honest status: success, partial (say what remains) or blocked (say what you need).\n\
         - If the person only greets you or asks a question, just answer.\n\
         Messages inside <system-reminder> tags come from Finishline, not from the person."
    );
    if let Some(m) = marker.filter(|m| !m.trim().is_empty()) {
        s.push_str(&format!("\nWhen the task is completely done, end your message with {m}."));
    }
    if let Some(i) = instructions {
        s.push_str(&format!(
            "\n\nThe project's own instructions for agents, from {} in the workspace{}. Follow them; where they and the person's task disagree, the task wins.\n<project-instructions>\n{}\n</project-instructions>",
            i.file,
            if i.truncated { " (cut to its first part)" } else { "" },
            i.text
        ));
    }
    s
}

/// Wraps a continuation for the model: a user-role message in a tag that says it is not the
/// person's words. Mid-conversation system messages are not portable across providers.
pub fn tagged(source: ContinuationSource, attempt: u32, max: u32, text: &str) -> String {
    if max == 0 {
        return format!("<system-reminder source=\"{}\">\n{text}\n</system-reminder>", source.as_str());
    }
    format!("<system-reminder source=\"{}\" attempt=\"{attempt}/{max}\">\n{text}\n</system-reminder>", source.as_str())
}

/// What a resumed run tells the model when the person added nothing.
pub fn resume_note() -> String {
    "Finishline was restarted. Continue the task from where you were; check the workspace for the state of anything whose outcome is unknown.".into()
}

/// What a run the person sent on without words of theirs tells the model: Resume after a cancel,
/// Retry after a failure. Without it the agent got nothing new (an ACP agent an empty prompt),
/// answered as if asked nothing, and the task was never taken up again.
pub fn go_on_note(after: Option<crate::domain::SessionStatus>) -> String {
    use crate::domain::SessionStatus;
    match after {
        Some(SessionStatus::Cancelled) => "The last run was stopped before it ended, and the person now asks you to go on. Continue the task from where you were; check the workspace for the state of anything whose outcome is unknown (a command may have been cut short).",
        Some(SessionStatus::Failed) => "The last run ended on an error, and the person asks you to go on. Continue the task from where you were; check the workspace for what is already done and the state of anything whose outcome is unknown.",
        _ => "The person asks you to go on with the task. Check the workspace for what is already done before you change anything.",
    }
    .into()
}

pub fn truncation() -> String {
    "Your last answer was cut off. Continue exactly where you stopped, without repeating what you already wrote.".into()
}

pub fn todo_gate(open: &[String]) -> String {
    let list: String = open.iter().map(|t| format!("\n- [ ] {t}")).collect();
    format!(
        "You stopped, but these todo items are still open:{list}\nFinish them. If one no longer applies, mark it cancelled with todo_write. Then call complete_task."
    )
}

/// The person's review comments the run has not touched at all.
pub fn open_criteria(open: &[String]) -> String {
    let list: String = open.iter().map(|t| format!("\n- {t}")).collect();
    format!(
        "You stopped, but these comments from the person's review are not addressed yet (their files are unchanged):{list}\n\nAddress each of them, then finish."
    )
}

/// Files of the merge the agent was asked to resolve that still hold conflict markers.
pub fn conflict_markers(files: &[String]) -> String {
    let list: String = files.iter().map(|f| format!("\n- {f}")).collect();
    format!(
        "You stopped, but these files still hold conflict markers (<<<<<<<, =======, >>>>>>>) from the merge you were asked to resolve:{list}\n\nResolve each conflict in the file itself, keeping what both sides need, and remove every marker. Then finish."
    )
}

/// What an evaluator that called the work done said of the person's review comments it found not
/// addressed: the opening of its continuation (the comments follow as what is still to do).
pub fn unaddressed_comments(open: &[(String, String)]) -> String {
    let list: String = open.iter().map(|(c, why)| if why.is_empty() { format!("\n- {c}") } else { format!("\n- {c}: {why}") }).collect();
    format!("An independent check found comments from the person's review not addressed yet:{list}\n\nAddress each of them, then finish.")
}

/// The todo gate for an external agent, which keeps its list in its own tool or ACP plan.
pub fn todo_gate_external(open: &[String]) -> String {
    let list: String = open.iter().map(|t| format!("\n- [ ] {t}")).collect();
    format!("You stopped, but these items of your plan are still open:{list}\nFinish them. If one no longer applies, mark it cancelled in your todo list. Then say what you did.")
}

pub fn missing_completion() -> String {
    "You stopped without calling complete_task. If the task is done, call complete_task with status success and a summary. \
     If it is not done, keep working, or call complete_task with status partial or blocked and say what remains."
        .into()
}

pub fn missing_action(prompt: &str) -> String {
    let base = "Your last reply left undone what you said you would do, or what was asked of you. Do it now with the tools.";
    if prompt.trim().is_empty() {
        base.into()
    } else {
        format!("{base}\n{}", prompt.trim())
    }
}

pub fn verification(f: &VerificationFailure) -> String {
    let code = f.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "none (it did not finish)".into());
    format!(
        "The verification command `{}` failed (exit code {code}). The end of its output:\n```\n{}\n```\nFix the cause, then finish.",
        f.command,
        f.output_tail.trim_end()
    )
}

/// The evaluator's targeted prompt, or one built from what remains.
pub fn evaluator(prompt: &str, remaining: &[String]) -> String {
    if !prompt.trim().is_empty() {
        let mut s = prompt.trim().to_string();
        if !remaining.is_empty() {
            s.push_str("\n\nStill to do:");
            for r in remaining {
                s.push_str(&format!("\n- {r}"));
            }
        }
        return s;
    }
    let mut s = String::from("An independent check found that the task is not finished yet. Still to do:");
    for r in remaining {
        s.push_str(&format!("\n- {r}"));
    }
    s
}

/// What became of a task's last worktree, when a follow-up works in a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EarlierWork {
    /// The last round was rejected; `landed_before`: an earlier one landed on the branch the new
    /// worktree starts from, so its files are there.
    Rejected {
        landed_before: bool,
    },
    Landed,
    /// Approved onto a branch of its own, which the new worktree does not start from.
    Kept(String),
    /// The last worktree held no changes and was removed when the run stopped: only its folder
    /// changed (an agent keeping absolute paths must not write into the old one).
    Unused,
}

/// What a follow-up's agent is told when its task works in a new worktree: the files of the last
/// one are not here (rejected, or kept on their branch), or are, as the branch now holds them
/// (landed).
pub fn new_worktree(earlier: &EarlierWork, base: Option<&str>) -> String {
    let base = base.map(|b| format!("`{b}`")).unwrap_or_else(|| "the person's checkout".into());
    match earlier {
        EarlierWork::Landed => format!(
            "Your earlier changes in this task were approved and landed on {base}. You now work in a new worktree made from {base} as it is now, with them in it."
        ),
        EarlierWork::Kept(branch) => format!(
            "Your earlier changes in this task were approved and kept on the branch `{branch}`; they are not in this worktree, which is made from {base} as it is now. Read the workspace before you rely on anything."
        ),
        EarlierWork::Unused => format!(
            "The worktree you worked in before held no changes and was removed when your last run stopped: you now work in a new worktree made from {base} as it is now. Work only in the current folder; paths into the old one no longer exist."
        ),
        EarlierWork::Rejected { landed_before: false } => format!(
            "Your earlier changes in this task were rejected and are gone: you now work in a new worktree made from {base} as it is now. Files you wrote before are not here; read the workspace before you rely on anything."
        ),
        EarlierWork::Rejected { landed_before: true } => format!(
            "Your last changes in this task were rejected and are gone (what was approved before landed on {base} and is here): you now work in a new worktree made from {base} as it is now. Files you wrote in the rejected round are not here; read the workspace before you rely on anything."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Continuations are shown as Markdown: a line straight after a list item would read as part
    /// of that item ("…instead. Address each of them"), and a line after a paragraph's as the
    /// same sentence ("Write b.txt Still to do:").
    #[test]
    fn what_follows_a_list_or_a_paragraph_is_a_paragraph_of_its_own() {
        let open = open_criteria(&["a.py:9: keep this".into()]);
        assert!(open.ends_with("- a.py:9: keep this\n\nAddress each of them, then finish."), "{open}");
        let unaddressed = unaddressed_comments(&[("a.py:9: keep this".into(), "it is gone".into())]);
        assert!(unaddressed.ends_with("- a.py:9: keep this: it is gone\n\nAddress each of them, then finish."), "{unaddressed}");
        assert_eq!(evaluator("Write banana into b.txt", &["b.txt".into()]), "Write banana into b.txt\n\nStill to do:\n- b.txt");
    }
}
