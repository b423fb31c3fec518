//! [`TestProbe`]: an actor whose mailbox the test reads.

use std::fmt;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::cell::Sys;
use crate::{Actor, ActorRef, AnyRef, Ctx, Down, ExitReason, MonitorId};

/// An actor accepting `M` whose messages the test receives: pass [`TestProbe::actor_ref`] where
/// the code under test expects an `ActorRef<M>`, then expect what it sends. It can also monitor
/// other actors and expect their `Down`. Dropping the probe stops its actor.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, ActorRef, Ctx};
/// use troupe::testkit::TestProbe;
///
/// /// Doubles what it gets and tells `out`.
/// struct Doubler { out: ActorRef<u32> }
/// impl Actor for Doubler {
///     type Msg = u32;
///     async fn handle(&mut self, n: u32, _: &mut Ctx<Self>) { let _ = self.out.send(2 * n); }
/// }
///
/// let mut probe = TestProbe::new();
/// let d = troupe::spawn(Doubler { out: probe.actor_ref() });
/// d.send(21).unwrap();
/// assert_eq!(probe.expect_msg(Duration::from_secs(1)).await, 42);
/// probe.expect_no_msg(Duration::from_millis(20)).await;
///
/// probe.monitor(&d.any());
/// d.kill();
/// assert_eq!(probe.expect_down(Duration::from_secs(1)).await.reason, troupe::ExitReason::Killed);
/// # }
/// ```
pub struct TestProbe<M: Send + 'static> {
    actor: ActorRef<M>,
    msgs: mpsc::UnboundedReceiver<M>,
    downs: mpsc::UnboundedReceiver<Down>,
}

struct ProbeActor<M> {
    msgs: mpsc::UnboundedSender<M>,
    downs: mpsc::UnboundedSender<Down>,
}

impl<M: Send + 'static> Actor for ProbeActor<M> {
    type Msg = M;
    async fn handle(&mut self, msg: M, _: &mut Ctx<Self>) {
        let _ = self.msgs.send(msg);
    }
    async fn on_down(&mut self, down: Down, _: &mut Ctx<Self>) {
        let _ = self.downs.send(down);
    }
}

impl<M: Send + 'static> Default for TestProbe<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Send + 'static> TestProbe<M> {
    /// A probe; its actor is spawned on the current tokio runtime.
    ///
    /// # Panics
    /// Outside a tokio runtime, as `troupe::spawn` does.
    #[must_use]
    pub fn new() -> Self {
        let (mtx, msgs) = mpsc::unbounded_channel();
        let (dtx, downs) = mpsc::unbounded_channel();
        let actor = crate::spawn(ProbeActor { msgs: mtx, downs: dtx });
        Self { actor, msgs, downs }
    }

    /// A reference to the probe's actor, to hand to the code under test.
    #[must_use]
    pub fn actor_ref(&self) -> ActorRef<M> {
        self.actor.clone()
    }

    /// The probe's actor without its message type (to link it, or to stop it).
    #[must_use]
    pub fn any(&self) -> AnyRef {
        self.actor.any()
    }

    /// The next message, waiting up to `timeout`; panics when none came.
    pub async fn expect_msg(&mut self, timeout: Duration) -> M {
        match self.try_recv(timeout).await {
            Some(m) => m,
            None => panic!("TestProbe::expect_msg: no message within {timeout:?}"),
        }
    }

    /// The next message if one arrives within `timeout`.
    pub async fn try_recv(&mut self, timeout: Duration) -> Option<M> {
        tokio::time::timeout(timeout, self.msgs.recv()).await.ok().flatten()
    }

    /// Waits `duration` and panics if a message arrives meanwhile.
    pub async fn expect_no_msg(&mut self, duration: Duration)
    where
        M: fmt::Debug,
    {
        if let Some(m) = self.try_recv(duration).await {
            panic!("TestProbe::expect_no_msg: got {m:?} within {duration:?}");
        }
    }

    /// Messages received and not yet expected, without waiting.
    pub fn drain(&mut self) -> Vec<M> {
        let mut out = Vec::new();
        while let Ok(m) = self.msgs.try_recv() {
            out.push(m);
        }
        out
    }

    /// Monitors `target` from the probe: its end arrives at [`TestProbe::expect_down`] (at once,
    /// with `NoProc`, when it is already dead).
    pub fn monitor(&self, target: &AnyRef) -> MonitorId {
        let id = MonitorId::next();
        let me = self.actor.any();
        if !target.0.add_monitor(id, me.clone()) {
            me.0.push_sys(Sys::Down(Down { id, actor: target.id(), reason: ExitReason::NoProc }));
        }
        id
    }

    /// The next `Down` of an actor this probe monitors, waiting up to `timeout`; panics when
    /// none came.
    pub async fn expect_down(&mut self, timeout: Duration) -> Down {
        match tokio::time::timeout(timeout, self.downs.recv()).await {
            Ok(Some(d)) => d,
            _ => panic!("TestProbe::expect_down: no monitored actor stopped within {timeout:?}"),
        }
    }
}

impl<M: Send + 'static> Drop for TestProbe<M> {
    fn drop(&mut self) {
        self.actor.any().kill();
    }
}

impl<M: Send + 'static> fmt::Debug for TestProbe<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestProbe({:?})", self.actor)
    }
}
