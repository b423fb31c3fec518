//! `troupe lab exec ROLE` (hidden): a Troupe program of a workload, or one of its helper roles,
//! started by the lab as a child process (environment contract: TROUPE_CONFIG, TROUPE_SCHEDULE,
//! TROUPE_EVENTS, TROUPE_RUN_ID, TROUPE_OBSERVE_LISTEN).
//!
//! Rules:
//! 1. With `TROUPE_OBSERVE_LISTEN=HOST:PORT` (the lab's meter gives it:
//!    `troupe_lab::meter::prom`), the program serves Prometheus text at
//!    `http://HOST:PORT/metrics` (with `/health/live` and `/health/ready`) through
//!    `troupe_observe` while the role runs: every series recorded through the `metrics` facade
//!    in this process, plus `troupe_lab_exec_info{role="ROLE"} 1` and
//!    `troupe_lab_exec_uptime_seconds` (set at each scrape).
//! 2. The variable is taken out of the environment before the role starts, so the helper
//!    processes a role starts (`scp-injector`, ...) do not try the same port.
//! 3. An endpoint that cannot start (a bad or taken address, another metrics recorder) is one
//!    line on stderr, and the role runs without it: the lab never fails a run for its metrics.
//! 4. Without the variable (`TROUPE_LAB_RUNTIME_METRICS=off`, or a child in a network
//!    namespace) the runtime records no metrics (`troupe::set_metrics_recording(false)`): the
//!    program runs as a build without the metrics feature does.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use troupe_lab::meter::prom::ENV_LISTEN;
use troupe_lab::registry::Registry;

/// Runs `role` of the workload that has it, serving its metrics when asked (rule 1); its exit
/// code.
pub(super) fn exec(reg: &Registry, role: &str) -> anyhow::Result<i32> {
    let _metrics = Observer::start(role);
    Ok(reg.by_role(role)?.exec(role)?)
}

/// The metrics endpoint of this process, on a thread of its own; dropping it stops it.
struct Observer {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Observer {
    /// Rules 1-3: `None` when not asked, or when the endpoint could not start.
    fn start(role: &str) -> Option<Observer> {
        let Ok(listen) = std::env::var(ENV_LISTEN) else {
            // Rule 4: nobody will read them.
            troupe::set_metrics_recording(false);
            return None;
        };
        // Rule 2 (nothing else runs yet in this process: the role starts after this).
        std::env::remove_var(ENV_LISTEN);
        let (started_tx, started_rx) = mpsc::channel::<Result<(), String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let role = role.to_string();
        let thread = std::thread::Builder::new().name("lab-exec-metrics".into()).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = started_tx.send(Err(format!("cannot start its runtime: {e}")));
                    return;
                }
            };
            rt.block_on(async move {
                let t0 = Instant::now();
                let endpoint = troupe_observe::Endpoint::builder(&listen)
                    .refresh(move || metrics::gauge!("troupe_lab_exec_uptime_seconds").set(t0.elapsed().as_secs_f64()))
                    .start()
                    .await;
                match endpoint {
                    Ok(ep) => {
                        metrics::gauge!("troupe_lab_exec_info", "role" => role).set(1.0);
                        let _ = started_tx.send(Ok(()));
                        // Serves until the role has ended (or this handle is gone).
                        let _ = stop_rx.await;
                        drop(ep);
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e.to_string()));
                    }
                }
            });
        });
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                eprintln!("troupe lab exec: metrics at {ENV_LISTEN} not served: cannot start a thread: {e}");
                return None;
            }
        };
        match started_rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(())) => Some(Observer { stop: Some(stop_tx), thread: Some(thread) }),
            Ok(Err(why)) => {
                eprintln!("troupe lab exec: metrics at {ENV_LISTEN} not served (the role runs without them): {why}");
                let _ = thread.join();
                None
            }
            Err(_) => {
                eprintln!("troupe lab exec: metrics at {ENV_LISTEN} not served: the endpoint did not start within 5 s");
                Some(Observer { stop: Some(stop_tx), thread: None })
            }
        }
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
