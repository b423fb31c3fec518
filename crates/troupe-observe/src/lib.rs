//! The operator endpoint of a Troupe process: Prometheus metrics and health probes over a
//! small HTTP/1.1 server, what Kubernetes probes and a Prometheus scrape expect. `troupe node`
//! starts it from its `[observe]` section (docs/operating.md); a program embedding Troupe starts
//! it with [`Endpoint::builder`].
//!
//! The metrics are those recorded through the [`metrics`] facade (the `metrics` features of
//! `troupe`, `troupe-remote`, `troupe-cluster` and `troupe-crdt`), rendered by
//! `metrics-exporter-prometheus`'s recorder, which [`install`] makes the process's recorder.
//!
//! Rules (tests in `tests/observe_http.rs` and below):
//! 1. `GET /metrics` calls the refresh hook (which publishes counters read at scrape time), then
//!    answers 200 with the Prometheus text format (`text/plain; version=0.0.4`).
//! 2. `GET /health/live` answers 200 `live` while the endpoint's task runs.
//! 3. `GET /health/ready` answers 200 `ready` when the readiness check passes, else 503 with the
//!    check's reason on one line.
//! 4. `HEAD` is answered as `GET` without a body; another method gets 405 with `Allow`; another
//!    path 404; a query string is ignored. Every answer closes the connection.
//! 5. A request head that is not `METHOD PATH HTTP/1.x` gets 400, one over 8 KiB 431, one not
//!    complete within 5 s 408; none of them touches the process beyond its own connection.
//! 6. At most 64 connections are served at once; one more is closed unanswered and counted
//!    (`troupe_observe_connections_refused_total`).
//! 7. `listen` must be `host:port` (port 0 picks a free one); anything else is refused naming
//!    the `[observe] listen` key, before anything is bound.
//! 8. The recorder is installed once per process: later calls to [`install`] return the same
//!    handle; when another recorder was installed first, [`install`] fails saying so.
//!
//! ```no_run
//! # async fn f() -> Result<(), troupe_observe::Error> {
//! let endpoint = troupe_observe::Endpoint::builder("127.0.0.1:9464")
//!     .ready(|| Ok(())) // e.g. "is this node a cluster member with status up?"
//!     .start()
//!     .await?;
//! println!("metrics at http://{}/metrics", endpoint.addr());
//! # Ok(()) }
//! ```

mod http;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// What can go wrong starting an endpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Rule 7: the listen address is not `host:port`.
    #[error(
        "[observe] listen = {listen:?} is not host:port (e.g. \"127.0.0.1:9464\", or \"0.0.0.0:9464\" in a pod): {why}"
    )]
    Listen {
        /// The address as given.
        listen: String,
        /// What is wrong with it.
        why: String,
    },
    /// The address could not be bound (in use, not local, no permission).
    #[error("[observe] listen = {listen:?} cannot be bound: {source} (pick a free port, or 0 for any)")]
    Bind {
        /// The address as given.
        listen: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Rule 8: another metrics recorder was installed before this one.
    #[error("another metrics recorder is installed in this process; the endpoint can only render its own (install troupe_observe's before any other)")]
    OtherRecorder,
}

/// A boxed future, as the hooks return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// The readiness check: `Ok` when ready, else why not (bounded by [`HOOK_DEADLINE`]).
pub type ReadyCheck = Arc<dyn Fn() -> BoxFuture<Result<(), String>> + Send + Sync>;
/// Called before each render of `/metrics` (bounded by [`HOOK_DEADLINE`]).
pub type Refresh = Arc<dyn Fn() -> BoxFuture<()> + Send + Sync>;

/// How long a hook may take before the request is answered without it: a readiness check
/// that does not answer in time is "not ready"; a refresh that does not finish leaves the
/// previous values.
pub const HOOK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

static HANDLE: OnceLock<Result<PrometheusHandle, ()>> = OnceLock::new();

/// Rule 8: makes the Prometheus recorder the process's [`metrics`] recorder (once) and returns
/// its handle.
pub fn install() -> Result<PrometheusHandle, Error> {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).map(|()| handle).map_err(|_| ())
        })
        .clone()
        .map_err(|()| Error::OtherRecorder)
}

/// Rule 7: checks `listen` is `host:port` with a numeric port, without resolving it.
pub fn check_listen(listen: &str) -> Result<(), Error> {
    let bad = |why: &str| Err(Error::Listen { listen: listen.to_owned(), why: why.to_owned() });
    let Some((host, port)) = listen.rsplit_once(':') else {
        return bad("no ':port'");
    };
    if host.is_empty() {
        return bad("no host");
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return bad("an IPv6 host must be in brackets, e.g. [::1]:9464");
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/') {
        return bad("the host has spaces, control characters or '/'");
    }
    if port.parse::<u16>().is_err() {
        return bad("the port is not a number from 0 to 65535");
    }
    Ok(())
}

/// Builds an [`Endpoint`].
pub struct Builder {
    listen: String,
    ready: ReadyCheck,
    refresh: Option<Refresh>,
}

impl Builder {
    /// The readiness check of `/health/ready` (rule 3); default: always ready.
    pub fn ready(mut self, f: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Self {
        self.ready = Arc::new(move || {
            let r = f();
            Box::pin(async move { r })
        });
        self
    }

    /// [`Builder::ready`] with a check that awaits (e.g. asks an actor for its status).
    pub fn ready_async<F>(mut self, f: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.ready = Arc::new(move || Box::pin(f()));
        self
    }

    /// A hook run before each render of `/metrics` (rule 1), e.g. publishing a node's counters.
    pub fn refresh(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.refresh = Some(Arc::new(move || {
            f();
            Box::pin(async {})
        }));
        self
    }

    /// [`Builder::refresh`] with a hook that awaits.
    pub fn refresh_async<F>(mut self, f: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.refresh = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// Installs the recorder ([`install`]), binds, and serves on the current tokio runtime.
    pub async fn start(self) -> Result<Endpoint, Error> {
        check_listen(&self.listen)?;
        let handle = install()?;
        let listener = tokio::net::TcpListener::bind(&self.listen)
            .await
            .map_err(|source| Error::Bind { listen: self.listen.clone(), source })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind { listen: self.listen.clone(), source })?;
        let state = Arc::new(http::State { handle, ready: self.ready, refresh: self.refresh });
        let task = tokio::spawn(http::serve(listener, state));
        Ok(Endpoint { addr, task })
    }
}

/// A running endpoint; dropping it stops it.
pub struct Endpoint {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Endpoint {
    /// An endpoint on `listen` (`host:port`), ready always and with no refresh hook until set.
    pub fn builder(listen: &str) -> Builder {
        Builder { listen: listen.to_owned(), ready: Arc::new(|| Box::pin(async { Ok(()) })), refresh: None }
    }

    /// The bound address (the port chosen when `listen` had port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_7_listen_must_be_host_port() {
        for ok in ["127.0.0.1:9464", "0.0.0.0:0", "[::1]:9464", "localhost:1"] {
            assert!(check_listen(ok).is_ok(), "{ok}");
        }
        for bad in ["9464", ":9464", "127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", "::1:9", "a b:1", "h/x:1"] {
            let e = check_listen(bad).unwrap_err().to_string();
            assert!(e.contains("[observe] listen") && e.contains(bad), "{bad}: {e}");
        }
    }
}
