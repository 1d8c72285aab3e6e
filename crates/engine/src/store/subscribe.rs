//! Subscriptions: replay from the store, then follow live, with no gap and no duplicate across
//! the switch, even when the subscription starts in the middle of a fast stream.

use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::Store;
use crate::domain::SessionId;
use crate::error::Result;
use crate::event::Envelope;

/// How often a subscription reads back what other processes appended.
const ELSEWHERE_LOOK: std::time::Duration = std::time::Duration::from_millis(300);

impl Store {
    /// Every event of `session` with `seq > after_seq`, in order, then live ones as they are
    /// committed. The live channel is joined before the store is read, so an event committed in
    /// between is seen twice and dropped once by `seq`, never missed. If the live channel falls
    /// behind, the missing range is read back from the store.
    pub fn subscribe(self: &std::sync::Arc<Self>, session: SessionId, after_seq: u64) -> impl Stream<Item = Result<Envelope>> + Send + 'static {
        let store = self.clone();
        async_stream::stream! {
            let mut rx = store.live_receiver();
            let mut last = after_seq;
            match store.events_range(&session, last, None) {
                Ok(batch) => for e in batch { last = e.seq; yield Ok(e) },
                Err(e) => { yield Err(e); return; }
            }
            // Another process's events (a task run in a terminal, opened in the window) are not
            // broadcast here: they are read back from the history every so often. One of this
            // process's read so before its broadcast arrives is not delivered twice (`seq`).
            let mut look = tokio::time::interval(ELSEWHERE_LOOK);
            look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let got = tokio::select! {
                    got = rx.recv() => got,
                    _ = look.tick() => {
                        match store.events_range(&session, last, None) {
                            Ok(batch) => for e in batch { last = e.seq; yield Ok(e) },
                            Err(e) => { yield Err(e); return; }
                        }
                        continue;
                    }
                };
                match got {
                    Ok(env) => {
                        if env.session_id != session || env.seq <= last {
                            continue;
                        }
                        if env.seq > last + 1 {
                            // Missed live events (the channel dropped them): read them back.
                            match store.events_range(&session, last, Some(env.seq - 1)) {
                                Ok(batch) => for e in batch { yield Ok(e) },
                                Err(e) => { yield Err(e); return; }
                            }
                        }
                        last = env.seq;
                        yield Ok(env);
                    }
                    Err(RecvError::Lagged(_)) => match store.events_range(&session, last, None) {
                        Ok(batch) => for e in batch { last = e.seq; yield Ok(e) },
                        Err(e) => { yield Err(e); return; }
                    },
                    Err(RecvError::Closed) => break,
                }
            }
        }
    }
}
