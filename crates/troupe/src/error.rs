//! Typed errors of the local runtime. Each says what happened and what to do; a failed send
//! hands the message back; an error caused by another keeps it as its `source()`.
//!
//! Rules:
//! 1. A timeout is never reported as a stopped actor: [`AskError::Timeout`] (and
//!    `SupervisorError::Timeout`) carry the time waited, [`AskError::Gone`] means stopped.
//! 2. [`ActorError`] keeps the error it was built from as its `source()`, so a supervisor's log
//!    or [`error_chain`] still shows the `io::Error` (or any other) underneath.
//! 3. A [`SendError`] hands the message back ([`SendError::into_inner`]). An adapter
//!    ([`crate::ActorRef::adapt`]) checks its target before transforming the message, so its
//!    refusals hand back the caller's message too; only a target that stops or fills up between
//!    that check and the send leaves nothing to hand back (`None`).

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::ActorId;

/// Why a send failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendErrorKind {
    /// The target has stopped; it will never read the message.
    Gone,
    /// The target's bounded mailbox is full; retry later or use `send_wait`.
    Full,
}

impl fmt::Display for SendErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendErrorKind::Gone => "send failed: the actor has stopped; look it up again or restart it",
            SendErrorKind::Full => "send failed: the actor's bounded mailbox is full; retry later or use send_wait",
        })
    }
}

/// A failed send; [`SendError::into_inner`] gives the message back (rule 3).
#[derive(thiserror::Error)]
#[error("{kind}")]
pub struct SendError<M> {
    kind: SendErrorKind,
    msg: Option<M>,
}

impl<M> SendError<M> {
    pub(crate) fn new(kind: SendErrorKind, msg: Option<M>) -> Self {
        Self { kind, msg }
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> SendErrorKind {
        self.kind
    }

    /// The message that was not delivered; `None` only when an adapter's target
    /// ([`crate::ActorRef::adapt`]) stopped or filled up between the adapter's check and its
    /// send, after the message was transformed (rule 3).
    #[must_use]
    pub fn into_inner(self) -> Option<M> {
        self.msg
    }

    /// The same error without the message (e.g. to keep it as a `Send + Sync` source).
    #[must_use]
    pub fn without_message(&self) -> SendError<()> {
        SendError { kind: self.kind, msg: None }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendError").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// Why an `ask` got no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The actor had stopped, or stopped before replying.
    #[error("ask failed: the actor has stopped; look it up again or restart it")]
    Gone,
    /// No reply within the timeout (the duration waited); the actor may still be working on it.
    #[error("ask failed: no reply within {0:?}; raise the timeout or check the actor is not stuck")]
    Timeout(Duration),
    /// The actor's bounded mailbox was full.
    #[error("ask failed: the actor's bounded mailbox is full; retry later")]
    Full,
    /// The actor dropped the reply handle without answering.
    #[error("ask failed: the actor dropped the reply handle without answering; check its handler replies")]
    NoReply,
    /// The actor's node refused the request before the actor saw it: it does not know a
    /// message type the request is or carries (`tag` names it): the reply type is not
    /// registered there, or that node knows another version of the type.
    #[error(
        "ask failed: the actor's node does not know the message type {tag:?}; register it there \
         (derive RemoteMessage on the message that carries it) or run the same version on both nodes"
    )]
    UnknownType {
        /// The type's tag, as the asker's node names it.
        tag: &'static str,
    },
}

/// An error an actor returns from `started` to refuse to start, or from a [`crate::TryActor`]'s
/// handler to stop: a message, and the error that caused it (its `source()`, rule 2).
///
/// `?` converts the crate's own errors, `std::io::Error`, boxed errors and strings into it; any
/// other error goes through [`ActorError::from_source`] (a blanket `From<E: Error>` would clash
/// with `ActorError` being an `Error` itself):
///
/// ```
/// use std::error::Error;
/// use troupe::{ActorError, AskError};
/// use std::time::Duration;
///
/// fn lookup() -> Result<(), ActorError> {
///     Err(AskError::Timeout(Duration::from_secs(1)))?
/// }
/// assert!(lookup().unwrap_err().to_string().contains("no reply within 1s"));
///
/// fn read() -> Result<String, ActorError> {
///     Ok(std::fs::read_to_string("/no/such/file")?)
/// }
/// let e = read().unwrap_err();
/// let io = e.source().unwrap().downcast_ref::<std::io::Error>().unwrap();
/// assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
///
/// let parsed: Result<u32, _> = "x".parse::<u32>();
/// let e = parsed.map_err(ActorError::from_source).unwrap_err();
/// assert!(e.source().unwrap().is::<std::num::ParseIntError>());
/// ```
#[derive(Debug)]
pub struct ActorError {
    msg: String,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl ActorError {
    /// Builds an error from a message, with no source.
    pub fn new(msg: impl Into<String>) -> Self {
        Self { msg: msg.into(), source: None }
    }

    /// Wraps `source`: the message is its text, `source()` is `source` itself.
    pub fn from_source(source: impl StdError + Send + Sync + 'static) -> Self {
        Self { msg: source.to_string(), source: Some(Box::new(source)) }
    }

    /// A message saying what the actor was doing, caused by `source`.
    ///
    /// ```
    /// use std::error::Error;
    /// let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
    /// let e = troupe::ActorError::with_source("cannot open the journal; check its permissions", io);
    /// assert_eq!(e.to_string(), "cannot open the journal; check its permissions");
    /// assert_eq!(troupe::error_chain(&e), "cannot open the journal; check its permissions: denied");
    /// ```
    pub fn with_source(msg: impl Into<String>, source: impl StdError + Send + Sync + 'static) -> Self {
        Self { msg: msg.into(), source: Some(Box::new(source)) }
    }

    /// The message (its `Display` text, without the source's).
    #[must_use]
    pub fn msg(&self) -> &str {
        &self.msg
    }
}

impl fmt::Display for ActorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl StdError for ActorError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

impl From<String> for ActorError {
    fn from(msg: String) -> Self {
        Self::new(msg)
    }
}

impl From<&str> for ActorError {
    fn from(msg: &str) -> Self {
        Self::new(msg)
    }
}

impl From<Box<dyn StdError + Send + Sync + 'static>> for ActorError {
    fn from(e: Box<dyn StdError + Send + Sync + 'static>) -> Self {
        Self { msg: e.to_string(), source: Some(e) }
    }
}

impl From<std::io::Error> for ActorError {
    fn from(e: std::io::Error) -> Self {
        Self::from_source(e)
    }
}

impl From<AskError> for ActorError {
    fn from(e: AskError) -> Self {
        Self::from_source(e)
    }
}

impl<M> From<SendError<M>> for ActorError {
    fn from(e: SendError<M>) -> Self {
        Self::from_source(e.without_message())
    }
}

impl From<RegistryError> for ActorError {
    fn from(e: RegistryError) -> Self {
        Self::from_source(e)
    }
}

impl From<LinkError> for ActorError {
    fn from(e: LinkError) -> Self {
        Self::from_source(e)
    }
}

/// An error and its `source()` chain on one line, `": "` between them; a source whose text its
/// parent already ends with (a wrapper that repeats it) is said once. For logs and binaries'
/// last words: an error's own `Display` leaves its source out.
///
/// ```
/// let e = troupe::ActorError::from(std::io::Error::other("disk full"));
/// assert_eq!(troupe::error_chain(&e), "disk full");
/// ```
#[must_use]
pub fn error_chain(e: &(dyn StdError + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !text.is_empty() && !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

/// Why a registry operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The name is held by another live actor.
    #[error("name {name:?} is already registered by {holder}; unregister it first or pick another name")]
    NameTaken {
        /// The name asked for.
        name: String,
        /// The actor holding it.
        holder: ActorId,
    },
    /// The actor is not alive, so it cannot be registered.
    #[error("actor {0} is not alive and cannot be registered; register it from its `started`")]
    NotAlive(ActorId),
    /// The name is registered, but to an actor of another message type.
    #[error("name {name:?} is registered to an actor of another message type; look it up with that type")]
    WrongType {
        /// The name looked up.
        name: String,
    },
    /// No live actor holds the name.
    #[error("no live actor is registered as {0:?}; register it first, or wait for it to restart")]
    NotRegistered(String),
}

/// Why linking failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The other actor is already dead and this actor does not trap exits (OTP's `noproc`).
    #[error("cannot link: actor {0} is already dead (noproc); monitor it instead, or trap exits")]
    NoProc(ActorId),
}
