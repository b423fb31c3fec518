//! Troupe: typed actors on tokio with Erlang/OTP supervision semantics.
//!
//! - [`Actor`]: async handlers, one message at a time, `started`/`stopped` hooks.
//! - [`ActorRef`]: typed, cheap to clone; `send`, `ask` with a timeout, `call` with the
//!   system's default one, `kill`, `stop`; [`start`] waits for `started` and returns its error.
//! - Links and monitors exactly as in OTP ([`Ctx::link`], [`Ctx::monitor`], [`Ctx::trap_exit`]).
//! - [`supervisor`]: `one_for_one`, `one_for_all`, `rest_for_one`, `simple_one_for_one`,
//!   dynamic children, `permanent`/`transient`/`temporary`, restart intensity, backoff, ordered
//!   shutdown.
//! - A registry of names and process groups ([`register`], [`whereis`], [`join_group`]).
//! - [`System`]: a scope owning its actors, registry and services (node, cluster,
//!   replicator: [`lifecycle`]), with a coordinated, bounded `shutdown().await`.
//! - Mailboxes unbounded, or bounded with backpressure or drop policies ([`MailboxConfig`]).
//! - [`compute`] for CPU-heavy work that must not starve other actors.
//! - [`testkit`]: probes, expectations, restarts, seeded unreliable delivery, a paused clock.
//! - [`pool`]: supervised worker pools behind a router (round-robin, least-loaded,
//!   consistent-hash).
//!
//! An idle actor has no task: it costs its cell and its state, nothing else, so a million idle
//! actors fit in well under 256 MB.
//!
//! ```
//! # #[tokio::main] async fn main() {
//! use std::time::Duration;
//! use troupe::{Actor, Ctx, ReplyTo};
//!
//! struct Greeter;
//! impl Actor for Greeter {
//!     type Msg = (String, ReplyTo<String>);
//!     async fn handle(&mut self, (name, reply): Self::Msg, _: &mut Ctx<Self>) {
//!         reply.send(format!("hello, {name}"));
//!     }
//! }
//!
//! let g = troupe::spawn(Greeter);
//! let answer = g.ask(|r| ("Joe".to_string(), r), Duration::from_secs(1)).await.unwrap();
//! assert_eq!(answer, "hello, Joe");
//! # }
//! ```

mod actor;
mod actor_ref;
mod any_ref;
mod call;
mod cell;
mod compute;
mod ctx;
mod error;
mod exit;
mod id;
mod keyed;
pub mod lifecycle;
mod loom;
mod mailbox;
pub mod pool;
mod precise;
mod registry;
pub mod remote_api;
mod reports;
mod sched;
mod spawn;
mod spin;
mod start;
#[cfg(feature = "stats")]
pub mod stats;
pub mod supervisor;
mod sweeper;
mod system;
pub mod testkit;

pub use actor::{Actor, TryActor};
pub use actor_ref::{ActorRef, DynSender, ReplyTo};
pub use any_ref::AnyRef;
pub use compute::compute;
pub use ctx::{Ctx, PipeRef, TimerRef};
pub use error::{error_chain, ActorError, AskError, LinkError, RegistryError, SendError, SendErrorKind};
pub use exit::{Down, ExitReason, ExitSignal, Failure};
pub use id::{ActorId, MonitorId};
pub use lifecycle::{Phase, Service, ShutdownReport};
pub use mailbox::{MailboxConfig, Overflow};
pub use registry::{group_members, join_group, leave_group, register, unregister, whereis, whereis_any};
pub use spawn::{spawn, spawn_with, Spawn};
pub use start::{start, start_with, StartError};
pub use system::{System, DEFAULT_ASK_TIMEOUT};

#[cfg(feature = "metrics")]
pub use reports::set_metrics_recording;

/// The README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
