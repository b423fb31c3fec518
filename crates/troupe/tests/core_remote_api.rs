//! The surface the core offers transports (`remote_api.rs`), pinned from a transport's side:
//! rule 5, work deferred while a death signals its monitors runs once all are signalled.

mod common;

use std::sync::{Arc, Mutex};

use common::{log, Probe};
use tokio::sync::oneshot;
use troupe::remote_api::{self, RemoteProcess};
use troupe::{ActorId, AnyRef, Down, ExitReason, ExitSignal, MonitorId};

/// A watcher on a pretend peer node: each `Down` is logged, and the first of a run defers one
/// "flush", as a transport batching `Down`s per peer does.
struct Watcher {
    n: u64,
    log: Arc<Mutex<Vec<String>>>,
    queued: Arc<Mutex<usize>>,
}

impl RemoteProcess for Watcher {
    fn id(&self) -> ActorId {
        ActorId::new(7, self.n)
    }
    fn is_alive(&self) -> bool {
        true
    }
    fn kill(&self) {}
    fn stop(&self, _: ExitReason) {}
    fn exit_signal(&self, _: ExitSignal) -> bool {
        false
    }
    fn down(&self, d: Down) -> bool {
        self.log.lock().unwrap().push(format!("down {} {:?}", self.n, d.reason));
        let first = {
            let mut q = self.queued.lock().unwrap();
            *q += 1;
            *q == 1
        };
        if first {
            let (log, queued) = (self.log.clone(), self.queued.clone());
            remote_api::defer(move || {
                let n = std::mem::take(&mut *queued.lock().unwrap());
                log.lock().unwrap().push(format!("flush {n}"));
            });
        }
        true
    }
    fn add_link(&self, _: AnyRef) -> bool {
        false
    }
    fn remove_link(&self, _: ActorId) {}
    fn add_monitor(&self, _: MonitorId, _: AnyRef) -> bool {
        false
    }
    fn remove_monitor(&self, _: MonitorId) {}
    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason> {
        Err(ExitReason::NoProc)
    }
}

#[tokio::test]
async fn a_death_signals_every_remote_monitor_before_the_deferred_work_runs() {
    let lg = log();
    let victim = troupe::spawn(Probe::new("v", &lg));
    let log = Arc::new(Mutex::new(Vec::new()));
    let queued = Arc::new(Mutex::new(0));
    for n in 1..=3 {
        let w = Watcher { n, log: log.clone(), queued: queued.clone() };
        let watcher = AnyRef::from_remote(Arc::new(w));
        assert!(remote_api::add_monitor(&victim.any(), remote_api::new_monitor_id(), watcher));
    }
    victim.kill();
    assert_eq!(victim.terminated().await, ExitReason::Killed);
    let got = log.lock().unwrap().clone();
    // The monitors' order is the cell's; what matters is that the one flush comes after all
    // three `Down`s and takes them together (without the scope it ran after the first).
    assert_eq!(got.len(), 4, "three Downs and one flush: {got:?}");
    assert!(got[..3].iter().all(|l| l.starts_with("down ") && l.ends_with("Killed")), "{got:?}");
    assert_eq!(got[3], "flush 3", "{got:?}");
}

#[test]
fn outside_a_death_deferred_work_runs_at_once() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    remote_api::defer(move || r.lock().unwrap().push(1));
    assert_eq!(*ran.lock().unwrap(), vec![1]);
}
