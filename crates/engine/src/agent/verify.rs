//! Verification: the workspace's verify commands (the person's own, from Settings or the CLI) and
//! the command a `complete_task` claim names. They have their own events and are never replayed
//! to the model as a call the agent made. The person's commands run without asking; a command the
//! agent named goes through the permission gate like any `run_command`.

use super::run::{Halt, Run};
use crate::domain::*;
use crate::event::{EngineEvent, Envelope};
use crate::judge::completion::{VerificationFailure, VerificationOutcome};

/// The last lines of a command's output that verification keeps.
const TAIL_LINES: usize = 40;

impl super::Engine {
    /// The person's verify commands for a task: the workspace's own from the settings of the
    /// moment, and those the task was started with (the CLI's `--verify`), which a follow-up
    /// run from anywhere runs too.
    pub(super) fn verify_commands_of(&self, events: &[Envelope]) -> Vec<String> {
        let mut all = self.config.verify_commands.clone();
        for env in events {
            if let EngineEvent::TaskVerify { commands } = &env.event {
                for c in commands {
                    if !all.contains(c) {
                        all.push(c.clone());
                    }
                }
            }
        }
        all
    }
}

/// The verify commands given for this task (the CLI's `--verify`), not the workspace's own.
pub(super) fn task_verify_of(events: &[Envelope]) -> Vec<String> {
    let mut own: Vec<String> = Vec::new();
    for env in events {
        if let EngineEvent::TaskVerify { commands } = &env.event {
            own.extend(commands.iter().filter(|c| !own.contains(c)).cloned().collect::<Vec<_>>());
        }
    }
    own
}

impl Run {
    /// Runs the commands, asking first for any that is not the person's own. `plans`: a plan
    /// step's check, which the plan named (the prompt says so), not the agent.
    pub(super) async fn verify(&mut self, commands: &[String], plans: bool) -> Result<VerificationOutcome, Halt> {
        // A command that writes (a formatter, a build) changes files for this run.
        let before = self.evidence.windows.len();
        self.open_window(None).await?;
        let outcome = self.verify_in_window(commands, plans).await;
        self.close_window()?;
        // What a check writes (a lock file, a report) is not work the verdict before it did not
        // see: with nothing else changed since that verdict, it still stands (a plan's final
        // check runs the task's commands after the last step's verdict on the whole request).
        if self.evidence.verdict_at_window.is_some_and(|at| self.changed_in_windows(at, before).is_empty()) {
            self.evidence.verdict_at_window = Some(self.evidence.windows.len());
        }
        outcome
    }

    async fn verify_in_window(&mut self, commands: &[String], plans: bool) -> Result<VerificationOutcome, Halt> {
        let mut outcome = VerificationOutcome::default();
        // The review shows the latest round: what the work passes now, one entry per command.
        self.evidence.verification_log.clear();
        let of = commands.len() as u32;
        for (nth, command) in (1..).zip(commands) {
            self.emit(EngineEvent::Activity { phase: ActivityPhase::Verifying, detail: command.clone() })?;
            let persons_own = self.verify_commands.contains(command);
            // A step's own verify list is the plan's too.
            let plans = plans || self.plan_step.as_ref().is_some_and(|s| s.step.verify.contains(command));
            if !persons_own {
                let reason = if plans {
                    "The plan names this command as this step's check (“Done when”). It runs in a shell in the workspace."
                } else {
                    "The agent named this command to verify its work. It runs in a shell in the workspace."
                }
                .to_string();
                match self.permit_command("run_command", serde_json::json!({"command": command}), reason, None).await {
                    Err(Halt::Denied) => {
                        self.emit(EngineEvent::Verification {
                            command: command.clone(),
                            exit_code: None,
                            output_tail: String::new(),
                            skipped: true,
                            nth,
                            of,
                            persons_own,
                            plans,
                        })?;
                        self.evidence.verification_log.push(format!("`{command}`: skipped (declined)"));
                        outcome.skipped.push(command.clone());
                        continue;
                    }
                    Err(h) => return Err(h),
                    Ok(()) => {}
                }
            }
            let r = crate::tool::command::run_shell(
                command,
                self.workspace.root(),
                crate::tool::command::DEFAULT_TIMEOUT,
                &self.cancel,
                &self.engine.config.secret_env,
                Some(&self.engine.config.processes),
            )
            .await;
            if self.cancel.is_cancelled() {
                return Err(Halt::Cancelled);
            }
            let (code, output) = match r {
                Ok(r) => (r.exit_code, r.output),
                Err(e) => (None, format!("could not start: {e}")),
            };
            let tail: String = {
                let lines: Vec<&str> = output.lines().collect();
                lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
            };
            self.emit(EngineEvent::Verification {
                command: command.clone(),
                exit_code: code,
                output_tail: tail.clone(),
                skipped: false,
                nth,
                of,
                persons_own,
                plans,
            })?;
            self.evidence.verification_log.push(format!("`{command}`: exit {}\n{}", code.map(|c| c.to_string()).unwrap_or("none".into()), tail));
            if code != Some(0) {
                outcome.failures.push(VerificationFailure { command: command.clone(), exit_code: code, output_tail: tail });
            }
        }
        Ok(outcome)
    }
}
