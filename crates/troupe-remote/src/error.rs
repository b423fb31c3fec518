//! Typed errors of the distribution layer: what happened and what to do. Library code returns
//! [`Error`]; only the `troupe-node` binary turns it into an exit code.
//!
//! Rules:
//! 1. An error caused by another (an `io::Error` of a socket or a file, a TLS or codec error)
//!    keeps it as its `source()`; the text of the [`ErrorKind`] says what was being done, not
//!    the cause again. [`troupe::error_chain`] prints both on one line.
//! 2. A timeout is [`ErrorKind::Timeout`], never [`ErrorKind::Closed`].

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An I/O operation failed: the text names the operation, the `io::Error` is the source.
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
    /// The address did not answer or refused the connection (the cause, if any, is the source).
    Unreachable(String),
    /// No answer within the time limit.
    Timeout(String),
    /// The node's router (an overlay, [`crate::Router`]) knows no path to that node.
    NoRoute(String),
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
    /// Another operation failed: the text names it, the source says why.
    Other(String),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(what) => write!(f, "i/o error: {what}"),
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
            ErrorKind::NoRoute(to) => write!(f, "no route to {to}: the overlay knows no path to that node (is it a member? is the overlay partitioned?)"),
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
            ErrorKind::Other(what) => write!(f, "{what} failed"),
        }
    }
}

/// An error of the distribution layer: its [`ErrorKind`] and, when another error caused it,
/// that error as its `source()` (rule 1).
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::error::Error as _;
/// use troupe_remote::{ErrorKind, Node, NodeConfig};
/// let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
/// let mut cfg = NodeConfig::new("a", "secret");
/// cfg.listen = taken.local_addr().unwrap().to_string();
/// let Err(e) = Node::start(cfg).await else { panic!("bound a taken port") };
/// assert!(matches!(e.kind, ErrorKind::Io(_)));
/// let io = e.source().unwrap().downcast_ref::<std::io::Error>().unwrap();
/// assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);
/// println!("{}", troupe::error_chain(&e)); // i/o error: cannot listen on ...: Address in use ...
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self { kind, source: None }
    }

    /// An error of `kind` caused by `source` (crates above the node layer use it to keep the
    /// cause of what they report).
    pub fn with_source(kind: ErrorKind, source: impl StdError + Send + Sync + 'static) -> Self {
        Self { kind, source: Some(Arc::new(source)) }
    }

    /// An I/O error: `what` names the operation (`"cannot listen on 0.0.0.0:4000"`), `e` is
    /// kept as the source.
    pub(crate) fn io(what: impl Into<String>, e: std::io::Error) -> Self {
        Self::with_source(ErrorKind::Io(what.into()), e)
    }

    /// `what` failed because of `e` (kept as the source).
    #[cfg(feature = "bench")]
    pub(crate) fn other(what: impl Into<String>, e: impl StdError + Send + Sync + 'static) -> Self {
        Self::with_source(ErrorKind::Other(what.into()), e)
    }

    /// A configuration error (crates above the node layer report their sections with it).
    pub fn config(e: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Config(e.to_string()))
    }

    pub(crate) fn malformed(e: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Malformed(e.to_string()))
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
        Self::new(kind)
    }
}

/// `?` in an actor's `started` or a `TryActor`'s handler: the node error is kept as the source.
impl From<Error> for troupe::ActorError {
    fn from(e: Error) -> Self {
        troupe::ActorError::from_source(e)
    }
}
