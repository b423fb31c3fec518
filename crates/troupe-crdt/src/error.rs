//! The crate's typed errors.
//!
//! Rules:
//! 1. An error caused by another keeps it as its `source()`: a node-layer failure is
//!    [`ErrorKind::Node`] with the [`troupe_remote::Error`] as source.
//! 2. A consistency level not reached in time is [`ErrorKind::Timeout`], never
//!    [`ErrorKind::Stopped`].

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The consistency level was not reached in time: `acked` of the `needed` replicas
    /// (this one included) answered. A write is applied here all the same and keeps spreading.
    Timeout {
        /// The key.
        key: String,
        /// Replicas needed, this one included.
        needed: usize,
        /// Replicas that answered, this one included.
        acked: usize,
        /// How long it waited.
        waited: Duration,
    },
    /// The key holds another CRDT type.
    TypeMismatch {
        /// The key.
        key: String,
        /// The type asked for.
        expected: String,
        /// The type the key holds.
        found: String,
    },
    /// The replicator stopped.
    Stopped,
    /// The node layer refused: the text says what the replicator was doing, the source (a
    /// [`troupe_remote::Error`]) why.
    Node(String),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Timeout { key, needed, acked, waited } => write!(
                f,
                "{key}: {acked} of the {needed} replicas needed answered within {waited:?}; the write (if any) \
                 is applied on this node and will spread when members answer; retry, or lower the consistency \
                 level if fewer members are reachable"
            ),
            ErrorKind::TypeMismatch { key, expected, found } => {
                write!(f, "{key} holds a {found}, not a {expected}; use another key name")
            }
            ErrorKind::Stopped => f.write_str("the replicator stopped; start a new one on a running cluster"),
            ErrorKind::Node(what) => write!(f, "node: {what}"),
        }
    }
}

/// The error of replicator operations: its [`ErrorKind`] and, when another error caused it,
/// that error as its `source()` (rule 1).
#[derive(Clone, Debug)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

impl Error {
    /// An error of `kind` caused by `source`.
    pub fn with_source(kind: ErrorKind, source: impl StdError + Send + Sync + 'static) -> Self {
        Self { kind, source: Some(Arc::new(source)) }
    }

    /// A node-layer failure: `what` the replicator was doing, `source` why.
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

/// `?` in an actor's `started` or a `TryActor`'s handler: the replicator error is kept as the
/// source.
impl From<Error> for troupe::ActorError {
    fn from(e: Error) -> Self {
        troupe::ActorError::from_source(e)
    }
}
