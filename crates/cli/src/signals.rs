//! The signals that stop what the CLI is doing: Ctrl-C, SIGTERM (a `timeout`, CI, a service
//! manager) and SIGHUP (a closed terminal). Every wait on them takes all three, so none of them
//! kills the process outright and leaves an agent's or a command's process group running.

use tokio::signal::unix::{signal, Signal, SignalKind};

pub(crate) struct StopSignals([Signal; 3]);

impl StopSignals {
    /// Listening from now on; `None` when the runtime could not listen (then the signals keep
    /// their default, which ends the process).
    pub(crate) fn listen() -> Option<StopSignals> {
        let (Ok(term), Ok(hup), Ok(int)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup()), signal(SignalKind::interrupt())) else {
            return None;
        };
        Some(StopSignals([term, hup, int]))
    }

    /// The next of them.
    pub(crate) async fn next(&mut self) {
        let [a, b, c] = &mut self.0;
        tokio::select! {
            _ = a.recv() => {}
            _ = b.recv() => {}
            _ = c.recv() => {}
        }
    }
}
