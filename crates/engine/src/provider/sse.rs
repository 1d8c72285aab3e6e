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
        let mut utf8 = Utf8Check::default();
        loop {
            match tokio::time::timeout(idle, bytes.next()).await {
                Err(_) => {
                    yield Err(StreamFault::Stall(idle));
                    break;
                }
                Ok(None) => break,
                Ok(Some(Ok(b))) => match utf8.check(&b) {
                    Ok(()) => yield Ok(b),
                    Err(at) => {
                        yield Err(StreamFault::NotUtf8(at));
                        break;
                    }
                },
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
        Err(eventsource_stream::EventStreamError::Transport(StreamFault::NotUtf8(at))) => {
            Err(ProviderError::malformed(format!("The provider sent text that is not UTF-8 (byte {at} of the stream)")))
        }
        Err(eventsource_stream::EventStreamError::Utf8(e)) => Err(ProviderError::malformed(format!("The provider sent text that is not UTF-8: {e}"))),
        Err(eventsource_stream::EventStreamError::Parser(e)) => Err(ProviderError::malformed(format!("The provider sent a malformed event stream: {e}"))),
    })
}

#[derive(Debug)]
enum StreamFault {
    Stall(Duration),
    Read(String),
    /// At this byte of the stream.
    NotUtf8(u64),
}

/// Checks the stream's bytes are UTF-8 as they arrive, a character split across chunks waiting
/// for its end. The parser finds a bad byte only when the stream ends, holding everything after
/// it meanwhile: a server that went on sending (pings) froze the answer until the step limit.
#[derive(Default)]
struct Utf8Check {
    /// The start of a character the last chunk ended in the middle of.
    carried: Vec<u8>,
    /// Bytes checked so far.
    seen: u64,
}

impl Utf8Check {
    /// `Err(at)`: the stream's byte `at` is not UTF-8.
    fn check(&mut self, chunk: &[u8]) -> Result<(), u64> {
        let start = self.seen - self.carried.len() as u64;
        self.seen += chunk.len() as u64;
        // Copied only behind a character carried over: most chunks are checked where they are.
        let joined;
        let bytes = if self.carried.is_empty() {
            chunk
        } else {
            joined = [std::mem::take(&mut self.carried).as_slice(), chunk].concat();
            &joined
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            // Cut short at the end: the rest of the character is in the next chunk.
            Err(e) if e.error_len().is_none() => {
                self.carried = bytes[e.valid_up_to()..].to_vec();
                Ok(())
            }
            Err(e) => Err(start + e.valid_up_to() as u64),
        }
    }
}

impl std::fmt::Display for StreamFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamFault::Stall(d) => write!(f, "stalled for {d:?}"),
            StreamFault::Read(e) => write!(f, "{e}"),
            StreamFault::NotUtf8(at) => write!(f, "not UTF-8 at byte {at}"),
        }
    }
}
