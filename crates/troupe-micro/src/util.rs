//! Small pieces every runtime's benchmarks share: the tokio runtime ractor and kameo run on,
//! the bounded wait for a benchmark's completion signal, and turning panics and hangs into
//! errors that name the runtime and benchmark.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::{Error, ErrorKind};

/// How long one iteration may take before it counts as hung (every wait is bounded).
pub(crate) const ITERATION_DEADLINE: Duration = Duration::from_secs(900);

/// The worker threads `--threads N` asked for (0: tokio's default).
static WORKER_THREADS: AtomicU32 = AtomicU32::new(0);

/// Sets the worker threads of every tokio runtime the benchmarks start from now on (`None`:
/// tokio's default, one per core, or `TOKIO_WORKER_THREADS`). `troupe lab micro --threads N`
/// and `--scaling` call it; the records' `threads` say what each runtime ran on.
pub fn set_worker_threads(n: Option<u32>) {
    WORKER_THREADS.store(n.unwrap_or(0), Ordering::SeqCst);
}

/// The override set by [`set_worker_threads`], if any.
pub(crate) fn worker_threads() -> Option<u32> {
    Some(WORKER_THREADS.load(Ordering::SeqCst)).filter(|n| *n > 0)
}

/// A multi-thread tokio runtime with tokio's defaults (one worker per core), as a ractor or
/// kameo user gets from `#[tokio::main]`, or with the workers [`set_worker_threads`] chose.
pub(crate) fn tokio_runtime() -> Result<tokio::runtime::Runtime, Error> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads() {
        b.worker_threads(n as usize);
    }
    b.enable_all().build().map_err(|e| Error::new(ErrorKind::Failed, format!("cannot start a tokio runtime: {e}")))
}

/// Waits for a benchmark's completion value, bounded by [`ITERATION_DEADLINE`].
pub(crate) async fn wait<T>(rx: oneshot::Receiver<T>, what: &str) -> Result<T, Error> {
    match tokio::time::timeout(ITERATION_DEADLINE, rx).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(Error::new(
            ErrorKind::Failed,
            format!("{what}: the actor holding the completion signal stopped before finishing"),
        )),
        Err(_) => Err(Error::new(
            ErrorKind::Failed,
            format!("{what}: no completion within {} s (hung?)", ITERATION_DEADLINE.as_secs()),
        )),
    }
}

/// An error for a failed send or ask on the setup path.
pub(crate) fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Failed, format!("{what}: {e}"))
}
