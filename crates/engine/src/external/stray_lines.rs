//! Lines on the agent's stdout that are no ACP message: a log line printed to stdout, or an
//! answer written broken. The protocol's reader skips them, as it should, but a skipped answer
//! leaves its turn looking silent until the step limit; the last such line is kept so that the
//! run can quote it then, and the person learns the agent is at fault, not a slow model.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// How much of a line is held to be read as JSON; a longer line is judged by its first and last
/// bytes alone (a file written through the client is one long, well-formed line).
const CHECKED: usize = 64 << 10;

/// How much of a stray line is quoted.
const QUOTED: usize = 200;

/// The agent's stdout, passed through untouched, with the last line that is no JSON object kept.
pub struct StrayLines<R> {
    inner: R,
    /// The line so far, up to [`CHECKED`] bytes.
    line: Vec<u8>,
    /// Its length, and its last byte that is not white space.
    len: usize,
    last: Option<u8>,
    stray: Arc<Mutex<Option<String>>>,
}

impl<R> StrayLines<R> {
    pub fn new(inner: R) -> (Self, Arc<Mutex<Option<String>>>) {
        let stray = Arc::new(Mutex::new(None));
        (StrayLines { inner, line: Vec::new(), len: 0, last: None, stray: stray.clone() }, stray)
    }

    fn look(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b != b'\n' {
                if self.line.len() < CHECKED {
                    self.line.push(b);
                }
                self.len += 1;
                if !b.is_ascii_whitespace() {
                    self.last = Some(b);
                }
                continue;
            }
            if !self.is_message() {
                *self.stray.lock().unwrap_or_else(|p| p.into_inner()) = Some(quote(&self.line));
            }
            self.line.clear();
            self.len = 0;
            self.last = None;
        }
    }

    /// Whether the line ended is empty or one JSON object, as every ACP message is.
    fn is_message(&self) -> bool {
        let text = self.line.trim_ascii();
        if text.is_empty() {
            return true;
        }
        if !text.starts_with(b"{") || self.last != Some(b'}') {
            return false;
        }
        self.len > CHECKED || serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok()
    }
}

/// The start of a line, readable: control characters as spaces, at most [`QUOTED`] characters.
fn quote(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    let mut quoted: String = text.chars().take(QUOTED).map(|c| if c.is_control() { ' ' } else { c }).collect();
    if text.chars().count() > QUOTED {
        quoted.push('…');
    }
    quoted
}

impl<R: AsyncRead + Unpin> AsyncRead for StrayLines<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) {
            self.look(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn stray_of(wire: &str) -> Option<String> {
        let (mut tap, stray) = StrayLines::new(wire.as_bytes());
        let mut out = String::new();
        tap.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, wire, "the bytes pass untouched");
        let kept = stray.lock().unwrap().clone();
        kept
    }

    #[tokio::test]
    async fn messages_and_blank_lines_are_no_stray_lines() {
        assert_eq!(stray_of("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n  {\"id\": 1, \"result\": {}}  \n").await, None);
    }

    #[tokio::test]
    async fn a_log_line_or_a_broken_answer_is_kept_the_last_one_quoted() {
        let wire = "Starting server on :4096\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}\n{\"ok\":1}\n";
        assert_eq!(stray_of(wire).await.as_deref(), Some("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}"));
        assert_eq!(stray_of("{this is not json}\n").await.as_deref(), Some("{this is not json}"), "braces alone do not make JSON");
        assert_eq!(stray_of("plain\x1b[31m red\n").await.as_deref(), Some("plain [31m red"), "control characters are not passed on");
    }

    #[tokio::test]
    async fn a_long_line_is_quoted_short() {
        let quoted = stray_of(&format!("{}\n", "x".repeat(5000))).await.unwrap();
        assert_eq!(quoted.chars().count(), QUOTED + 1);
        assert!(quoted.ends_with('…'));
    }
}
