//! Server-sent events over a byte stream, with an idle timeout. Parsing is eventsource-stream's
//! (spec-following, safe across chunk splits in lines and in UTF-8 characters); this module adds
//! the stall detection and our error kinds.

use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};

use super::error::{ProviderError, ProviderErrorKind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty means the default `message`.
    pub event: String,
    pub data: String,
}

/// Bytes in, SSE events out. A read error mid-stream is `Network`; no byte for `idle` is `Stall`.
pub fn sse_events<S, E>(bytes: S, idle: Duration) -> impl Stream<Item = Result<SseEvent, ProviderError>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let guarded = async_stream::stream! {
        let mut bytes = bytes;
        loop {
            match tokio::time::timeout(idle, bytes.next()).await {
                Err(_) => {
                    yield Err(StreamFault::Stall(idle));
                    break;
                }
                Ok(None) => break,
                Ok(Some(Ok(b))) => yield Ok(b),
                Ok(Some(Err(e))) => {
                    yield Err(StreamFault::Read(e.to_string()));
                    break;
                }
            }
        }
    };
    Box::pin(guarded).eventsource().map(|item| match item {
        Ok(ev) => Ok(SseEvent { event: if ev.event == "message" { String::new() } else { ev.event }, data: ev.data }),
        Err(eventsource_stream::EventStreamError::Transport(StreamFault::Stall(d))) => {
            Err(ProviderError::new(ProviderErrorKind::Stall, format!("The provider sent nothing for {} s; the stream stalled.", d.as_secs_f32())))
        }
        Err(eventsource_stream::EventStreamError::Transport(StreamFault::Read(e))) => {
            Err(ProviderError::new(ProviderErrorKind::Network, format!("The connection to the provider broke mid-stream: {e}")))
        }
        Err(eventsource_stream::EventStreamError::Utf8(e)) => Err(ProviderError::malformed(format!("The provider sent text that is not UTF-8: {e}"))),
        Err(eventsource_stream::EventStreamError::Parser(e)) => Err(ProviderError::malformed(format!("The provider sent a malformed event stream: {e}"))),
    })
}

#[derive(Debug)]
enum StreamFault {
    Stall(Duration),
    Read(String),
}

impl std::fmt::Display for StreamFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamFault::Stall(d) => write!(f, "stalled for {d:?}"),
            StreamFault::Read(e) => write!(f, "{e}"),
        }
    }
}
