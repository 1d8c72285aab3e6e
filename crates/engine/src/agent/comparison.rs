//! Asking the evaluator to compare a group's attempts, when the person asks for it: each attempt
//! with work to land against the one ranked below it. The question, the reading of the answer
//! and what it may change in the ranking are [`crate::judge::comparison`]'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::attempts::{last_review_files, standing, GroupRanking, Standing};
use super::{Engine, ModelEndpoint};
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::{EngineEvent, Envelope};
use crate::judge::comparison::{self, Comparison, Side};
use crate::judge::ladder::{self, Unusable};
use crate::judge::ranking::AttemptEvidence;
use crate::provider::{ProviderError, ProviderErrorKind};

/// What asking the evaluator came to: the ranking with its answers, how many pairs it was
/// asked about this time (none when each already had this model's answer) and the model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Compared {
    #[serde(flatten)]
    pub ranking: GroupRanking,
    pub asked: usize,
    pub model: String,
}

impl Engine {
    /// The judge a group's attempts had (see [`super::run::judge_of`]), read from its first
    /// attempt: the comparison is asked of the model whose reviews it weighs.
    pub(super) fn judge_of_group(&self, group: &GroupId) -> Result<ModelEndpoint> {
        let first = super::attempts::group_attempts(&self.store, group)?.swap_remove(0);
        Ok(super::run::judge_of(&self.config, &first.provider, &self.store.events(&first.id, 0)?))
    }

    /// Asks the evaluator about each pair of neighbours with work to land that has no answer
    /// from this evaluator model yet, recording each answer on both attempts before the next
    /// question, until every such pair in the ranking has one: an answer that reorders a tie
    /// makes new neighbours, and they are asked in turn. Where the rule finds the two equal, and
    /// so the answer may order them, it is asked both ways round and its preference kept only
    /// when both agree. Only once every attempt has ended and none is chosen; a choice made
    /// meanwhile stops it. The evaluator's tokens are recorded with its answer, not added to the
    /// attempts' own. Cancelled, it stops at once and returns the ranking with the answers
    /// recorded so far: a pair is recorded whole or not at all.
    pub async fn compare_attempts(self: &Arc<Self>, group: &GroupId, cancel: &CancellationToken) -> Result<Compared> {
        let endpoint = self.judge_of_group(group)?;
        let mut asked = 0;
        // Each pair is asked once at most: new reviews meanwhile cannot keep it going.
        let mut limit = None;
        loop {
            let Standing { mut ranking, answers } = standing(&self.store, group)?;
            ranking.judge = Some(endpoint.model.clone()).filter(|m| !m.is_empty());
            // Once it has answered something, a change meanwhile (an attempt chosen, sent back,
            // rejected) ends it with what it answered; before, it is refused and says why.
            let stop_here = |e: Error| if asked > 0 { Ok(Compared { ranking: ranking.clone(), asked, model: endpoint.model.clone() }) } else { Err(e) };
            if ranking.chosen.is_some() || ranking.put_away {
                return stop_here(Error::AlreadyDecided("this group's attempts are already decided".into()));
            }
            if !ranking.all_ended {
                return stop_here(Error::InvalidInput("some attempts are still running: compare them once every one has ended".into()));
            }
            // Neighbours among the attempts with work waiting: one put away on its own between
            // two of them is not in the contest.
            let with_work: Vec<&AttemptEvidence> = ranking.ranking.iter().map(|r| &r.evidence).filter(|e| e.review.is_some()).collect();
            if with_work.len() < 2 {
                return stop_here(Error::InvalidInput(format!(
                    "only {} of the {} attempts has work waiting to land: there is nothing to compare it with",
                    with_work.len(),
                    ranking.ranking.len()
                )));
            }
            let limit = *limit.get_or_insert(with_work.len() * (with_work.len() - 1) / 2);
            let answered = |a: &SessionId, b: &SessionId| answers.iter().any(|(c, model)| c.is_about(a, b) && model == &endpoint.model);
            let next = with_work.windows(2).map(|w| (w[0], w[1])).find(|(a, b)| !answered(&a.session, &b.session));
            let Some((a, b)) = next.filter(|_| asked < limit && !cancel.is_cancelled()) else {
                return Ok(Compared { ranking, asked, model: endpoint.model.clone() });
            };
            let (first, second) = (side(a, &self.store.events(&a.session, 0)?), side(b, &self.store.events(&b.session, 0)?));
            let tied = crate::judge::ranking::equal_by_rule(a, b);
            let mut tokens = 0;
            let asked_both = async {
                let Some(mut c) = self.ask_pair(&endpoint, &ranking.task, (a, &first), (b, &second), cancel, &mut tokens).await? else {
                    return Ok(None);
                };
                if tied {
                    let Some(backward) = self.ask_pair(&endpoint, &ranking.task, (b, &second), (a, &first), cancel, &mut tokens).await? else {
                        return Ok(None);
                    };
                    c = comparison::agree(c, &backward);
                }
                Ok::<_, Error>(Some(c))
            };
            let outcome = asked_both.await;
            // What the evaluator was paid for is counted, though it gave nothing usable (one
            // answer of two, then stopped or failed).
            if tokens > 0 && !matches!(outcome, Ok(Some(_))) {
                let error = outcome.as_ref().err().map_or_else(|| "stopped before it answered".to_string(), |e| e.to_string());
                let event = EngineEvent::ComparisonFailed { first: a.session.clone(), second: b.session.clone(), model: endpoint.model.clone(), tokens, error };
                self.store.append(&a.session, None, event)?;
            }
            let Some(c) = outcome? else { continue };
            for session in [&a.session, &b.session] {
                let event = EngineEvent::AttemptsCompared {
                    first: c.first.clone(),
                    second: c.second.clone(),
                    prefers: c.prefers.clone(),
                    reason: c.reason.clone(),
                    disagreed: c.disagreed,
                    model: endpoint.model.clone(),
                    tokens,
                    first_review: a.review.clone(),
                    second_review: b.review.clone(),
                };
                self.store.append(session, None, event)?;
            }
            asked += 1;
        }
    }

    /// One question about two attempts, `first` shown first: the answer, or `None` once
    /// cancelled. The tokens it took are added to `tokens`, an answer or not.
    async fn ask_pair(
        &self,
        endpoint: &ModelEndpoint,
        task: &str,
        (a, first): (&AttemptEvidence, &Side),
        (b, second): (&AttemptEvidence, &Side),
        cancel: &CancellationToken,
        tokens: &mut u64,
    ) -> Result<Option<Comparison>> {
        let build = |mode| comparison::build_request(&endpoint.model, task, first, second, mode);
        let answer = ladder::ask(endpoint.provider.clone(), build, comparison::parse_opinion, self.config.retry, std::sync::Arc::new(|_| {}), cancel).await;
        let usage = match &answer {
            Ok(a) => a.usage,
            Err(stopped) => stopped.usage,
        };
        *tokens += usage.input_tokens + usage.output_tokens;
        let Ok(answer) = answer else { return Ok(None) };
        let opinion = answer.value.map_err(|why| {
            let (kind, what, next) = match &why {
                // The provider's own words say what failed (refused, cut off, not reached).
                Unusable::Unreachable(said) => {
                    (ProviderErrorKind::Network, said.trim().trim_end_matches('.').to_string(), "Check the evaluator's provider in Settings, then ask again")
                }
                _ => (
                    ProviderErrorKind::Api,
                    sentence(&why.describe()),
                    "A stronger evaluator model (Settings → Evaluator) may answer; the ranking by the rule stands",
                ),
            };
            Error::Provider(ProviderError::new(kind, format!("The evaluator could not compare {} with {}. {what}. {next}.", a.label, b.label)))
        })?;
        Ok(Some(comparison::record(&a.session, &b.session, opinion)))
    }
}

/// `text` with a capital first letter, to stand as a sentence of its own.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
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

/// The comparisons recorded in the group's attempts that judged the reviews in `judged` (each
/// attempt's: while the group is undecided, the one waiting for the person), with the model
/// that answered: once a review is decided on its own (the attempt sent back, rejected) or a new
/// one is asked for, an answer about it is stale.
pub(super) fn fresh_comparisons(events: &BTreeMap<SessionId, Vec<Envelope>>, judged: &BTreeMap<SessionId, RequestId>) -> Vec<(Comparison, String)> {
    let holds = |s: &SessionId, review: &Option<RequestId>| review.as_ref().is_some_and(|r| judged.get(s) == Some(r));
    let mut recorded: Vec<&Envelope> = events
        .values()
        .flatten()
        // Recorded on both attempts: read once, from the first's.
        .filter(|e| matches!(&e.event, EngineEvent::AttemptsCompared { first, .. } if first == &e.session_id))
        .collect();
    // Oldest first: where two answers are about one pair (another model's, asked since), the
    // newest counts.
    recorded.sort_by(|x, y| x.at.cmp(&y.at).then(x.seq.cmp(&y.seq)));
    recorded
        .into_iter()
        .filter_map(|e| match &e.event {
            EngineEvent::AttemptsCompared { first, second, prefers, reason, disagreed, model, first_review, second_review, .. }
                if holds(first, first_review) && holds(second, second_review) =>
            {
                let c = Comparison {
                    first: first.clone(),
                    second: second.clone(),
                    prefers: prefers.clone(),
                    reason: reason.clone(),
                    disagreed: *disagreed,
                    model: model.clone(),
                };
                Some((c, model.clone()))
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
            EngineEvent::AttemptsCompared { first, tokens, .. } | EngineEvent::ComparisonFailed { first, tokens, .. } if first == &e.session_id => *tokens,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(on: &str, at: &str, first: &str, second: &str, prefers: &str, model: &str) -> Envelope {
        Envelope {
            seq: 1,
            session_id: SessionId(on.into()),
            run_id: None,
            at: at.into(),
            event: EngineEvent::AttemptsCompared {
                first: SessionId(first.into()),
                second: SessionId(second.into()),
                prefers: Some(SessionId(prefers.into())),
                reason: format!("{model} says so"),
                disagreed: false,
                model: model.into(),
                tokens: 10,
                first_review: Some(RequestId(format!("r-{first}"))),
                second_review: Some(RequestId(format!("r-{second}"))),
            },
        }
    }

    /// Two models answered about one pair, asked in opposite orders, so each answer is read from
    /// a different attempt's events: the newer one comes last, to be the one that counts.
    #[test]
    fn of_two_answers_about_one_pair_the_newer_counts_whichever_attempt_holds_it() {
        let newer = answer("a", "2026-11-27T10:00:00.000Z", "a", "b", "a", "judge-b");
        let older = answer("b", "2026-11-27T09:00:00.000Z", "b", "a", "b", "judge-a");
        let events = BTreeMap::from([(SessionId("a".into()), vec![newer]), (SessionId("b".into()), vec![older])]);
        let judged = BTreeMap::from([(SessionId("a".into()), RequestId("r-a".into())), (SessionId("b".into()), RequestId("r-b".into()))]);
        let models: Vec<String> = fresh_comparisons(&events, &judged).into_iter().map(|(_, m)| m).collect();
        assert_eq!(models, vec!["judge-a", "judge-b"], "oldest first, so the newest is the last word");
    }
}
