//! The crate's typed error: [`Error`] with a `#[non_exhaustive]` [`ErrorKind`]. Messages say
//! what happened and what to do.

use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration value was refused (the text names the key).
    Config(String),
    /// The node layer failed (listen, connect, handshake).
    Node(String),
    /// The cluster daemon has stopped (the node left, was downed, or shut down).
    Stopped,
    /// No answer in time.
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
    /// The cluster daemon failed (a panic; `daemon.rs` rule 6): the membership has stopped and
    /// is not restarted; the text says why.
    DaemonFailed(String),
}

/// The crate's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn config(m: impl Into<String>) -> Self {
        Self { kind: ErrorKind::Config(m.into()) }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self { kind }
    }
}

impl From<troupe_remote::Error> for Error {
    fn from(e: troupe_remote::Error) -> Self {
        Self { kind: ErrorKind::Node(e.to_string()) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Config(m) => write!(f, "invalid cluster configuration: {m}"),
            ErrorKind::Node(m) => write!(f, "{m}"),
            ErrorKind::Stopped => write!(f, "the cluster daemon has stopped (this node left or was downed)"),
            ErrorKind::Timeout(m) => write!(f, "timed out: {m}"),
            ErrorKind::TypeMismatch { expected, found } => {
                write!(f, "type mismatch: asked for {expected}, but it accepts {found}")
            }
            ErrorKind::NameTaken(m) => write!(f, "name already registered in the cluster: {m}"),
            ErrorKind::DaemonFailed(m) => write!(
                f,
                "the cluster membership has stopped: {m}; this node is no longer a member, start a new Cluster"
            ),
        }
    }
}

impl std::error::Error for Error {}
