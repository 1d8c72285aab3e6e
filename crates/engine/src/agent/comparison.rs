//! Asking the evaluator to compare a group's attempts, when the person asks for it: each attempt
//! with work to land against the one ranked below it. The question, the reading of the answer
//! and what it may change in the ranking are [`crate::judge::comparison`]'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::attempts::{last_review_files, GroupRanking};
use super::{Engine, ModelEndpoint};
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
    /// ranking with the answers. Where the rule finds the two equal, and so the answer may order
    /// them, it is asked both ways round and its preference kept only when both agree. Only once
    /// every attempt has ended and none is chosen. The evaluator's tokens are recorded with its
    /// answer, not added to the attempts' own.
    pub async fn compare_attempts(self: &Arc<Self>, group: &GroupId) -> Result<GroupRanking> {
        let ranked = self.rank_group(group)?;
        if ranked.chosen.is_some() || ranked.put_away {
            return Err(Error::AlreadyDecided("this group's attempts are already decided".into()));
        }
        if !ranked.all_ended {
            return Err(Error::InvalidInput("some attempts are still running: compare them once every one has ended".into()));
        }
        let with_work: Vec<&AttemptEvidence> = ranked.ranking.iter().map(|r| &r.evidence).filter(|e| e.review.is_some()).collect();
        if with_work.len() < 2 {
            return Err(Error::InvalidInput(format!(
                "only {} of the {} attempts has work waiting to land: there is nothing to compare it with",
                with_work.len(),
                ranked.ranking.len()
            )));
        }
        let endpoint = self.config.evaluator.clone().unwrap_or_else(|| self.config.agent.clone());
        for pair in with_work.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (first, second) = (side(a, &self.store.events(&a.session, 0)?), side(b, &self.store.events(&b.session, 0)?));
            let tied = crate::judge::ranking::equal_by_rule(a, b);
            let (mut c, mut tokens) = self.ask_pair(&endpoint, &ranked.task, (a, &first), (b, &second)).await?;
            if tied {
                let (backward, more) = self.ask_pair(&endpoint, &ranked.task, (b, &second), (a, &first)).await?;
                c = comparison::agree(c, &backward);
                tokens += more;
            }
            for session in [&a.session, &b.session] {
                let event = EngineEvent::AttemptsCompared {
                    first: c.first.clone(),
                    second: c.second.clone(),
                    prefers: c.prefers.clone(),
                    reason: c.reason.clone(),
                    model: endpoint.model.clone(),
                    tokens,
                    first_review: a.review.clone(),
                    second_review: b.review.clone(),
                };
                self.store.append(session, None, event)?;
            }
        }
        self.rank_group(group)
    }

    /// One question about two attempts, `first` shown first; the answer and the tokens it took.
    async fn ask_pair(
        &self,
        endpoint: &ModelEndpoint,
        task: &str,
        (a, first): (&AttemptEvidence, &Side),
        (b, second): (&AttemptEvidence, &Side),
    ) -> Result<(Comparison, u64)> {
        let build = |mode| comparison::build_request(&endpoint.model, task, first, second, mode);
        let cancel = CancellationToken::new();
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
        Ok((comparison::record(&a.session, &b.session, opinion), answer.usage.input_tokens + answer.usage.output_tokens))
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

/// The session's last review, which a comparison must have judged to still hold.
pub(super) fn last_review(events: &[Envelope]) -> Option<RequestId> {
    events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { review_id, .. } => Some(review_id.clone()),
        _ => None,
    })
}

/// The comparisons recorded in the group's attempts that judged each attempt's last review: a
/// review since (the attempt sent back and reviewed again, even while the evaluator was being
/// asked) makes one stale.
pub(super) fn fresh_comparisons(events: &BTreeMap<SessionId, Vec<Envelope>>) -> Vec<Comparison> {
    let last: BTreeMap<&SessionId, Option<RequestId>> = events.iter().map(|(s, ev)| (s, last_review(ev))).collect();
    let holds = |s: &SessionId, review: &Option<RequestId>| review.is_some() && last.get(s).is_some_and(|l| l == review);
    events
        .values()
        .flatten()
        .filter_map(|e| match &e.event {
            EngineEvent::AttemptsCompared { first, second, prefers, reason, first_review, second_review, .. }
                if holds(first, first_review) && holds(second, second_review) =>
            {
                Some(Comparison { first: first.clone(), second: second.clone(), prefers: prefers.clone(), reason: reason.clone() })
            }
            _ => None,
        })
        .collect()
}

/// The tokens every answer took, each counted once though recorded on both attempts.
pub(super) fn spent_on_comparisons(events: &BTreeMap<SessionId, Vec<Envelope>>) -> u64 {
    events
        .values()
        .flatten()
        .map(|e| match &e.event {
            EngineEvent::AttemptsCompared { first, tokens, .. } if first == &e.session_id => *tokens,
            _ => 0,
        })
        .sum()
}
