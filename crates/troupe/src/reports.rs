//! What the runtime tells about actors and supervisors, modelled on OTP's crash and supervisor
//! reports: `tracing` events (target `troupe`, values as fields), the `metrics` series of the
//! `metrics` feature, and the quieting of actor panics.
//!
//! Rules (tests in `tests/core_reports.rs`, `tests/core_tracing.rs`, `tests/core_metrics.rs`,
//! `tests/core_trace_context.rs`):
//! 1. An actor that ends with `Panicked`, `Failed` or `Error` of its own (a handler panicked or
//!    failed, `started` failed, or it was stopped with such a reason) emits one `error`
//!    event, "actor crashed", with its id (`actor`), its type (`actor_type`), its name (`name`:
//!    `Spawn::name`, a supervised child's id, else the first name it is registered under, if
//!    any; else ""), its place (`supervisor`, `child`, as in rule 5) and the `reason` (OTP's
//!    crash report). Kills, stops and exits on a link's exit signal are not crashes: they emit
//!    rule 6's "actor stopped".
//! 2. Supervisors emit, each with `supervisor` (its path, rule 5), `supervisor_id` (its actor
//!    id) and, where a child is concerned, `child` (the child's id):
//!    - "child terminated" (`error`) when a child exits abnormally: `actor`, `strategy`, `reason`;
//!    - "restarting children" (`debug`), the decision to restart: `strategy`, `reason` (the exit
//!      reason that caused it), `restarts` (within the period, this one included), `intensity`,
//!      `affected` (how many children the strategy stops and starts again);
//!    - "child restarted" (`info`) for each child started again: `actor` (its new id),
//!      `strategy`, `cause` (the child whose exit caused the restart), `reason`;
//!    - "child not restarted" (`debug`) when its restart type says no: `restart`, `reason`;
//!    - "restart intensity exceeded" (`error`), the escalation: `child`, `strategy`, `reason`,
//!      `intensity`, `period_ms`; the supervisor then shuts down with `Shutdown`;
//!    - "child failed to restart; trying again" (`warn`): `strategy`, `reason`;
//!    - "child did not stop in time; killing it" (`warn`): `actor`, `timeout_ms`;
//!    - "significant child exited; auto-shutdown" (`info`): `child`;
//!    - "supervisor shut down" (`info`): `strategy`, `reason`.
//!
//!    `strategy` is `one_for_one`, `one_for_all`, `rest_for_one` or `simple_one_for_one`;
//!    `restart` is `permanent`, `transient` or `temporary`.
//! 3. A panic inside an actor does not go to the process's panic hook (no message and backtrace
//!    on stderr per crash): while a tracing subscriber takes `error` events from `troupe`, the
//!    crash report of rule 1 is all; otherwise one line goes to stderr ("troupe: actor <0.7>
//!    panicked at src/x.rs:3:9: message"). Panics outside actors reach the previous hook as
//!    before. The hook is installed once, at the first spawn.
//! 4. Every poll of an actor runs in a `trace` span `actor` with its id (enable `troupe=trace`
//!    to see which actor logged what). With the `trace-context` feature, `send` and `ask`
//!    (every send to a local mailbox) capture the sender's current span, and the receiver
//!    handles that message inside an `info` span `troupe.handle` (fields `actor`, `actor_type`)
//!    whose parent is the sender's span, so a trace crosses a local `ask` (and goes on through
//!    the sends a handler makes). A message sent outside any span gets a `troupe.handle` span
//!    with the current span (the `actor` span, when enabled) as its parent. Without the
//!    feature a message travels alone in the mailbox, and nothing is captured.
//! 5. With the `metrics` feature, through the `metrics` facade (install any recorder, e.g. a
//!    Prometheus exporter), every series carries the labels `supervisor` and `child`, both
//!    bounded (they never name one incarnation, so restarts and dynamic children do not grow
//!    the label set):
//!    - `supervisor` is the path of the actor's supervisor: a top-level supervisor's path is `/`
//!      followed by its name (`SupervisorSpec::name`; a pool's supervisor is named by
//!      `PoolSpec::name`, default `pool`), `/` alone when it has none; a child supervisor's
//!      path is its supervisor's path, `/`, and its `child` label (so `/app/pool`: stable
//!      across restarts). An actor with no supervisor has `supervisor=""`.
//!    - `child` is the label of the actor among its supervisor's children: its template id
//!      (`WorkerSpec::template`; `SimpleSpec::id` for a simple supervisor's children, default
//!      `child`; `worker` for a pool's workers; `child` for a child started with an empty id),
//!      else its child id. An actor with no supervisor has its Rust type name
//!      (`std::any::type_name`), e.g. `child="my_app::Session"`.
//!
//!    The series:
//!    - `troupe_actors_spawned_total{supervisor,child}` (counter): actors spawned; each restart
//!      of a child is a new actor and counts.
//!    - `troupe_actors_stopped_total{supervisor,child,reason}` (counter): actors ended, by
//!      `reason`: `normal`, `shutdown` (`Shutdown` and `ShutdownWith`), `killed`, `crashed`
//!      (rule 1's crashes), `linked` (exited on a link's exit signal it did not trap),
//!      `noproc`, `noconnection`.
//!    - `troupe_messages_handled_total{supervisor,child}` (counter): user messages handled.
//!    - `troupe_mailbox_depth{supervisor,child}` (histogram): messages waiting, sampled at an
//!      activation's first message and every 64th after.
//!    - `troupe_actor_crashes_total{supervisor,child}` (counter): rule 1's crashes.
//!    - `troupe_restarts_total{supervisor,child}` (counter): children started again by a
//!      supervisor's restart (`supervisor` is the restarting supervisor's path, `child` the
//!      restarted child's label).
//!
//!    A message costs one counter increment, plus a depth sample every 64th; the handles are
//!    made once per activation.
//! 6. Lifecycle events (target `troupe`):
//!    - "actor spawned" (`debug`): `actor` (id), `actor_type`, `name` (`Spawn::name`, a
//!      supervised child's id, or ""), `supervisor`, `child` (rule 5).
//!    - "actor stopped" (`debug`): the same fields and `reason`, at every end that is not a
//!      rule 1 crash (a normal stop, a shutdown, a kill, an exit on a link's exit signal...).
//!    - "exit signal" (`debug`), when an actor takes an exit signal from its mailbox: `from`,
//!      `to`, `reason`, `trapped` (whether it went to `on_exit`; untrapped, a `normal` one is
//!      ignored and any other ends the actor).
//!    - "down" (`debug`), when an actor takes a `Down`: `from` (the monitored actor), `to` (the
//!      watcher), `monitor` (its id, a number), `reason`.
//!    - "link", "unlink" (`trace`): `from` (the actor acting), `to`; "link" also `noproc`
//!      (true when `to` was already dead). A link made at spawn (`Ctx::spawn_link`, a
//!      supervisor's child) emits "link" too, from the parent.
//!    - "monitor", "demonitor" (`trace`): `from` (the watcher; absent from a demonitor through
//!      `remote_api`), `to` (the watched), `monitor`.
//!
//!    A disabled event costs its level check only: fields are ids, `&str`s and `Display`
//!    values formatted by the subscriber, nothing is built before the check.
//! 7. With the `metrics` feature, rule 5's series are recorded from the start;
//!    [`set_metrics_recording`]`(false)` stops recording them for the whole process (an
//!    activation that began while it was on keeps its handles until it parks), so a binary
//!    built with the feature can still measure the runtime as built without it.

use std::cell::Cell;
use std::sync::{Arc, Once};

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
        IN_ACTOR.with(|c| c.set(self.0));
    }
}

/// Where a supervised actor sits (rule 5): its supervisor's path and its `child` label. Made
/// by the supervisor at each start of the child, shared by the child's activations.
#[derive(Debug)]
pub(crate) struct Placement {
    pub(crate) supervisor: Arc<str>,
    pub(crate) child: Arc<str>,
}

/// Rule 5's `supervisor` and `child` of an actor.
fn place<'a>(at: Option<&'a Placement>, actor_type: &'static str) -> (&'a str, &'a str) {
    match at {
        Some(p) => (&p.supervisor, &p.child),
        None => ("", actor_type),
    }
}

/// Rule 5: the path of a top-level supervisor named `name` (`/` when unnamed).
pub(crate) fn root_path(name: Option<&str>) -> Arc<str> {
    format!("/{}", name.unwrap_or("")).into()
}

/// Rule 5: the path of the child supervisor labelled `child` under the supervisor at `parent`.
pub(crate) fn child_path(parent: &str, child: &str) -> Arc<str> {
    if parent.ends_with('/') {
        format!("{parent}{child}").into()
    } else {
        format!("{parent}/{child}").into()
    }
}

/// Rule 7: whether rule 5's series are recorded (on until [`set_metrics_recording`] turns
/// them off).
#[cfg(feature = "metrics")]
static RECORDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

#[cfg(feature = "metrics")]
#[inline]
fn recording() -> bool {
    RECORDING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Rule 7 (feature `metrics`): turns the recording of rule 5's series on or off for the whole
/// process; it is on from the start. Off, a spawn, an end, an activation and a message cost
/// what they cost without the feature plus one relaxed load, so a program built with the
/// feature (the `troupe` binary, for its node endpoint) can measure the runtime as built
/// without it: `troupe lab micro` turns it off.
///
/// ```
/// troupe::set_metrics_recording(false);
/// troupe::set_metrics_recording(true);
/// ```
#[cfg(feature = "metrics")]
pub fn set_metrics_recording(on: bool) {
    RECORDING.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Rule 6: an actor was spawned (and rule 5's spawn counter).
pub(crate) fn spawned(id: ActorId, actor_type: &'static str, name: Option<&str>, at: Option<&Placement>) {
    #[cfg(feature = "metrics")]
    if recording() {
        metrics::counter!("troupe_actors_spawned_total", labels(at, actor_type)).increment(1);
    }
    let (supervisor, child) = place(at, actor_type);
    tracing::debug!(target: "troupe", actor = %id, actor_type, name = name.unwrap_or(""), supervisor, child,
        "actor spawned");
}

/// Whether an actor's end is rule 1's crash: a crash reason of its own (not a link's).
fn is_crash(reason: &ExitReason, linked: bool) -> bool {
    !linked && matches!(reason, ExitReason::Panicked(_) | ExitReason::Failed(_) | ExitReason::Error(_))
}

/// Rule 5's bounded `reason` of `troupe_actors_stopped_total`.
#[cfg(feature = "metrics")]
fn reason_label(reason: &ExitReason, linked: bool) -> &'static str {
    if linked {
        return "linked";
    }
    match reason {
        ExitReason::Normal => "normal",
        ExitReason::Shutdown | ExitReason::ShutdownWith(_) => "shutdown",
        ExitReason::Killed => "killed",
        ExitReason::Panicked(_) | ExitReason::Failed(_) | ExitReason::Error(_) => "crashed",
        ExitReason::NoProc => "noproc",
        ExitReason::NoConnection => "noconnection",
    }
}

/// An actor ends with `reason` (`linked`: it exited on a link's exit signal): rule 1's crash
/// report or rule 6's "actor stopped", and rule 5's counters. Called once per actor, before it
/// dies, while its names still answer `name`.
pub(crate) fn ended(
    id: ActorId,
    actor_type: &'static str,
    name: impl FnOnce() -> Option<String>,
    at: Option<&Placement>,
    reason: &ExitReason,
    linked: bool,
) {
    let crash = is_crash(reason, linked);
    #[cfg(feature = "metrics")]
    if recording() {
        if crash {
            metrics::counter!("troupe_actor_crashes_total", labels(at, actor_type)).increment(1);
        }
        let mut l = labels(at, actor_type);
        l.push(metrics::Label::from_static_parts("reason", reason_label(reason, linked)));
        metrics::counter!("troupe_actors_stopped_total", l).increment(1);
    }
    let (supervisor, child) = place(at, actor_type);
    if crash {
        tracing::error!(target: "troupe", actor = %id, actor_type, name = name().as_deref().unwrap_or(""),
            supervisor, child, %reason, "actor crashed");
    } else {
        tracing::debug!(target: "troupe", actor = %id, actor_type, name = name().as_deref().unwrap_or(""),
            supervisor, child, %reason, "actor stopped");
    }
}

/// Rule 4: the span a message is handled in, child of the span its sender was in.
#[cfg(feature = "trace-context")]
pub(crate) fn handle_span(from: Option<&tracing::Span>, id: ActorId, actor_type: &'static str) -> tracing::Span {
    match from {
        None => tracing::info_span!(target: "troupe", "troupe.handle", actor = %id, actor_type),
        Some(from) => tracing::info_span!(target: "troupe", parent: from, "troupe.handle", actor = %id, actor_type),
    }
}

/// Rule 5's `supervisor` and `child` labels (a third, `reason`, fits without growing).
#[cfg(feature = "metrics")]
fn labels(at: Option<&Placement>, actor_type: &'static str) -> Vec<metrics::Label> {
    let mut v = Vec::with_capacity(3);
    match at {
        Some(p) => {
            v.push(metrics::Label::new("supervisor", p.supervisor.clone()));
            v.push(metrics::Label::new("child", p.child.clone()));
        }
        None => {
            v.push(metrics::Label::from_static_parts("supervisor", ""));
            v.push(metrics::Label::from_static_parts("child", actor_type));
        }
    }
    v
}

/// Rule 5: an activation's meters, made once per activation.
#[cfg(feature = "metrics")]
pub(crate) struct Meter {
    /// `None` while recording is off (rule 7).
    on: Option<(metrics::Counter, metrics::Histogram)>,
    n: u32,
}

#[cfg(feature = "metrics")]
impl Meter {
    #[inline]
    pub(crate) fn new(at: Option<&Placement>, actor_type: &'static str) -> Self {
        let on = recording().then(|| {
            (
                metrics::counter!("troupe_messages_handled_total", labels(at, actor_type)),
                metrics::histogram!("troupe_mailbox_depth", labels(at, actor_type)),
            )
        });
        Self { on, n: 0 }
    }

    /// One message taken; `depth` is asked for on the sampled ones.
    #[inline]
    pub(crate) fn handled(&mut self, depth: impl FnOnce() -> usize) {
        if let Some((handled, hist)) = &self.on {
            handled.increment(1);
            if self.n % 64 == 0 {
                hist.record(depth() as f64);
            }
            self.n = self.n.wrapping_add(1);
        }
    }
}

/// Rule 5: the supervisor at `supervisor` restarted its child labelled `child`.
#[cfg(feature = "metrics")]
pub(crate) fn restarted(supervisor: &Arc<str>, child: Arc<str>) {
    if !recording() {
        return;
    }
    let l = vec![metrics::Label::new("supervisor", supervisor.clone()), metrics::Label::new("child", child)];
    metrics::counter!("troupe_restarts_total", l).increment(1);
}
