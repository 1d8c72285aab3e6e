//! Reads the agent's `authMethods` as it sent them. The SDK's typed `initialize` answer knows
//! only the stable kinds (`agent`, `terminal`) and reads any other as `agent`, dropping what
//! made it different (an `env_var` method's variables): so the raw line is read on the way in.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// The agent's stdout, passed through untouched, with the first `authMethods` kept aside.
pub struct AuthTap<R> {
    inner: R,
    line: Vec<u8>,
    found: Arc<Mutex<Option<Value>>>,
    done: bool,
}

/// The longest line looked at; an `initialize` answer is a few kilobytes.
const MAX_LINE: usize = 1 << 20;

impl<R> AuthTap<R> {
    pub fn new(inner: R) -> (Self, Arc<Mutex<Option<Value>>>) {
        let found = Arc::new(Mutex::new(None));
        (AuthTap { inner, line: Vec::new(), found: found.clone(), done: false }, found)
    }

    fn look(&mut self, bytes: &[u8]) {
        for b in bytes {
            if *b != b'\n' {
                if self.line.len() < MAX_LINE {
                    self.line.push(*b);
                }
                continue;
            }
            let line = std::mem::take(&mut self.line);
            if let Some(methods) = serde_json::from_slice::<Value>(&line).ok().and_then(|v| v.pointer("/result/authMethods").cloned()) {
                *self.found.lock().unwrap_or_else(|p| p.into_inner()) = Some(methods);
                self.done = true;
                return;
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for AuthTap<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && !self.done {
            let new = buf.filled()[before..].to_vec();
            self.look(&new);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_auth_methods_are_kept_as_sent_and_the_bytes_pass_untouched() {
        let wire = "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"authMethods\":[{\"id\":\"k\",\"type\":\"env_var\",\"vars\":[{\"name\":\"K\"}]}]}}\nrest\n";
        let (mut tap, found) = AuthTap::new(wire.as_bytes());
        let mut out = String::new();
        tap.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, wire);
        assert_eq!(found.lock().unwrap().as_ref().unwrap()[0]["vars"][0]["name"], "K");
    }
}
