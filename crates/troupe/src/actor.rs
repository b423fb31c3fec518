//! The [`Actor`] trait: one message at a time, async handlers, lifecycle hooks; and
//! [`TryActor`], the same with a handler that returns `Result` so `?` works in it.

use std::fmt;
use std::future::Future;

use crate::{ActorError, Ctx, Down, ExitReason, ExitSignal};

/// An actor: owns its state and handles one message at a time.
///
/// Handlers are `async`; while one awaits, the actor handles nothing else (its mailbox fills).
/// A panic in any hook or handler stops the actor with [`ExitReason::Panicked`] and harms no
/// other actor. To use `?` in the handler, implement [`TryActor`] instead.
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
    fn started(&mut self, ctx: &mut Ctx<Self>) -> impl Future<Output = Result<(), ActorError>> + Send {
        let _ = ctx;
        async { Ok(()) }
    }

    /// Handles one message.
    fn handle(&mut self, msg: Self::Msg, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send;

    /// Runs on a graceful stop (a stop request or [`Ctx::stop`]); not after a kill, a panic, or
    /// an exit signal from a link (as in OTP, where such a process does not run `terminate`).
    fn stopped(&mut self, reason: &ExitReason, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (reason, ctx);
        async {}
    }

    /// An exit signal from a linked actor, delivered only when trapping exits
    /// ([`Ctx::trap_exit`]). The default ignores it.
    fn on_exit(&mut self, signal: ExitSignal, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (signal, ctx);
        async {}
    }

    /// A monitored actor stopped ([`Ctx::monitor`]). The default ignores it.
    fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (down, ctx);
        async {}
    }
}

/// An actor whose handler returns `Result<(), Self::Error>`, so `?` works in it. Every
/// `TryActor` is an [`Actor`] (a blanket impl), spawned and supervised like any other.
///
/// An `Err(e)` stops the actor as [`Ctx::stop`] does, with [`ExitReason::Failed`] carrying `e`'s
/// type name and message: its `stopped` hook runs, then links, monitors and its supervisor see an
/// abnormal exit (a crash, as a panic is, so a transient child is restarted). `Error` is any type
/// that implements `Display`: your own error enum, `std::io::Error`, a boxed error,
/// `anyhow::Error`, or [`ActorError`], which the crate's own errors (`AskError`, `SendError`,
/// `RegistryError`, `LinkError`, `SupervisorError`) convert into.
///
/// (Why a second trait: `Actor::handle` returning `impl Future<Output = impl Trait>` would make
/// every public actor type whose handler returns `()` trip rustc's `refining_impl_trait` lint.)
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Ctx, ReplyTo, TryActor};
///
/// struct Parser;
/// enum Msg { Parse(String, ReplyTo<u32>) }
///
/// impl TryActor for Parser {
///     type Msg = Msg;
///     type Error = std::num::ParseIntError;
///     async fn handle(&mut self, msg: Msg, _: &mut Ctx<Self>) -> Result<(), Self::Error> {
///         let Msg::Parse(text, reply) = msg;
///         reply.send(text.parse()?);
///         Ok(())
///     }
/// }
///
/// let p = troupe::spawn(Parser);
/// assert_eq!(p.ask(|r| Msg::Parse("42".into(), r), Duration::from_secs(1)).await.unwrap(), 42);
/// // The reply handle dies with the failed handler: the asker sees NoReply (or Gone).
/// assert!(p.ask(|r| Msg::Parse("forty-two".into(), r), Duration::from_secs(1)).await.is_err());
/// let reason = p.terminated().await;
/// assert!(reason.failed_with::<std::num::ParseIntError>());
/// assert_eq!(reason.to_string(), "failed: invalid digit found in string (core::num::error::ParseIntError)");
/// # }
/// ```
pub trait TryActor: Send + Sized + 'static {
    /// The messages this actor accepts.
    type Msg: Send + 'static;
    /// What its handler may fail with.
    type Error: fmt::Display;

    /// As [`Actor::started`].
    fn started(&mut self, ctx: &mut Ctx<Self>) -> impl Future<Output = Result<(), ActorError>> + Send {
        let _ = ctx;
        async { Ok(()) }
    }

    /// Handles one message; an `Err` stops the actor with [`ExitReason::Failed`].
    fn handle(&mut self, msg: Self::Msg, ctx: &mut Ctx<Self>) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// As [`Actor::stopped`]; also runs after a handler's `Err`, with its [`ExitReason::Failed`].
    fn stopped(&mut self, reason: &ExitReason, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (reason, ctx);
        async {}
    }

    /// As [`Actor::on_exit`].
    fn on_exit(&mut self, signal: ExitSignal, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (signal, ctx);
        async {}
    }

    /// As [`Actor::on_down`].
    fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        let _ = (down, ctx);
        async {}
    }
}

impl<T: TryActor> Actor for T {
    type Msg = <T as TryActor>::Msg;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> impl Future<Output = Result<(), ActorError>> + Send {
        TryActor::started(self, ctx)
    }

    async fn handle(&mut self, msg: Self::Msg, ctx: &mut Ctx<Self>) {
        if let Err(e) = TryActor::handle(self, msg, ctx).await {
            ctx.stop(ExitReason::failed(&e));
        }
    }

    fn stopped(&mut self, reason: &ExitReason, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        TryActor::stopped(self, reason, ctx)
    }

    fn on_exit(&mut self, signal: ExitSignal, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        TryActor::on_exit(self, signal, ctx)
    }

    fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) -> impl Future<Output = ()> + Send {
        TryActor::on_down(self, down, ctx)
    }
}
