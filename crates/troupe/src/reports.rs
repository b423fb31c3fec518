//! What the runtime tells about failures, modelled on OTP's crash and supervisor reports, as
//! `tracing` events (target `troupe`), and the quieting of actor panics.
//!
//! Rules (tests in `tests/core_reports.rs`):
//! 1. An actor that ends with `Panicked`, `Failed` or `Error` emits one `error` event, "actor
//!    crashed", with its id, its type, its name (`Spawn::name`, a supervised child's id, else the
//!    first name it is registered under, if any), and the reason (OTP's crash report). Kills, stops and exit signals emit nothing.
//! 2. Supervisors emit: "child terminated" (`error`) when a child exits abnormally, "child
//!    restarted" (`info`) with its new id, "restart intensity exceeded" (`error`, the escalation),
//!    "child failed to restart" (`warn`), "child did not stop in time" (`warn`), and "supervisor
//!    shut down" (`info`) with its reason.
//! 3. A panic inside an actor does not go to the process's panic hook (no message and backtrace
//!    on stderr per crash): while a tracing subscriber takes `error` events from `troupe`, the
//!    crash report of rule 1 is all; otherwise one line goes to stderr ("troupe: actor <0.7>
//!    panicked at src/x.rs:3:9: message"). Panics outside actors reach the previous hook as
//!    before. The hook is installed once, at the first spawn.
//! 4. Every poll of an actor runs in a `trace` span `actor` with its id (enable `troupe=trace`
//!    to see which actor logged what).
//! 5. With the `metrics` feature, through the `metrics` facade (install any recorder, e.g. a
//!    Prometheus exporter): `troupe_messages_handled_total{actor}` counts the messages each
//!    actor type handled; `troupe_mailbox_depth{actor}` records the messages waiting, sampled at
//!    an activation's first message and every 64th after; `troupe_actor_crashes_total{actor}`
//!    counts rule 1's crashes; `troupe_restarts_total{child}` counts supervisor restarts by
//!    child id. `actor` is the actor's Rust type name.

use std::cell::Cell;
use std::sync::Once;

use crate::{ActorId, ExitReason};

thread_local! {
    /// The actor being polled on this thread (rule 3).
    static IN_ACTOR: Cell<Option<ActorId>> = const { Cell::new(None) };
}

/// Rule 3: installs the hook once.
pub(crate) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| match IN_ACTOR.get() {
            None => previous(info),
            Some(id) => {
                if !tracing::enabled!(target: "troupe", tracing::Level::ERROR) {
                    let at = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
                    let msg = crate::spawn::panic_message(info.payload());
                    eprintln!("troupe: actor {id} panicked{at}: {msg}");
                }
            }
        }));
    });
}

/// Marks this thread as running actor `id`'s code until dropped (rule 3).
pub(crate) struct InActor(Option<ActorId>);

pub(crate) fn in_actor(id: ActorId) -> InActor {
    InActor(IN_ACTOR.replace(Some(id)))
}

impl Drop for InActor {
    fn drop(&mut self) {
        IN_ACTOR.set(self.0);
    }
}

/// Rule 1.
pub(crate) fn crashed(id: ActorId, actor_type: &str, name: Option<String>, reason: &ExitReason) {
    if matches!(reason, ExitReason::Panicked(_) | ExitReason::Failed(_) | ExitReason::Error(_)) {
        #[cfg(feature = "metrics")]
        metrics::counter!("troupe_actor_crashes_total", "actor" => actor_type.to_owned()).increment(1);
        tracing::error!(target: "troupe", actor = %id, actor_type, name = name.as_deref().unwrap_or(""), %reason, "actor crashed");
    }
}

/// Rule 5: an activation's meters, made once per activation.
#[cfg(feature = "metrics")]
pub(crate) struct Meter {
    handled: metrics::Counter,
    depth: metrics::Histogram,
    n: u32,
}

#[cfg(feature = "metrics")]
impl Meter {
    pub(crate) fn new(actor: &'static str) -> Self {
        Self {
            handled: metrics::counter!("troupe_messages_handled_total", "actor" => actor),
            depth: metrics::histogram!("troupe_mailbox_depth", "actor" => actor),
            n: 0,
        }
    }

    /// One message taken; `depth` is asked for on the sampled ones.
    pub(crate) fn handled(&mut self, depth: impl FnOnce() -> usize) {
        self.handled.increment(1);
        if self.n % 64 == 0 {
            self.depth.record(depth() as f64);
        }
        self.n = self.n.wrapping_add(1);
    }
}

/// Rule 5: a supervisor restarted `child`.
#[cfg(feature = "metrics")]
pub(crate) fn restarted(child: &str) {
    metrics::counter!("troupe_restarts_total", "child" => child.to_owned()).increment(1);
}
