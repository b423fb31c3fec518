//! The SCP fault injector inside the Troupe SUB: its own OS thread running its own
//! current-thread tokio runtime, so its timing does not share the measured scheduler. It reads
//! the planned schedule and, at each `at_ms` after the window start, kills the server of
//! (group, slot) brutally through the supervisor's `ChildRef` handles.
//!
//! Rules (events.md, "The fault schedule"):
//! 1. When the target server is not alive, the next live slot of the group in index order is
//!    taken (wrapping); when none is, the action is skipped and counted.
//! 2. Every kill carried out emits `fault_injected {id, target: "g<group>/s<slot>", kind}`
//!    naming the slot actually killed, emitted just before the kill is sent so that its
//!    `ts_us` is the kill-sent instant the restart latency is measured from.
//! 3. The kill runs in the context of the measured runtime (`Handle::enter`), so actors that
//!    wake because of it (the linked client, the supervisor) keep running there, not on the
//!    injector's thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use troupe::supervisor::ChildRef;

use super::actors::ServerMsg;
use troupe_lab::events::writer::Emitter;
use troupe_lab::schedule::FaultAction;

/// The servers' handles, `[group][slot]`.
pub(crate) type Targets = Arc<Vec<Vec<ChildRef<ServerMsg>>>>;

/// What the injector did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) killed: u64,
    pub(crate) skipped: u64,
}

/// Carries out one action (rules 1-3); returns whether a server was killed.
fn kill(a: &FaultAction, targets: &Targets, main: &Handle, emitter: &Emitter) -> bool {
    let Some(slots) = targets.get(a.group as usize) else {
        return false;
    };
    for k in 0..slots.len() {
        let s = (a.slot as usize + k) % slots.len();
        if let Some(server) = slots[s].get() {
            emitter
                .emit("fault_injected", json!({"id": a.id, "target": format!("g{}/s{}", a.group, s), "kind": a.kind}));
            let _in_main = main.enter();
            server.kill();
            return true;
        }
    }
    false
}

/// Starts the injector thread. `start` is the window start; `stop` ends it early.
pub(crate) fn spawn(
    actions: Vec<FaultAction>,
    targets: Targets,
    start: Instant,
    emitter: Emitter,
    main: Handle,
    mut stop: oneshot::Receiver<()>,
) -> std::io::Result<std::thread::JoinHandle<Tally>> {
    std::thread::Builder::new().name("scp-injector".into()).spawn(move || {
        let mut tally = Tally::default();
        let rt = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
            Ok(rt) => rt,
            Err(_) => {
                tally.skipped = actions.len() as u64;
                return tally;
            }
        };
        rt.block_on(async {
            for (i, a) in actions.iter().enumerate() {
                let when = tokio::time::Instant::from_std(start + Duration::from_millis(a.at_ms));
                tokio::select! {
                    _ = tokio::time::sleep_until(when) => {}
                    _ = &mut stop => {
                        tally.skipped += (actions.len() - i) as u64;
                        return;
                    }
                }
                if kill(a, &targets, &main, &emitter) {
                    tally.killed += 1;
                } else {
                    tally.skipped += 1;
                }
            }
        });
        tally
    })
}
