//! The [`Actor`] trait: one message at a time, async handlers, lifecycle hooks.

use std::future::Future;

use crate::{ActorError, Ctx, Down, ExitReason, ExitSignal};

/// An actor: owns its state and handles one message at a time.
///
/// Handlers are `async`; while one awaits, the actor handles nothing else (its mailbox fills).
/// A panic in any hook or handler stops the actor with [`ExitReason::Panicked`] and harms no
/// other actor.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, Ctx, ReplyTo};
///
/// struct Counter(u64);
/// enum Msg { Add(u64), Get(ReplyTo<u64>) }
///
/// impl Actor for Counter {
///     type Msg = Msg;
///     async fn handle(&mut self, msg: Msg, _ctx: &mut Ctx<Self>) {
///         match msg {
///             Msg::Add(n) => self.0 += n,
///             Msg::Get(reply) => reply.send(self.0),
///         }
///     }
/// }
///
/// let counter = troupe::spawn(Counter(0));
/// counter.send(Msg::Add(2)).unwrap();
/// let n = counter.ask(Msg::Get, Duration::from_secs(1)).await.unwrap();
/// assert_eq!(n, 2);
/// # }
/// ```
pub trait Actor: Send + Sized + 'static {
    /// The messages this actor accepts.
    type Msg: Send + 'static;

    /// Runs once before the first message. An error stops the actor with
    /// [`ExitReason::Error`] (and fails a supervisor's start of it).
    fn started(
        &mut self,
        ctx: &mut Ctx<Self>,
    ) -> impl Future<Output = Result<(), ActorError>> + Send {
        let _ = ctx;
        async { Ok(()) }
    }

    /// Handles one message.
    fn handle(&mut self, msg: Self::Msg, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send;

    /// Runs on a graceful stop (a stop request or [`Ctx::stop`]); not after a kill, a panic, or
    /// an exit signal from a link (as in OTP, where such a process does not run `terminate`).
    fn stopped(
        &mut self,
        reason: &ExitReason,
        ctx: &mut Ctx<Self>,
    ) -> impl Future<Output = ()> + Send {
        let _ = (reason, ctx);
        async {}
    }

    /// An exit signal from a linked actor, delivered only when trapping exits
    /// ([`Ctx::trap_exit`]). The default ignores it.
    fn on_exit(
        &mut self,
        signal: ExitSignal,
        ctx: &mut Ctx<Self>,
    ) -> impl Future<Output = ()> + Send {
        let _ = (signal, ctx);
        async {}
    }

    /// A monitored actor stopped ([`Ctx::monitor`]). The default ignores it.
    fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (down, ctx);
        async {}
    }
}
