//! The lab's typed error: one `Error` carrying a `#[non_exhaustive]` kind, so the CLI can map
//! each kind to a documented exit code and every message says what happened and what to do.

use std::fmt;
use std::path::PathBuf;

/// One problem found in a configuration: the key, the value given and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    /// The key the problem is about (a `+`-joined pair for cross-key rules).
    pub key: String,
    /// The value as given, rendered as text (`(missing)` when absent).
    pub value: String,
    /// What is wrong and what is allowed.
    pub problem: String,
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.key, self.value, self.problem)
    }
}

/// What kind of failure an [`Error`] is. Each variant's message says everything, its cause
/// included: the lab's errors expose no `source()`, so a printer of error chains (`{:#}` of
/// anyhow) writes each message once instead of "x: cause: cause".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration has one or more problems; all of them are listed.
    #[error("the configuration has {} problem(s):{}", .0.len(), list(.0))]
    InvalidConfig(Vec<ConfigIssue>),
    /// A file or folder could not be read or written.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        cause: std::io::Error,
    },
    /// A folder given to `report` (or a sweep) is not a lab run or sweep.
    #[error(
        "{} is not a lab run or sweep folder (no manifest.json, sweep.json or compare.json in it); give the \
         folder `troupe lab run`, `sweep` or `compare` wrote",
        .0.display()
    )]
    NotARun(PathBuf),
    /// A recorded file exists but its content cannot be understood.
    #[error("{}: {detail}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line number when there is one.
        detail: String,
    },
    /// A peer runtime's toolchain is not installed.
    #[error("the {runtime} toolchain is missing: {message}")]
    MissingToolchain {
        /// The runtime, e.g. `erlang`.
        runtime: String,
        /// The message the build script printed.
        message: String,
    },
    /// The runtime or workload asked for does not exist here.
    #[error("{0}")]
    Unsupported(String),
    /// The project root (with `peers/` and `Cargo.toml`) could not be found.
    #[error(
        "cannot find the Troupe project root (a folder with peers/ and Cargo.toml): run from inside the project \
         or set TROUPE_HOME"
    )]
    NoProjectRoot,
    /// A child process could not be started.
    #[error("cannot start {}: {cause}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The underlying error.
        cause: std::io::Error,
    },
    /// A sweep or comparison folder was made for a different grid than the one asked for now
    /// (or holds something else).
    #[error(
        "{} holds a run, sweep or comparison of a different grid or base config; use another --out folder or \
         delete it to start over",
        .0.display()
    )]
    SweepMismatch(PathBuf),
    /// A workload's own error (its system under test, its node processes), kept with its type
    /// so a caller can tell it apart ([`Error::workload_error`]); shown as its own message.
    #[error("{0}")]
    Workload(Box<dyn std::error::Error + Send + Sync>),
    /// Anything else, described in the text.
    #[error("{0}")]
    Other(String),
}

fn list(issues: &[ConfigIssue]) -> String {
    issues.iter().map(|i| format!("\n  - {i}")).collect()
}

/// The lab's error type: a [`ErrorKind`], displayed as its message.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct Error {
    kind: ErrorKind,
}

impl Error {
    /// Wraps a kind.
    pub fn new(kind: ErrorKind) -> Self {
        Error { kind }
    }

    /// The kind of failure.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Shorthand for an I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        Error::new(ErrorKind::Io { path: path.into(), cause })
    }

    /// Shorthand for a malformed file.
    pub fn malformed(path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        Error::new(ErrorKind::Malformed { path: path.into(), detail: detail.into() })
    }

    /// A workload's own error ([`ErrorKind::Workload`]).
    pub fn workload(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::new(ErrorKind::Workload(Box::new(e)))
    }

    /// The workload's own error inside, as its type, if it is one of type `E`.
    pub fn workload_error<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match &self.kind {
            ErrorKind::Workload(e) => e.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// Shorthand for [`ErrorKind::Other`].
    pub fn other(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Other(msg.into()))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

/// ` (did you mean `x`?)` when one of `known` is close to `name` (a typo: Jaro-Winkler
/// similarity of at least 0.8), else empty. For messages about a mistyped key, workload or
/// runtime.
pub fn did_you_mean(name: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// The lab's result type.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_written_once_even_by_a_chain_printer() {
        let e = Error::io("/no/such", std::io::Error::new(std::io::ErrorKind::NotFound, "no such folder"));
        assert_eq!(e.to_string(), "/no/such: no such folder");
        assert!(std::error::Error::source(&e).is_none(), "the cause is in the message, not a second link");
    }

    #[test]
    fn a_workload_error_keeps_its_type_and_message() {
        #[derive(Debug, thiserror::Error)]
        #[error("node server-1 did not start: address in use")]
        struct NodeDown;
        let e = Error::workload(NodeDown);
        assert_eq!(e.to_string(), "node server-1 did not start: address in use");
        assert!(e.workload_error::<NodeDown>().is_some());
        assert!(Error::other("x").workload_error::<NodeDown>().is_none());
        assert!(std::error::Error::source(&e).is_none(), "the message is the error's own, written once");
    }

    #[test]
    fn config_issues_are_listed() {
        let e = Error::new(ErrorKind::InvalidConfig(vec![ConfigIssue {
            key: "pairs".into(),
            value: "0".into(),
            problem: "out of range".into(),
        }]));
        assert_eq!(e.to_string(), "the configuration has 1 problem(s):\n  - pairs = 0: out of range");
        assert_eq!(did_you_mean("suprevisors", &["pairs", "supervisors"]), " (did you mean `supervisors`?)");
    }
}
