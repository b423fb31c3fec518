//! Typed errors of the local runtime. Each says what happened and what to do; a failed send
//! hands the message back.

use std::fmt;

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

/// A failed send; [`SendError::into_inner`] gives the message back when it could be kept.
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

    /// The message that was not delivered (absent only when an adapter already transformed it).
    #[must_use]
    pub fn into_inner(self) -> Option<M> {
        self.msg
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendError").field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            SendErrorKind::Gone => f.write_str("send failed: the actor has stopped; look it up again or restart it"),
            SendErrorKind::Full => {
                f.write_str("send failed: the actor's bounded mailbox is full; retry later or use send_wait")
            }
        }
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Why an `ask` got no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AskError {
    /// The actor had stopped, or stopped before replying.
    Gone,
    /// No reply within the timeout; the actor may still be working on it.
    Timeout,
    /// The actor's bounded mailbox was full.
    Full,
    /// The actor dropped the reply handle without answering.
    NoReply,
    /// The actor's node refused the request before the actor saw it: it does not know a
    /// message type the request is or carries (`tag` names it): the reply type is not
    /// registered there, or that node knows another version of the type.
    UnknownType {
        /// The type's tag, as the asker's node names it.
        tag: &'static str,
    },
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Gone => f.write_str("ask failed: the actor has stopped"),
            AskError::Timeout => {
                f.write_str("ask failed: no reply within the timeout; raise it or check the actor is not stuck")
            }
            AskError::Full => f.write_str("ask failed: the actor's bounded mailbox is full; retry later"),
            AskError::NoReply => f.write_str("ask failed: the actor dropped the reply handle without answering"),
            AskError::UnknownType { tag } => write!(
                f,
                "ask failed: the actor's node does not know the message type {tag:?}; register it there \
                 (derive RemoteMessage on the message that carries it) or run the same version on both nodes"
            ),
        }
    }
}

impl std::error::Error for AskError {}

/// An error an actor returns from `started` to refuse to start, or from a [`crate::TryActor`]'s
/// handler to stop. The crate's own errors convert into it, so `?` works on them:
///
/// ```
/// use troupe::{ActorError, AskError};
/// fn lookup() -> Result<(), ActorError> {
///     Err(AskError::Timeout)?
/// }
/// assert!(lookup().unwrap_err().to_string().contains("no reply within the timeout"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActorError(pub String);

impl ActorError {
    /// Builds an error from any message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl From<String> for ActorError {
    fn from(msg: String) -> Self {
        Self(msg)
    }
}

impl From<&str> for ActorError {
    fn from(msg: &str) -> Self {
        Self(msg.to_owned())
    }
}

impl From<AskError> for ActorError {
    fn from(e: AskError) -> Self {
        Self(e.to_string())
    }
}

impl<M> From<SendError<M>> for ActorError {
    fn from(e: SendError<M>) -> Self {
        Self(e.to_string())
    }
}

impl From<RegistryError> for ActorError {
    fn from(e: RegistryError) -> Self {
        Self(e.to_string())
    }
}

impl From<LinkError> for ActorError {
    fn from(e: LinkError) -> Self {
        Self(e.to_string())
    }
}

impl fmt::Display for ActorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ActorError {}

/// Why a registry operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// The name is held by another live actor.
    NameTaken {
        /// The name asked for.
        name: String,
        /// The actor holding it.
        holder: ActorId,
    },
    /// The actor is not alive, so it cannot be registered.
    NotAlive(ActorId),
    /// The name is registered, but to an actor of another message type.
    WrongType {
        /// The name looked up.
        name: String,
    },
    /// No live actor holds the name.
    NotRegistered(String),
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::NameTaken { name, holder } => {
                write!(f, "name {name:?} is already registered by {holder}; unregister it first or pick another name")
            }
            RegistryError::NotAlive(id) => {
                write!(f, "actor {id} is not alive and cannot be registered")
            }
            RegistryError::WrongType { name } => {
                write!(f, "name {name:?} is registered to an actor of another message type")
            }
            RegistryError::NotRegistered(name) => {
                write!(f, "no live actor is registered as {name:?}; register it first, or wait for it to restart")
            }
        }
    }
}

impl std::error::Error for RegistryError {}

/// Why linking failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkError {
    /// The other actor is already dead and this actor does not trap exits (OTP's `noproc`).
    NoProc(ActorId),
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::NoProc(id) => write!(f, "cannot link: actor {id} is already dead (noproc)"),
        }
    }
}

impl std::error::Error for LinkError {}
