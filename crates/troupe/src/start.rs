//! Starting an actor and learning whether its `started` succeeded: [`start`], [`start_with`]
//! and [`StartError`] (OTP's `gen_server:start`, which returns `{error, Reason}` when `init`
//! fails; [`crate::spawn`] stays fire-and-forget, as `spawn` in Erlang).
//!
//! Rules (tests in `tests/core_start.rs`):
//! 1. `start` spawns the actor exactly as `spawn` does (same system, same home runtime) and
//!    returns once its `started` hook has finished: `Ok` with its ref when it returned `Ok`
//!    (even if it then asked to stop), or a [`StartError`] when it did not.
//! 2. When `start` returns an error the actor is dead: its links and monitors have been
//!    signalled, and it never handles a message.
//! 3. The error says which actor failed (its id, its type, its name when it had one) and why:
//!    the [`ActorError`] its `started` returned is its [`std::error::Error::source`]; a panic
//!    or a kill during `started` has no source, its [`ExitReason`] says what happened.

use std::fmt;

use crate::spawn::{spawn_acked, Spawn};
use crate::{Actor, ActorError, ActorId, ActorRef, ExitReason};

/// An actor whose `started` hook failed, from [`start`] or [`crate::System::start`].
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::error::Error;
/// use troupe::{Actor, ActorError, Ctx};
///
/// struct NeedsConfig;
/// impl Actor for NeedsConfig {
///     type Msg = ();
///     async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
///         Err(ActorError::new("no config file"))
///     }
///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
/// }
///
/// let err = troupe::start(NeedsConfig).await.unwrap_err();
/// assert!(err.actor_type().ends_with("NeedsConfig"));
/// assert_eq!(err.source().unwrap().to_string(), "no config file");
/// assert!(err.to_string().contains("failed to start"), "{err}");
/// # }
/// ```
#[derive(Debug)]
pub struct StartError {
    actor: ActorId,
    actor_type: &'static str,
    name: Option<String>,
    reason: ExitReason,
    source: Option<ActorError>,
}

impl StartError {
    /// The actor that failed to start (dead by now).
    #[must_use]
    pub fn actor(&self) -> ActorId {
        self.actor
    }

    /// Its type, as `std::any::type_name` writes it.
    #[must_use]
    pub fn actor_type(&self) -> &'static str {
        self.actor_type
    }

    /// Its name ([`Spawn::name`]), if it had one.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How it ended: `Error` when `started` returned an error, `Panicked` when it panicked,
    /// `Killed` when it was killed first.
    #[must_use]
    pub fn reason(&self) -> &ExitReason {
        &self.reason
    }

    /// The error its `started` returned (also its [`std::error::Error::source`]); `None` when
    /// it panicked or was killed.
    #[must_use]
    pub fn actor_error(&self) -> Option<&ActorError> {
        self.source.as_ref()
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "actor {} ({}", self.actor, self.actor_type)?;
        if let Some(name) = &self.name {
            write!(f, ", named {name:?}")?;
        }
        write!(f, ") failed to start: {}; it is not running, fix the cause and start it again", self.reason)
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Spawns `actor` as [`crate::spawn`] does and waits until its `started` hook has finished:
/// its ref, or a [`StartError`] saying which actor failed and why (rules 1-3 of `start.rs`).
/// Use it where the caller must not go on with an actor that could not start (a connection, a
/// file); use `spawn` where nobody waits.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use troupe::{Actor, ActorError, Ctx, ReplyTo};
///
/// struct Counter(u32);
/// impl Actor for Counter {
///     type Msg = ReplyTo<u32>;
///     async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
///         self.0 = 41;
///         Ok(())
///     }
///     async fn handle(&mut self, r: ReplyTo<u32>, _: &mut Ctx<Self>) {
///         self.0 += 1;
///         r.send(self.0);
///     }
/// }
///
/// let c = troupe::start(Counter(0)).await.expect("started");
/// assert_eq!(c.call(|r| r).await.unwrap(), 42);
/// # }
/// ```
///
/// # Panics
/// When called outside a tokio runtime (as [`crate::spawn`]).
pub async fn start<A: Actor>(actor: A) -> Result<ActorRef<A::Msg>, StartError> {
    start_with(actor, Spawn::new()).await
}

/// [`start`] with options (a mailbox, a name: [`Spawn`]).
pub async fn start_with<A: Actor>(actor: A, opts: Spawn) -> Result<ActorRef<A::Msg>, StartError> {
    let name = opts.name_str().map(str::to_owned);
    let (actor_ref, ack) = spawn_acked(actor, opts, None);
    let source = match ack.await {
        Ok(Ok(())) => return Ok(actor_ref),
        Ok(Err(e)) => Some(e),
        Err(_) => None,
    };
    // Rule 2: it is dead (links and monitors signalled) when the caller sees the error.
    let reason = actor_ref.terminated().await;
    Err(StartError { actor: actor_ref.id(), actor_type: std::any::type_name::<A>(), name, reason, source })
}
