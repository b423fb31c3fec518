//! The workloads' own error type: what goes wrong in a system under test, by kind, instead of
//! the lab's catch-all. It travels through the core as [`troupe_lab::ErrorKind::Workload`] with
//! its type kept, so a caller can tell a node that would not start from a set-up that timed out
//! ([`troupe_lab::Error::workload_error`]); its message is the whole story, written once.
//!
//! ```
//! use troupe_lab_workloads::SutError;
//!
//! let e: troupe_lab::Error = SutError::Setup("the chats did not all register with discovery in time".into()).into();
//! assert_eq!(e.to_string(), "the chats did not all register with discovery in time");
//! assert!(matches!(e.workload_error::<SutError>(), Some(SutError::Setup(_))));
//! ```

/// What went wrong in a workload's system under test.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SutError {
    /// The environment contract: a variable the lab hands a program is missing or malformed.
    #[error("{0}")]
    Environment(String),
    /// The process's own machinery: its tokio runtime, its standard streams, a loopback port.
    #[error("{0}")]
    Process(String),
    /// A node of the system under test could not start, export or register an actor, or
    /// reach or find another node or actor.
    #[error("{0}")]
    Node(String),
    /// A set-up step did not complete: in time, in the expected shape, or at all.
    #[error("{0}")]
    Setup(String),
    /// A program (role) the workload does not have.
    #[error("{0}")]
    Role(String),
    /// An analysis handed to a workload that is another workload's.
    #[error("{0}")]
    Analysis(String),
}

impl From<SutError> for troupe_lab::Error {
    fn from(e: SutError) -> Self {
        troupe_lab::Error::workload(e)
    }
}
