//! The SCP fault injector inside the measured process (`injector = "in_process"`): an actor of
//! the SUB's own runtime, as Erlang's in-process injector is a process of the measured VM and
//! Akka's a thread of the measured JVM. Its timers, its kills and the events it writes share the
//! SUB's scheduler, threads and memory; `injector = "node"` moves all of that into its own OS
//! process (`injector_process.rs`). Both read the same schedule and stamp the same way.
//!
//! Rules (events.md, "The fault schedule"):
//! 1. Each action is due at window start + `at_ms`; the actor arms one timer (`Ctx::send_after`,
//!    the runtime's precise timer) for the next action, carries it out when it fires, together
//!    with every later action already due, and arms the next.
//! 2. When the target server is not alive, the next live slot of the group in index order is
//!    taken (wrapping); when none is, the action is skipped and counted.
//! 3. Every kill carried out emits `fault_injected {id, target: "g<group>/s<slot>", kind}` (node
//!    `sub`, the measured process) naming the slot actually killed, emitted just before the
//!    brutal kill is sent through the supervisor's `ChildRef` handle, so that its `ts_us` is the
//!    kill-sent instant the restart latency is measured from.
//! 4. After the last action it reports its tally and stops. `Stop` (the run was interrupted)
//!    counts every action not yet carried out as skipped, reports and stops.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::oneshot;
use tokio::time::Instant;
use troupe::supervisor::ChildRef;
use troupe::{Actor, ActorRef, Ctx, ExitReason};

use super::actors::ServerMsg;
use troupe_lab::events::writer::Emitter;
use troupe_lab::schedule::FaultAction;

/// The servers' handles, `[group][slot]`.
pub(crate) type Targets = Arc<Vec<Vec<ChildRef<ServerMsg>>>>;

/// What the injector did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) killed: u64,
    pub(crate) skipped: u64,
}

/// Messages to the injector actor.
pub(crate) enum InjectorMsg {
    /// The timer armed for the next action fired (rule 1).
    Due,
    /// The run was interrupted (rule 4).
    Stop,
}

/// The injector actor.
struct Injector {
    actions: Vec<FaultAction>,
    next: usize,
    start: Instant,
    targets: Targets,
    emitter: Emitter,
    tally: Tally,
    report: Option<oneshot::Sender<Tally>>,
}

impl Injector {
    fn due_at(&self, i: usize) -> Instant {
        self.start + Duration::from_millis(self.actions[i].at_ms)
    }

    /// Rule 1: arms the timer of the next action, or (rule 4) reports and stops after the last.
    fn arm(&mut self, ctx: &mut Ctx<Self>) {
        if self.next < self.actions.len() {
            let wait = self.due_at(self.next).saturating_duration_since(Instant::now());
            // The timer belongs to this actor and dies with it.
            let _timer = ctx.send_after(wait, InjectorMsg::Due);
        } else {
            self.finish(ctx);
        }
    }

    fn finish(&mut self, ctx: &mut Ctx<Self>) {
        if let Some(r) = self.report.take() {
            let _ = r.send(self.tally);
        }
        ctx.stop(ExitReason::Normal);
    }

    /// Rules 2-3 for one action.
    fn carry_out(&mut self, i: usize) {
        if kill(&self.actions[i], &self.targets, &self.emitter) {
            self.tally.killed += 1;
        } else {
            self.tally.skipped += 1;
        }
    }
}

impl Actor for Injector {
    type Msg = InjectorMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), troupe::ActorError> {
        self.arm(ctx);
        Ok(())
    }

    async fn handle(&mut self, msg: InjectorMsg, ctx: &mut Ctx<Self>) {
        match msg {
            InjectorMsg::Due => {
                // The timer was armed for action `next`: it is due now, and so is every later
                // action whose instant has passed meanwhile (a burst shares one instant).
                if self.next < self.actions.len() {
                    self.carry_out(self.next);
                    self.next += 1;
                }
                let now = Instant::now();
                while self.next < self.actions.len() && self.due_at(self.next) <= now {
                    self.carry_out(self.next);
                    self.next += 1;
                }
                self.arm(ctx);
            }
            InjectorMsg::Stop => {
                self.tally.skipped += (self.actions.len() - self.next) as u64;
                self.next = self.actions.len();
                self.finish(ctx);
            }
        }
    }
}

/// Rules 2-3; returns whether a server was killed.
fn kill(a: &FaultAction, targets: &Targets, emitter: &Emitter) -> bool {
    let Some(slots) = targets.get(a.group as usize) else {
        return false;
    };
    for k in 0..slots.len() {
        let s = (a.slot as usize + k) % slots.len();
        if let Some(server) = slots[s].get() {
            emitter
                .emit("fault_injected", json!({"id": a.id, "target": format!("g{}/s{}", a.group, s), "kind": a.kind}));
            server.kill();
            return true;
        }
    }
    false
}

/// The injector actor of a run and the channel its tally comes back on.
pub(crate) struct InProcess {
    actor: ActorRef<InjectorMsg>,
    report: oneshot::Receiver<Tally>,
}

/// Starts the injector actor on the current (the measured) runtime; `start` is the window start.
pub(crate) fn start(actions: Vec<FaultAction>, targets: Targets, start: Instant, emitter: Emitter) -> InProcess {
    let (tx, report) = oneshot::channel();
    let actor = troupe::spawn(Injector {
        actions,
        next: 0,
        start,
        targets,
        emitter,
        tally: Tally::default(),
        report: Some(tx),
    });
    InProcess { actor, report }
}

impl InProcess {
    /// Waits up to `grace` for the tally (rule 4), or stops the actor first when the run was
    /// interrupted; `Err` when it did not report (it was stopped and the tally is unknown).
    pub(crate) async fn finish(self, interrupted: bool, grace: Duration) -> Result<Tally, String> {
        if interrupted {
            let _ = self.actor.send(InjectorMsg::Stop);
        }
        match tokio::time::timeout(grace, self.report).await {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(_)) => Err("the injector actor stopped without reporting what it did".into()),
            Err(_) => {
                self.actor.kill();
                Err(format!(
                    "the injector actor did not finish its schedule within {} s of the window's end",
                    grace.as_secs()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe::supervisor::ChildSpec;
    use troupe_lab::events::writer::{Common, EventWriter, Transport};

    /// A server that never started: its handle has no live incarnation.
    struct Never;
    impl Actor for Never {
        type Msg = ServerMsg;
        async fn handle(&mut self, _: ServerMsg, _: &mut Ctx<Self>) {}
    }

    fn action(at_ms: u64, id: &str) -> FaultAction {
        FaultAction {
            at_ms,
            id: id.into(),
            kind: "kill".into(),
            group: 0,
            slot: 0,
            restart: true,
            ..Default::default()
        }
    }

    fn setup() -> (EventWriter, Targets) {
        let common = Common { run: "t".into(), rt: "troupe".into(), node: "sub".into() };
        let writer =
            EventWriter::start(Transport::Writer(Box::new(std::io::sink())), common, 64, Duration::from_secs(1))
                .unwrap();
        let handle = ChildSpec::worker("s0", || Never).handle();
        (writer, Arc::new(vec![vec![handle]]))
    }

    #[tokio::test]
    async fn rule_2_an_action_whose_group_has_no_live_server_is_skipped_and_counted() {
        let (writer, targets) = setup();
        let inj = start(vec![action(0, "a"), action(5, "b")], targets, Instant::now(), writer.emitter());
        let tally = inj.finish(false, Duration::from_secs(30)).await.unwrap();
        assert_eq!(tally, Tally { killed: 0, skipped: 2 });
    }

    #[tokio::test]
    async fn rule_4_stop_counts_the_actions_not_carried_out_as_skipped() {
        let (writer, targets) = setup();
        // Due in an hour: still pending when the run is interrupted.
        let inj = start(vec![action(3_600_000, "late")], targets, Instant::now(), writer.emitter());
        let tally = inj.finish(true, Duration::from_secs(30)).await.unwrap();
        assert_eq!(tally, Tally { killed: 0, skipped: 1 });
    }
}
