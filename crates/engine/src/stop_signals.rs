//! The signals that stop a front end (the CLI, the app): Ctrl-C, SIGTERM (a `timeout`, CI, a
//! logout, a service manager) and SIGHUP (a closed terminal). Every wait on them takes all three,
//! so none of them kills the process outright and leaves an agent's or a command's process group
//! running. A signal the process was started ignoring (`nohup`, `cmd &` in a script) stays
//! ignored.

use std::sync::OnceLock;

use tokio::signal::unix::{signal, Signal, SignalKind};

pub struct StopSignals([Option<Signal>; 3]);

const WATCHED: [(libc::c_int, fn() -> SignalKind); 3] =
    [(libc::SIGTERM, SignalKind::terminate), (libc::SIGHUP, SignalKind::hangup), (libc::SIGINT, SignalKind::interrupt)];

/// Which of [`WATCHED`] the process was started ignoring: read once, before the first listen
/// replaces the disposition.
fn ignored_at_start() -> &'static [bool; 3] {
    static IGNORED: OnceLock<[bool; 3]> = OnceLock::new();
    IGNORED.get_or_init(|| {
        WATCHED.map(|(sig, _)| {
            // SAFETY: a null new action only reads the current one.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
            }
        })
    })
}

impl StopSignals {
    /// Listening from now on; `None` when the runtime could not listen (then the signals keep
    /// their default, which ends the process).
    pub fn listen() -> Option<StopSignals> {
        let ignored = ignored_at_start();
        let mut out: [Option<Signal>; 3] = [None, None, None];
        for (i, (_, kind)) in WATCHED.iter().enumerate() {
            if !ignored[i] {
                out[i] = Some(signal(kind()).ok()?);
            }
        }
        Some(StopSignals(out))
    }

    /// The next of them.
    pub async fn next(&mut self) {
        async fn one(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let [a, b, c] = &mut self.0;
        tokio::select! {
            _ = one(a) => {}
            _ = one(b) => {}
            _ = one(c) => {}
        }
    }
}
