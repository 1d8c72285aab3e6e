//! Standard output as a reader that went away leaves it (`finishline … | head -1`): a line that
//! cannot be written is dropped, and the first such line tells whoever waits on [`closed`], so a
//! run stops as Ctrl-C stops it, recorded cancelled with its agents ended. `println!` would
//! panic instead, leaving the session interrupted and its agents running. What a person reads
//! ([`human`], [`say`]) never holds a terminal escape.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::LazyLock;

use finishline_engine::CancellationToken;

static CLOSED: LazyLock<CancellationToken> = LazyLock::new(CancellationToken::new);

/// Writes `args` to standard output as they are (JSON lines, an export), without a newline
/// unless they hold one.
pub fn write(args: Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if out.write_fmt(args).and_then(|()| out.flush()).is_err() {
        CLOSED.cancel();
    }
}

/// Writes `text` for a person to read: the live view of a run, with a model's words in it.
pub fn human(text: &str) {
    write(format_args!("{}", printable(text)));
}

/// Writes `text` to standard error for a person (a question, an error that may quote a model or
/// a server), without control characters; a closed standard error is ignored, not a panic.
pub fn say(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(printable(text).as_bytes()).and_then(|()| err.flush());
}

/// `text` without control characters but the line break and the tab: a model's words (or a
/// tool's output) printed as they came could clear the screen, retitle the window or move the
/// cursor over what Finishline printed. The CLI prints no escapes of its own. Only what a person
/// reads goes through it: JSON lines and exports keep their text whole.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return text.into();
    }
    text.chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect::<String>().into()
}

/// Whether a write to standard output has failed.
pub fn is_closed() -> bool {
    CLOSED.is_cancelled()
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

/// `println!` of what a person reads (a listing with titles and snippets from the history):
/// see [`human`].
macro_rules! humanln {
    ($($t:tt)*) => { $crate::output::human(&format!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` for a terminal that may go away (SIGHUP, a closed window): see [`say`].
macro_rules! errln {
    () => { $crate::output::say("\n") };
    ($($t:tt)*) => { $crate::output::say(&format!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {errln, humanln, outln};
