//! Standard output as a reader that went away leaves it (`finishline … | head -1`): a line that
//! cannot be written is dropped, and the first such line tells whoever waits on [`closed`], so a
//! run stops as Ctrl-C stops it, recorded cancelled with its agents ended. `println!` would
//! panic instead, leaving the session interrupted and its agents running. What is written never
//! holds a terminal escape.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::LazyLock;

use finishline_engine::CancellationToken;

static CLOSED: LazyLock<CancellationToken> = LazyLock::new(CancellationToken::new);

/// Writes `args` to standard output, without a newline unless it holds one, and without the
/// control characters of a model's words (see [`printable`]).
pub fn write(args: Arguments<'_>) {
    let text = args.to_string();
    let mut out = std::io::stdout().lock();
    if out.write_all(printable(&text).as_bytes()).and_then(|()| out.flush()).is_err() {
        CLOSED.cancel();
    }
}

/// `text` without control characters but the line break and the tab: a model's words (or a
/// tool's output) printed as they came could clear the screen, retitle the window or move the
/// cursor over what Finishline printed. The CLI prints no escapes of its own; JSON lines escape
/// every control character already.
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return text.into();
    }
    text.chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect::<String>().into()
}

/// Resolves once a write to standard output has failed: nobody reads what follows.
pub async fn closed() {
    CLOSED.cancelled().await;
}

/// `println!` for a reader that may go away: see [`write`].
macro_rules! outln {
    () => { $crate::output::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::output::write(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` for a reader that may go away.
macro_rules! out {
    ($($t:tt)*) => { $crate::output::write(format_args!($($t)*)) };
}

pub(crate) use {out, outln};
