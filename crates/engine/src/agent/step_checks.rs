//! A plan step judged on its own evidence without a model where it can be: its criteria that name
//! a file, a text in a file, or a command are checked here, and only a step with a criterion a
//! reader must judge asks the evaluator. The step records what decided it.

use super::run::{Halt, Run};
use crate::domain::*;
use crate::event::EngineEvent;
use crate::judge::completion::EvaluationOutcome;
use crate::plan::checks::{self, Check};

impl Run {
    /// The running plan step's checks, when every criterion can be checked without a model. A
    /// file check that holds speaks for the step only when the step itself changed that file: one
    /// that was already there (or already said so) proves nothing about what the step did, and
    /// the evaluator judges the step instead. One that does not hold is the step not done, either way.
    pub(super) fn step_checks(&mut self) -> Option<Vec<Check>> {
        let step = self.plan_step.as_ref().filter(|_| !self.judge_whole)?;
        let checks = checks::decidable(&step.step.criteria)?;
        let files: Vec<&Check> = checks.iter().filter(|c| matches!(c, Check::FileExists(_) | Check::FileContains(..))).collect();
        if files.is_empty() || files.iter().any(|c| !self.file_check(c)) {
            return Some(checks);
        }
        let changed: Vec<String> = self.own().changes().into_iter().map(|c| c.path).collect();
        let by_the_step = |c: &Check| match c {
            Check::FileExists(p) | Check::FileContains(p, _) => self.recorded_name(p).is_some_and(|name| changed.contains(&name)),
            _ => true,
        };
        files.iter().all(|c| by_the_step(c)).then_some(checks.clone())
    }

    /// The verification commands of this run: at a plan step, the step's own and those of the
    /// task its criteria name (the rest run at the end of the plan); otherwise the task's.
    pub(super) fn run_verify_commands(&self) -> Vec<String> {
        let all = &self.verify_commands;
        match self.plan_step.as_ref().filter(|_| !self.judge_whole) {
            Some(s) => {
                let mut out: Vec<String> = checks::named_commands(&s.step.criteria, all).into_iter().cloned().collect();
                for c in &s.step.verify {
                    if !out.contains(c) {
                        out.push(c.clone());
                    }
                }
                out
            }
            None => all.clone(),
        }
    }

    /// The commands of this run given for this task rather than the workspace: at a plan step,
    /// the step's own as well.
    pub(super) fn task_verify_commands(&self) -> Vec<String> {
        let mut out = self.task_verify.clone();
        if let Some(s) = self.plan_step.as_ref().filter(|_| !self.judge_whole) {
            out.extend(s.step.verify.iter().filter(|c| !self.task_verify.contains(c)).cloned());
        }
        out
    }

    /// Whether a file check holds in the workspace (paths confined as the file tools'are).
    fn file_check(&self, check: &Check) -> bool {
        // Only a regular file holds text: a named pipe would hold the read (and the task) until
        // a writer came, perhaps never. Read through the file tools' own open, which looks at
        // what is there before it opens it: a pipe swapped in after a separate look would not.
        let read = |p: &str| {
            let (_, mut file) = self.workspace.open_read(p).ok()?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
            Some(bytes)
        };
        match check {
            // A named pipe, a socket or a device is no file: the review shows a file gone there.
            Check::FileExists(p) => self.workspace.resolve(p).is_ok_and(|full| std::fs::metadata(full).is_ok_and(|m| m.is_file() || m.is_dir())),
            Check::FileContains(p, text) => read(p).is_some_and(|b| String::from_utf8_lossy(&b).contains(text.as_str())),
            _ => false,
        }
    }

    /// Only file checks, all holding: the step is done as soon as its tools made them so, with
    /// no further answer from the agent. `None` when the step has other checks.
    pub(super) fn files_already_done(&mut self) -> Option<bool> {
        let checks = self.step_checks()?;
        if checks.iter().any(|c| matches!(c, Check::CommandPasses(_))) {
            return None;
        }
        let all = checks.iter().all(|c| self.file_check(c));
        if all {
            self.evidence.decided_by =
                Some(format!("checked without a model: {}", checks.iter().map(|c| format!("{} ✓", c.describe())).collect::<Vec<_>>().join("; ")));
            // The files decide it now: an earlier verdict that found them unmet is out of date.
            self.evidence.last_verdict = None;
            self.evidence.last_verdict_summary = None;
        }
        Some(all)
    }

    /// Judges the step by its checks: the files looked at, the commands run (one the
    /// verification just passed is not run again). Stands in for the evaluator's verdict; `None`
    /// when a command was declined (or nobody could be asked), now or by the verification just
    /// before (it is not asked again), and every other check holds: it never ran, so the checks
    /// cannot decide, and the evaluator judges, reading every check's result. One that fails
    /// beside it is the step not done, as ever.
    pub(super) async fn check_step(&mut self, checks: &[Check], just_verified: &[String], declined: &[String]) -> Result<Option<EvaluationOutcome>, Halt> {
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Verifying, detail: "the step's criteria, without a model".into() })?;
        let to_run: Vec<String> = checks
            .iter()
            .filter_map(|c| match c {
                Check::CommandPasses(cmd) if !just_verified.contains(cmd) && !declined.contains(cmd) => Some(cmd.clone()),
                _ => None,
            })
            .collect();
        let mut ran = crate::judge::completion::VerificationOutcome::default();
        if !to_run.is_empty() {
            // Beside what the verification just before found: the evaluator reads them all.
            let earlier = std::mem::take(&mut self.evidence.verification_log);
            ran = self.verify(&to_run, true).await?;
            let now = std::mem::replace(&mut self.evidence.verification_log, earlier);
            self.evidence.verification_log.retain(|entry| !to_run.iter().any(|c| entry.starts_with(&format!("`{c}`:"))));
            self.evidence.verification_log.extend(now);
        }
        // `None`: never ran (declined, or nobody could be asked).
        let results: Vec<(String, Option<bool>)> = checks
            .iter()
            .map(|c| {
                let ok = match c {
                    Check::CommandPasses(cmd) if declined.contains(cmd) || ran.skipped.contains(cmd) => None,
                    Check::CommandPasses(cmd) => Some(!ran.failures.iter().any(|f| &f.command == cmd)),
                    other => Some(self.file_check(other)),
                };
                (c.describe(), ok)
            })
            .collect();
        let failed: Vec<String> = results.iter().filter(|(_, ok)| *ok == Some(false)).map(|(d, _)| d.clone()).collect();
        // What never ran cannot pass the step, nor outweigh one that fails: only when all the
        // rest holds does the evaluator judge it.
        if failed.is_empty() && results.iter().any(|(_, ok)| ok.is_none()) {
            return Ok(None);
        }
        let mark = |ok: Option<bool>| match ok {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "(not run)",
        };
        let decided = format!("checked without a model: {}", results.iter().map(|(d, ok)| format!("{d} {}", mark(*ok))).collect::<Vec<_>>().join("; "));
        self.evidence.decided_by = Some(decided.clone());
        let done = failed.is_empty();
        self.evidence.last_verdict = Some(if done { Verdict::Done } else { Verdict::NotDone });
        self.evidence.verdict_at_window = Some(self.evidence.windows.len());
        self.evidence.last_verdict_summary = Some(decided.clone());
        // A step's own checks judge the step alone, the last one too.
        self.evidence.last_verdict_on_step = self.plan_step.as_ref().filter(|_| !self.judge_whole).map(super::plan_run::StepRun::label);
        Ok(Some(EvaluationOutcome {
            verdict: if done { Verdict::Done } else { Verdict::NotDone },
            summary: decided,
            continuation_prompt: if done {
                String::new()
            } else {
                format!("These criteria of the step do not hold yet: {}. Make them hold, then finish.", failed.join("; "))
            },
            remaining: failed,
            stuck_reason: None,
            output_data: None,
            comments: vec![],
        }))
    }
}
