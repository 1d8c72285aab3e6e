//! Lines on the agent's stdout that are no ACP message: a log line printed to stdout, or an
//! answer written broken. A line that cannot start a message (no `{` first) is set aside here,
//! so the protocol's reader never answers it with a parse error carrying the line back to the
//! agent; one that starts as a message but is broken, the reader skips. A skipped answer
//! leaves its turn looking silent until the step limit; the last such line is kept so that the
//! run can quote it then, and the person learns the agent is at fault, not a slow model. So is a
//! line the agent left without its end: a turn silent that long will not see it finished. A line
//! still growing when asked is only being written (a long message over a slow pipe): that is
//! said as such, with no blame.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, ReadBuf};

/// How much of a line is held to be read as JSON; a longer line is judged by its first and last
/// bytes alone (a file written through the client is one long, well-formed line).
const CHECKED: usize = 64 << 10;

/// How much of a stray line is quoted.
const QUOTED: usize = 200;

/// The agent's stdout with the lines that cannot be a message set aside, and the last line
/// that is no JSON object kept.
pub struct StrayLines<R> {
    inner: R,
    /// Whether the line being read goes on to the protocol's reader: `None` until its first
    /// byte that is not white space says (a `{`, as every message starts, or not).
    passing: Option<bool>,
    /// The line so far, up to [`CHECKED`] bytes.
    line: Vec<u8>,
    /// Its length, and its last byte that is not white space.
    len: usize,
    last: Option<u8>,
    stray: Stray,
}

/// What the tap kept, as the connection reads it.
#[derive(Clone, Default)]
pub struct Stray(Arc<Mutex<Kept>>);

#[derive(Default)]
struct Kept {
    /// The last ended line that was no message, until taken.
    ended: Option<String>,
    /// The line being written, quoted, while it has no end; its length, and when it last grew.
    unfinished: Option<String>,
    unfinished_len: usize,
    grew: Option<Instant>,
}

/// A line of the agent's that the protocol's reader could not take, quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrayLine {
    /// Ended, and no ACP message: skipped.
    Skipped(String),
    /// Still waiting for its line end, and not growing: left so.
    Unfinished(String),
    /// Still waiting for its line end, and still growing when asked: `bytes` so far.
    Writing { start: String, bytes: usize },
}

impl StrayLine {
    pub fn quoted(&self) -> &str {
        match self {
            StrayLine::Skipped(q) | StrayLine::Unfinished(q) | StrayLine::Writing { start: q, .. } => q,
        }
    }
}

impl Stray {
    /// The agent's latest word that the reader could not take since this was last asked: the
    /// line it left unfinished, or else the last ended line that was no message.
    /// An unfinished line that grew `within` is being written, not left.
    pub fn take(&self, within: Duration) -> Option<StrayLine> {
        self.take_at(Instant::now(), within)
    }

    /// [`Stray::take`] as of `now`.
    fn take_at(&self, now: Instant, within: Duration) -> Option<StrayLine> {
        let mut kept = self.kept();
        let ended = kept.ended.take().map(StrayLine::Skipped);
        let growing = kept.grew.is_some_and(|at| now.saturating_duration_since(at) < within);
        let bytes = kept.unfinished_len;
        let unfinished = kept.unfinished.clone().map(|start| if growing { StrayLine::Writing { start, bytes } } else { StrayLine::Unfinished(start) });
        unfinished.or(ended)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<R> StrayLines<R> {
    pub fn new(inner: R) -> (Self, Stray) {
        let stray = Stray::default();
        (StrayLines { inner, passing: None, line: Vec::new(), len: 0, last: None, stray: stray.clone() }, stray)
    }

    fn look(&mut self, bytes: &[u8]) {
        self.look_for_ends(bytes);
        // Once per read, not per byte; only the start is quoted, so only the start is read.
        let start = &self.line[..self.line.len().min(QUOTED * 4)];
        let unfinished = Some(quote(start, self.len > start.len())).filter(|q| !q.is_empty());
        let mut kept = self.stray.kept();
        // The read's last bytes went into the line unless the read ended it.
        // (An end-of-file read, of no bytes, is no growth.)
        kept.grew = (unfinished.is_some() && bytes.last().is_some_and(|b| *b != b'\n')).then(Instant::now);
        kept.unfinished = unfinished;
        kept.unfinished_len = self.len;
    }

    fn look_for_ends(&mut self, bytes: &[u8]) {
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
                self.stray.kept().ended = Some(quote(&self.line, self.len > self.line.len()));
            }
            self.line.clear();
            self.len = 0;
            self.last = None;
        }
    }

    /// Whether the line ended is empty or one JSON object, as every ACP message is.
    fn is_message(&self) -> bool {
        let text = self.line.trim_ascii();
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        if text.is_empty() {
            return true;
        }
        if !text.starts_with(b"{") || self.last != Some(b'}') {
            return false;
        }
        self.len > CHECKED || serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok()
    }
}

/// The start of a line, readable: control characters as spaces, at most [`QUOTED`] characters,
/// and "…" where it goes on (past them, or past the bytes given: `cut`).
fn quote(line: &[u8], cut: bool) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    let mut quoted: String = text.chars().take(QUOTED).map(|c| if c.is_control() { ' ' } else { c }).collect();
    if cut || text.chars().count() > QUOTED {
        quoted.push('…');
    }
    quoted
}

impl<R> StrayLines<R> {
    /// Keeps, in place, the bytes of `read` that go on to the protocol's reader, and returns how
    /// many. A line whose first byte that is not white space is no `{` (a log line, a blank
    /// line) goes no further: the reader would answer each with a parse error that hands the
    /// agent its own line back, a line the agent may not expect on its stdin. So does white space
    /// before a message, which JSON allows anyway.
    fn pass_on(&mut self, read: &mut [u8]) -> usize {
        let mut kept = 0;
        for i in 0..read.len() {
            let b = read[i];
            let pass = match self.passing {
                Some(pass) => pass,
                // A byte-order mark (EF BB BF) before a message is set aside like white space.
                None if b.is_ascii_whitespace() || matches!(b, 0xEF | 0xBB | 0xBF) => false,
                None => *self.passing.insert(b == b'{'),
            };
            if b == b'\n' {
                self.passing = None;
            }
            if pass {
                read[kept] = b;
                kept += 1;
            }
        }
        kept
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for StrayLines<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        loop {
            let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
            if !matches!(polled, Poll::Ready(Ok(()))) {
                return polled;
            }
            let read = buf.filled().len() - before;
            if read == 0 {
                return polled;
            }
            self.look(&buf.filled()[before..]);
            let kept = self.pass_on(&mut buf.filled_mut()[before..]);
            buf.set_filled(before + kept);
            // A read that was all set aside is no end of the stream: read on.
            if kept > 0 {
                return polled;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    const WITHIN: Duration = Duration::from_secs(2);

    /// A moment when a line that stopped growing now is no longer being written.
    fn later() -> Instant {
        Instant::now() + WITHIN
    }

    async fn stray_of(wire: &str) -> Option<String> {
        let (mut tap, stray) = StrayLines::new(wire.as_bytes());
        tap.read_to_string(&mut String::new()).await.unwrap();
        stray.take_at(later(), WITHIN).map(|l| l.quoted().to_owned())
    }

    async fn passed_on(wire: &[u8], read_size: usize) -> String {
        let (mut tap, _) = StrayLines::new(chunked(wire, read_size));
        let mut out = String::new();
        tap.read_to_string(&mut out).await.unwrap();
        out
    }

    /// `wire` read `size` bytes at a time, as a pipe hands it over.
    fn chunked(wire: &[u8], size: usize) -> impl AsyncRead + Unpin {
        struct Chunks(std::collections::VecDeque<Vec<u8>>);
        impl AsyncRead for Chunks {
            fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
                if let Some(mut c) = self.0.pop_front() {
                    let n = c.len().min(buf.remaining());
                    buf.put_slice(&c[..n]);
                    if n < c.len() {
                        self.0.push_front(c.split_off(n));
                    }
                }
                Poll::Ready(Ok(()))
            }
        }
        Chunks(wire.chunks(size).map(<[u8]>::to_vec).collect())
    }

    #[tokio::test]
    async fn only_lines_that_start_as_a_message_go_on_to_the_reader_however_the_reads_cut_them() {
        let wire = b"Starting server on :4096\n\n   \n  {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\x1b[32mready\x1b[0m\n{\"id\": 1, \"result\": {\"t\": \"a b\"}}\n{broken\nlog {not a message}\n";
        let want = "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n{\"id\": 1, \"result\": {\"t\": \"a b\"}}\n{broken\n";
        for size in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(passed_on(wire, size).await, want, "read {size} bytes at a time");
        }
        assert_eq!(passed_on(b"log only\nand more\n", 4).await, "", "a stream of log lines alone ends as an empty one, not cut short");
        assert_eq!(passed_on(b"\xEF\xBB\xBF{\"id\":1}\r\n", 2).await, "{\"id\":1}\r\n", "a byte-order mark before a message is set aside, the message kept");
    }

    #[tokio::test]
    async fn messages_and_blank_lines_are_no_stray_lines() {
        assert_eq!(stray_of("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n  {\"id\": 1, \"result\": {}}  \n\u{feff}{\"id\": 2}\n").await, None);
    }

    #[tokio::test]
    async fn a_log_line_or_a_broken_answer_is_kept_the_last_one_quoted() {
        let wire = "Starting server on :4096\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}\n{\"ok\":1}\n";
        assert_eq!(stray_of(wire).await.as_deref(), Some("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}"));
        assert_eq!(stray_of("{this is not json}\n").await.as_deref(), Some("{this is not json}"), "braces alone do not make JSON");
        assert_eq!(stray_of("plain\x1b[31m red\n").await.as_deref(), Some("plain [31m red"), "control characters are not passed on");
    }

    #[tokio::test]
    async fn an_answer_left_without_a_line_end_is_quoted_and_a_line_end_finishes_it() {
        let cut = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}}";
        let (mut tap, stray) = StrayLines::new(cut.as_bytes());
        tap.read_to_string(&mut String::new()).await.unwrap();
        let left = Some(StrayLine::Unfinished(cut.to_owned()));
        assert_eq!(stray.take_at(later(), WITHIN), left, "a whole message still waiting for its line end is what the agent left");
        assert_eq!(stray.take_at(later(), WITHIN), left, "still there: the line is still unfinished");

        let ended = format!("{cut}\n");
        let (mut tap, stray) = StrayLines::new(ended.as_bytes());
        tap.read_to_string(&mut String::new()).await.unwrap();
        assert_eq!(stray.take(WITHIN), None, "ended, it is a message like any other");
        assert_eq!(stray_of("log line\n{\"id\":").await.as_deref(), Some("{\"id\":"), "the unfinished line is the latest word");
    }

    #[tokio::test]
    async fn a_long_line_is_quoted_short() {
        let quoted = stray_of(&format!("{}\n", "x".repeat(5000))).await.unwrap();
        assert_eq!(quoted.chars().count(), QUOTED + 1);
        assert!(quoted.ends_with('…'));
        let wide = stray_of(&"😀".repeat(QUOTED + 50)).await.unwrap();
        assert_eq!((wide.chars().count(), wide.ends_with('…')), (QUOTED + 1, true), "four bytes a character, unfinished, it still says it goes on");
    }

    #[test]
    fn an_unfinished_line_ended_by_a_later_read_is_a_message_like_any_other() {
        let (mut tap, stray) = StrayLines::new(&b""[..]);
        tap.look(b"{\"jsonrpc\":\"2.0\",");
        assert_eq!(stray.take_at(later(), WITHIN), Some(StrayLine::Unfinished("{\"jsonrpc\":\"2.0\",".into())));
        tap.look(b"\"id\":3,\"result\":{}}\n");
        assert_eq!(stray.take(WITHIN), None, "its end came: nothing is left to quote");
        tap.look(b"not json\n{\"id\":4");
        assert_eq!(stray.take_at(later(), WITHIN), Some(StrayLine::Unfinished("{\"id\":4".into())), "the newest word is the line being written");
        tap.look(b"}\n");
        assert_eq!(stray.take(WITHIN), None, "and the skipped line before it was taken with it");
    }

    #[test]
    fn a_line_still_growing_when_asked_is_being_written_and_one_that_stopped_is_left() {
        let (mut tap, stray) = StrayLines::new(&b""[..]);
        tap.look(b"{\"jsonrpc\":\"2.0\",\"id\":3,");
        assert_eq!(stray.take(WITHIN), Some(StrayLine::Writing { start: "{\"jsonrpc\":\"2.0\",\"id\":3,".into(), bytes: 24 }), "asked as it grows");
        tap.look(b"\"result\":");
        assert_eq!(
            stray.take(WITHIN),
            Some(StrayLine::Writing { start: "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":".into(), bytes: 33 }),
            "all of it so far is counted"
        );
        assert_eq!(
            stray.take_at(later(), WITHIN),
            Some(StrayLine::Unfinished("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":".into())),
            "asked after it stopped growing, it was left"
        );
        tap.look(b"");
        assert!(
            matches!(stray.take(WITHIN), Some(StrayLine::Unfinished(_))),
            "its output ended (a read of nothing) without the line's end: left, not being written"
        );
        tap.look(b"{}}\nlog line\n");
        assert_eq!(stray.take(WITHIN), Some(StrayLine::Skipped("log line".into())), "a read that ends its lines leaves none being written");
    }
}
