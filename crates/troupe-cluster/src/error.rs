//! The crate's typed error: [`Error`] with a `#[non_exhaustive]` [`ErrorKind`]. Messages say
//! what happened and what to do.
//!
//! Rules:
//! 1. An error caused by another keeps it as its `source()`: a node-layer failure is
//!    [`ErrorKind::Node`] with the [`troupe_remote::Error`] as source (whose own source may be
//!    the `io::Error`), so the cause survives the crate boundary. [`troupe::error_chain`]
//!    prints the whole chain on one line.
//! 2. A timeout is [`ErrorKind::Timeout`], never [`ErrorKind::Stopped`].

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration value was refused (the text names the key).
    Config(String),
    /// The node layer (or the overlay's broker) failed: the text says what the cluster was
    /// doing, the source why (a [`troupe_remote::Error`], an `io::Error`, a broker error).
    Node(String),
    /// The cluster daemon has stopped (the node left, was downed, or shut down).
    Stopped,
    /// No answer in time (the text says what was waited for, and how long).
    Timeout(String),
    /// A name or service is held by a ref of another message type.
    TypeMismatch {
        /// The type asked for.
        expected: String,
        /// The type registered.
        found: String,
    },
    /// The name is already registered in the cluster.
    NameTaken(String),
    /// A message could not be encoded (the codec's error is the source).
    Encode,
    /// The cluster daemon failed (a panic; `daemon.rs` rule 6): the membership has stopped and
    /// is not restarted; the text says why.
    DaemonFailed(String),
    /// An overlay knows no path to the destination node: the message was not sent (the
    /// overlay's `unroutable` counter counts it).
    NoRoute {
        /// The destination node, as the sender gave it.
        to: String,
        /// The overlay's kind.
        overlay: String,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Config(m) => write!(f, "invalid cluster configuration: {m}"),
            ErrorKind::Node(m) => write!(f, "{m}"),
            ErrorKind::Stopped => {
                write!(
                    f,
                    "the cluster daemon has stopped (this node left or was downed); start a new Cluster to rejoin"
                )
            }
            ErrorKind::Timeout(m) => write!(f, "timed out: {m}"),
            ErrorKind::TypeMismatch { expected, found } => {
                write!(f, "type mismatch: asked for {expected}, but it accepts {found}; look it up with that type")
            }
            ErrorKind::NameTaken(m) => {
                write!(f, "name already registered in the cluster: {m}; pick another or unregister it")
            }
            ErrorKind::Encode => write!(f, "cannot encode the message; check its Serialize impl"),
            ErrorKind::DaemonFailed(m) => write!(
                f,
                "the cluster membership has stopped: {m}; this node is no longer a member, start a new Cluster"
            ),
            ErrorKind::NoRoute { to, overlay } => write!(
                f,
                "no route to {to} in the {overlay:?} overlay: this node knows no path to that node, so the \
                 message was not sent; check the address and that the node is a member (Overlay::neighbours, \
                 Overlay::status)"
            ),
        }
    }
}

/// The crate's error: its [`ErrorKind`] and, when another error caused it, that error as its
/// `source()` (rule 1).
#[derive(Debug, Clone)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

impl Error {
    pub(crate) fn config(m: impl Into<String>) -> Self {
        ErrorKind::Config(m.into()).into()
    }

    /// An error of `kind` caused by `source`.
    pub fn with_source(kind: ErrorKind, source: impl StdError + Send + Sync + 'static) -> Self {
        Self { kind, source: Some(Arc::new(source)) }
    }

    /// A node-layer failure: `what` the cluster was doing, `source` why.
    pub(crate) fn node(what: impl Into<String>, source: impl StdError + Send + Sync + 'static) -> Self {
        Self::with_source(ErrorKind::Node(what.into()), source)
    }

    /// What went wrong (the same as the `kind` field).
    #[must_use]
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

/// By hand rather than with `thiserror`'s `#[source]`: that would hand out the `Arc` itself,
/// which `downcast_ref::<io::Error>()` does not see through.
impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self { kind, source: None }
    }
}

/// The node layer's error, kept as the source (rule 1).
impl From<troupe_remote::Error> for Error {
    fn from(e: troupe_remote::Error) -> Self {
        Self::node("the node layer failed", e)
    }
}

/// `?` in an actor's `started` or a `TryActor`'s handler: the cluster error is kept as the source.
impl From<Error> for troupe::ActorError {
    fn from(e: Error) -> Self {
        troupe::ActorError::from_source(e)
    }
}
