//! Typed errors of the distribution layer: what happened and what to do. Library code returns
//! [`Error`]; only the `troupe-node` binary turns it into an exit code.

use std::fmt;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A socket operation failed.
    Io(String),
    /// The configuration is invalid.
    Config(String),
    /// The peer speaks another protocol version.
    Version {
        /// Ours.
        ours: u16,
        /// Theirs.
        theirs: u16,
    },
    /// The peer failed the shared-secret challenge (or we failed its).
    Auth(String),
    /// The handshake broke off or was malformed.
    Handshake(String),
    /// No node of that name is known (connect to it by address first).
    UnknownNode(String),
    /// The address did not answer or refused the connection.
    Unreachable(String),
    /// No answer within the time limit.
    Timeout(String),
    /// The node has no actor registered under that name.
    NoSuchName(String),
    /// The actor accepts another message type than the ref was built for.
    TypeMismatch {
        /// The tag the caller asked for.
        expected: String,
        /// The tag the actor accepts.
        found: String,
    },
    /// The name is already registered.
    NameTaken(String),
    /// A frame was malformed.
    Malformed(String),
    /// A frame exceeded the size limit.
    FrameTooLarge {
        /// Its declared size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The connection or node is closed.
    Closed,
    /// A peer made this node exceed a resource limit; the session or connection was closed.
    LimitExceeded(String),
}

/// An error of the distribution layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self { kind }
    }

    pub(crate) fn io(e: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Io(e.to_string()))
    }

    /// A configuration error (crates above the node layer report their sections with it).
    pub fn config(e: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Config(e.to_string()))
    }

    pub(crate) fn malformed(e: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Malformed(e.to_string()))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io(e) => write!(f, "i/o error: {e}"),
            ErrorKind::Config(e) => write!(f, "invalid node configuration: {e}"),
            ErrorKind::Version { ours, theirs } => {
                write!(f, "protocol version mismatch: we speak {ours}, the peer {theirs}; run the same Troupe release on both")
            }
            ErrorKind::Auth(e) => write!(f, "authentication failed: {e}; check both nodes use the same secret"),
            ErrorKind::Handshake(e) => write!(f, "handshake failed: {e}"),
            ErrorKind::UnknownNode(n) => {
                write!(f, "unknown node {n:?}: connect to it by address first or list it in `peers`")
            }
            ErrorKind::Unreachable(a) => write!(f, "node at {a} is unreachable; check it runs and the address is right"),
            ErrorKind::Timeout(what) => write!(f, "timed out: {what}"),
            ErrorKind::NoSuchName(n) => write!(f, "no actor is registered as {n:?} on that node"),
            ErrorKind::TypeMismatch { expected, found } => write!(
                f,
                "message type mismatch: the ref is for {expected:?} but the actor accepts {found:?}; forge it with the right type"
            ),
            ErrorKind::NameTaken(n) => write!(f, "the name {n:?} is already registered; pick another or unregister it"),
            ErrorKind::Malformed(e) => write!(f, "malformed frame: {e}"),
            ErrorKind::FrameTooLarge { size, max } => {
                write!(f, "frame of {size} bytes exceeds the limit of {max}; raise max_frame_bytes on both nodes")
            }
            ErrorKind::Closed => f.write_str("the node or connection is closed"),
            ErrorKind::LimitExceeded(e) => write!(f, "limit exceeded: {e}; the session was closed"),
        }
    }
}

impl std::error::Error for Error {}
