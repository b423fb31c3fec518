//! The crate's typed errors.

use std::fmt;
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
    /// The node refused (export failed).
    Node(String),
}

/// The error of replicator operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Timeout { key, needed, acked, waited } => write!(
                f,
                "{key}: {acked} of the {needed} replicas needed answered within {waited:?}; the write (if any) \
                 is applied on this node and will spread when members answer; retry, or lower the consistency \
                 level if fewer members are reachable"
            ),
            ErrorKind::TypeMismatch { key, expected, found } => {
                write!(f, "{key} holds a {found}, not a {expected}; use another key name")
            }
            ErrorKind::Stopped => f.write_str("the replicator stopped"),
            ErrorKind::Node(e) => write!(f, "node: {e}"),
        }
    }
}

impl std::error::Error for Error {}
