//! What the person types at the terminal. One thread reads it, line by line, for the life of the
//! process, so a question can wait for its answer and still notice what happens meanwhile (the
//! review decided from another terminal or the window) instead of blocking on the input. Every
//! read of the input goes through here: a second reader would take lines meant for this one.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Lines as typed, trimmed; the channel ends once the input is closed (Ctrl+D) or unreadable.
fn lines() -> &'static Mutex<Receiver<String>> {
    static LINES: OnceLock<Mutex<Receiver<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut input = std::io::stdin().lock();
            loop {
                let mut s = String::new();
                match input.read_line(&mut s) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(s.trim().to_string()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Mutex::new(rx)
    })
}

/// The next line typed (empty when only Enter was pressed); `None` once the input is closed.
pub fn line() -> Option<String> {
    lines().lock().unwrap_or_else(|p| p.into_inner()).recv().ok()
}

/// What came of waiting for a line.
pub enum Typed {
    Line(String),
    /// The input is closed.
    Closed,
    /// `stop` said to give up waiting.
    Stopped,
}

/// The next line typed, unless `stop` says first (it is asked five times a second) that the
/// question no longer stands. Waits without holding up the runtime, so signals are still seen.
pub async fn line_unless(mut stop: impl FnMut() -> bool) -> Typed {
    loop {
        if let Some(typed) = tokio::task::block_in_place(|| within_a_moment(&mut stop)) {
            return typed;
        }
        tokio::task::yield_now().await;
    }
}

/// [`line_unless`] for a caller that is not async: this thread waits, the runtime told so.
pub fn line_unless_here(mut stop: impl FnMut() -> bool) -> Typed {
    tokio::task::block_in_place(|| loop {
        if let Some(typed) = within_a_moment(&mut stop) {
            return typed;
        }
    })
}

/// One fifth of a second of waiting for a line; `None` when nothing came and the question stands.
fn within_a_moment(stop: &mut impl FnMut() -> bool) -> Option<Typed> {
    let got = lines().lock().unwrap_or_else(|p| p.into_inner()).recv_timeout(Duration::from_millis(200));
    match got {
        Ok(s) => Some(Typed::Line(s)),
        Err(RecvTimeoutError::Disconnected) => Some(Typed::Closed),
        Err(RecvTimeoutError::Timeout) if stop() => Some(Typed::Stopped),
        Err(RecvTimeoutError::Timeout) => None,
    }
}
