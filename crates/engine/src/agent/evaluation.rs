//! The evaluator's input, assembled from the run: the request and every feedback message, the
//! todos, the files changed, verification, and a bounded digest of the transcript in which the
//! person's words, Finishline's reminders and the agent's actions are labelled apart.

use super::run::{Halt, Run};
use crate::domain::*;
use crate::event::EngineEvent;
use crate::judge::completion::{EvaluationOutcome, EvaluationQuestion};
use crate::judge::evaluator::{self, EvaluatorInput};
use crate::provider::ChatMessage;
use crate::workspace::checkpoint::ChangeKind;

/// One line per message, labelled by who wrote it. Reminders and summaries are Finishline's, not
/// the person's, and say so.
pub fn transcript_lines(history: &[ChatMessage]) -> Vec<String> {
    let mut lines = Vec::new();
    for m in history {
        match m {
            ChatMessage::User { content } if content.starts_with("<system-reminder") => lines.push(format!("FINISHLINE REMINDER: {content}")),
            ChatMessage::User { content } if content.starts_with("<summary>") => lines.push(format!("SUMMARY OF EARLIER TURNS: {content}")),
            ChatMessage::User { content } => lines.push(format!("PERSON: {content}")),
            ChatMessage::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    lines.push(format!("AGENT: {text}"));
                }
                for c in tool_calls {
                    lines.push(format!("AGENT CALLED {}({})", c.name, crate::provider::openai::arguments_text(&c.input)));
                }
            }
            ChatMessage::Tool { name, content, is_error, .. } => {
                lines.push(format!("TOOL {name} {}: {content}", if *is_error { "FAILED" } else { "returned" }))
            }
        }
    }
    lines
}

impl Run {
    pub(super) async fn evaluate(&mut self, question: EvaluationQuestion) -> Result<EvaluationOutcome, Halt> {
        self.evidence.cycle += 1;
        let cycle = self.evidence.cycle;
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Evaluating, detail: String::new() })?;
        let endpoint = self.evaluator.clone();
        let feedback: Vec<String> = self
            .engine
            .store
            .events(&self.session, 0)?
            .into_iter()
            .filter_map(|e| match e.event {
                EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t != self.task => Some(t),
                _ => None,
            })
            .collect();
        // A plan step is judged on its own changes; anything else on what the person will review,
        // the last step too: its verdict is the one on the whole request.
        let whole = self.judges_whole();
        let changes = if whole { self.changes() } else { self.own_changes() };
        let audit: Vec<String> = self.audit(whole).iter().map(|f| f.describe()).collect();
        let files: Vec<String> = changes
            .into_iter()
            .map(|c| {
                format!(
                    "{} {}",
                    match c.kind {
                        ChangeKind::Created => "created",
                        ChangeKind::Modified => "modified",
                        ChangeKind::Deleted => "deleted",
                    },
                    c.path
                )
            })
            .collect();
        let input = EvaluatorInput {
            task: self.judged_task(),
            feedback,
            todos: self.todos.clone(),
            files_changed: files,
            verification: self.evidence.verification_log.clone(),
            transcript_digest: evaluator::digest(&transcript_lines(&self.history)),
            question: Some(question),
            instructions: self.instructions.as_ref().map(|i| (i.file.clone(), i.text.clone())),
            // The last step has no later steps to feed.
            plan_step: !self.judges_whole(),
            audit,
            criteria: if self.judges_whole() { self.criteria.iter().map(|c| c.criterion()).collect() } else { vec![] },
        };
        // Its retries are said while they happen, as the agent's are: "evaluating" alone for
        // minutes read as hung.
        let (store, session, run) = (self.engine.store.clone(), self.session.clone(), self.run.clone());
        let on_retry: crate::provider::OnRetry = std::sync::Arc::new(move |w: &crate::provider::RetryWait| {
            let detail = format!("again ({} of {}): {}", w.attempt, w.max_retries, w.error.message);
            let _ = store.append(&session, Some(&run), EngineEvent::Activity { phase: ActivityPhase::Evaluating, detail });
        });
        // Bounded by the step limit, as an agent's answer is: a server that takes the connection
        // and never answers is otherwise waited for through every retry.
        let limit = self.engine.config.step_limit;
        let asked = evaluator::evaluate(endpoint.provider.clone(), &endpoint.model, &input, self.engine.config.retry, on_retry, &self.cancel);
        let result = tokio::time::timeout(limit, asked).await.unwrap_or_else(|_| Some(evaluator::EvaluatorResult::over_limit(limit)));
        let Some(r) = result else { return Err(Halt::Cancelled) };
        if self.cancel.is_cancelled() {
            // A verdict that arrives after cancel belongs to nobody.
            return Err(Halt::Cancelled);
        }
        // A done that leaves one of the person's comments open is read as not done, here, before
        // anything uses it; the checklist settles on what the evaluator itself said.
        let said = r.outcome.clone();
        let outcome = match question {
            EvaluationQuestion::Done => crate::judge::criteria::cautious(r.outcome, &input.criteria),
            EvaluationQuestion::AnnouncedAction => r.outcome,
        };
        // The narrow conversation question is not a verdict on the task: it is shown as what it
        // was, and never as "Evaluator: done".
        if question == EvaluationQuestion::Done {
            // The last step's evaluation judged the whole request too (see `judged_task`).
            if self.plan_step.as_ref().is_some_and(|s| s.last) && !self.judge_whole && outcome.verdict == Verdict::Done {
                self.evidence.whole_judged = true;
            }
            self.evidence.last_verdict = Some(outcome.verdict);
            self.evidence.verdict_at_window = Some(self.evidence.windows.len());
            self.evidence.last_verdict_on_step = self.plan_step.as_ref().filter(|s| !self.judge_whole && !s.last).map(super::plan_run::StepRun::label);
            self.evidence.last_verdict_summary = Some(outcome.summary.clone()).filter(|s| !s.trim().is_empty());
            self.evidence.last_verdict_output_data = outcome.output_data.clone();
        }
        self.emit(EngineEvent::Evaluation {
            cycle,
            verdict: outcome.verdict,
            summary: outcome.summary.clone(),
            remaining: outcome.remaining.clone(),
            stuck_reason: outcome.stuck_reason.clone(),
            model: endpoint.model.clone(),
            parse_ok: r.parse_ok,
            usage: r.usage,
            question,
            repairs: r.calls.saturating_sub(1),
        })?;
        if question == EvaluationQuestion::Done && self.judges_whole() {
            let done = match said.verdict {
                Verdict::Done => Some(true),
                Verdict::NotDone | Verdict::Stuck => Some(false),
                Verdict::Unavailable => None,
            };
            self.check_criteria(done, &said.remaining, &said.comments)?;
        }
        Ok(outcome)
    }
}
