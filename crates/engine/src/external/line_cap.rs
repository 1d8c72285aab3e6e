//! A bound on one message from an agent. The ACP transport reads the agent's stdout a line at a
//! time and holds a line whole until it ends: a line that never ends (a runaway dump, a binary
//! written to stdout by mistake) would grow in memory until the app or the CLI was killed.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest line an agent may send: far beyond any message (a whole file written through
/// the client is one), far below what would hurt the machine.
pub const MAX_LINE: usize = 64 << 20;

/// The agent's stdout, passed through untouched until a line passes [`MAX_LINE`]; then the next
/// read fails, and why is kept for the run to say.
pub struct LineCap<R> {
    inner: R,
    since_break: usize,
    limit: usize,
    why: Arc<Mutex<Option<String>>>,
}

impl<R> LineCap<R> {
    pub fn new(inner: R, limit: usize) -> (Self, Arc<Mutex<Option<String>>>) {
        let why = Arc::new(Mutex::new(None));
        (LineCap { inner, since_break: 0, limit, why: why.clone() }, why)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        // Past the limit the read after fails: a read that fails must have read nothing.
        if let Some(why) = self.why.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why)));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let new = &buf.filled()[before..];
            let since = match new.iter().rposition(|b| *b == b'\n') {
                Some(at) => new.len() - at - 1,
                None => self.since_break + new.len(),
            };
            self.since_break = since;
            if since > self.limit {
                let why = format!("the agent sent a message of more than {} MB without an end, so it was stopped", self.limit >> 20);
                *self.why.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_within_the_limit_pass_untouched_and_one_past_it_fails_the_read_with_why() {
        let wire = b"{\"a\":1}\n0123456789\n".to_vec();
        let (mut cap, why) = LineCap::new(&wire[..], 10);
        let mut out = Vec::new();
        cap.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, wire);
        assert!(why.lock().unwrap().is_none());

        let (mut cap, why) = LineCap::new(&b"ok\n0123456789A"[..], 10);
        let e = cap.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(why.lock().unwrap().as_deref().is_some_and(|w| w.contains("without an end")));
    }
}
