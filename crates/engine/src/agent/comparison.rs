//! Asking the evaluator to compare a group's attempts, when the person asks for it: each attempt
//! with work to land against the one ranked below it. The question, the reading of the answer
//! and what it may change in the ranking are [`crate::judge::comparison`]'s.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::attempts::{last_review_files, GroupRanking};
use super::Engine;
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::{EngineEvent, Envelope};
use crate::judge::comparison::{self, Comparison, Side};
use crate::judge::ladder::{self, Unusable};
use crate::judge::ranking::AttemptEvidence;
use crate::provider::{ProviderError, ProviderErrorKind};

impl Engine {
    /// Asks the evaluator about each attempt with work to land and the one ranked below it,
    /// records each answer on both attempts before going on to the next pair, and returns the
    /// ranking with the answers. Only once every attempt has ended and none is chosen. The
    /// evaluator's tokens are recorded with its answer, not added to the attempts' own.
    pub async fn compare_attempts(self: &Arc<Self>, group: &GroupId) -> Result<GroupRanking> {
        let ranked = self.rank_group(group)?;
        if ranked.chosen.is_some() || ranked.put_away {
            return Err(Error::AlreadyDecided("this group's attempts are already decided".into()));
        }
        if !ranked.all_ended {
            return Err(Error::InvalidInput("some attempts are still running: compare them once every one has ended".into()));
        }
        let with_work: Vec<&AttemptEvidence> = ranked.ranking.iter().map(|r| &r.evidence).filter(|e| e.reviewed).collect();
        if with_work.len() < 2 {
            return Err(Error::InvalidInput(format!(
                "only {} of the {} attempts has work to compare (the others ended without a review): there is nothing to compare it with",
                with_work.len(),
                ranked.ranking.len()
            )));
        }
        let endpoint = self.config.evaluator.clone().unwrap_or_else(|| self.config.agent.clone());
        let cancel = CancellationToken::new();
        for pair in with_work.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (first, second) = (side(a, &self.store.events(&a.session, 0)?), side(b, &self.store.events(&b.session, 0)?));
            let build = |mode| comparison::build_request(&endpoint.model, &ranked.task, &first, &second, mode);
            let Some(answer) = ladder::ask(endpoint.provider.clone(), build, comparison::parse_opinion, self.config.retry, &cancel).await else {
                return Err(Error::Internal("the comparison was cancelled".into()));
            };
            let opinion = answer.value.map_err(|why| {
                let (kind, next) = match why {
                    Unusable::Unreachable(_) => (ProviderErrorKind::Network, "Check the evaluator's provider in Settings, then ask again"),
                    _ => (ProviderErrorKind::Api, "A stronger evaluator model (Settings → Evaluator) may answer; the ranking by the rule stands"),
                };
                Error::Provider(ProviderError::new(kind, format!("The evaluator could not compare {} and {}: {}. {next}.", a.label, b.label, why.describe())))
            })?;
            let c = comparison::record(&a.session, &b.session, opinion);
            let tokens = answer.usage.input_tokens + answer.usage.output_tokens;
            for session in [&a.session, &b.session] {
                let event = EngineEvent::AttemptsCompared {
                    first: c.first.clone(),
                    second: c.second.clone(),
                    prefers: c.prefers.clone(),
                    reason: c.reason.clone(),
                    model: endpoint.model.clone(),
                    tokens,
                };
                self.store.append(session, None, event)?;
            }
        }
        self.rank_group(group)
    }
}

/// The attempt as the evaluator sees it: its evidence in a line and its last review's diff.
fn side(e: &AttemptEvidence, events: &[Envelope]) -> Side {
    let left = if e.evaluated { format!("items the evaluator found left {}", e.remaining) } else { "not judged by the evaluator".into() };
    let evidence = format!(
        "ended {} · audit findings {} · verification commands passing {} of {} · {left} · {} file(s), {} line(s) changed",
        e.end_reason.map(|r| r.as_str()).unwrap_or("without a review"),
        e.findings,
        e.checks_passed,
        e.checks_run,
        e.files,
        e.diff_lines
    );
    let diff = last_review_files(events)
        .unwrap_or_default()
        .iter()
        .map(|f| if f.diff.is_empty() { format!("{} ({:?}, no text diff)\n", f.path, f.kind) } else { f.diff.clone() })
        .collect::<Vec<_>>()
        .join("\n");
    Side { evidence, diff }
}

/// The comparisons that still hold for a session: those recorded since its last review.
pub(super) fn fresh_comparisons(events: &[Envelope]) -> Vec<Comparison> {
    let since = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewRequested { .. })).map(|i| i + 1).unwrap_or(0);
    events[since..]
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::AttemptsCompared { first, second, prefers, reason, .. } => {
                Some(Comparison { first: first.clone(), second: second.clone(), prefers: prefers.clone(), reason: reason.clone() })
            }
            _ => None,
        })
        .collect()
}
