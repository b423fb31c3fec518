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

/// What kind of failure an [`Error`] is.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration has one or more problems; all of them are listed.
    InvalidConfig(Vec<ConfigIssue>),
    /// A file or folder could not be read or written.
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A folder given to `report` (or a sweep) is not a lab run or sweep.
    NotARun(PathBuf),
    /// A recorded file exists but its content cannot be understood.
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line number when there is one.
        detail: String,
    },
    /// A peer runtime's toolchain is not installed.
    MissingToolchain {
        /// The runtime, e.g. `erlang`.
        runtime: String,
        /// The message the build script printed.
        message: String,
    },
    /// The runtime or workload asked for does not exist here.
    Unsupported(String),
    /// The project root (with `peers/` and `Cargo.toml`) could not be found.
    NoProjectRoot,
    /// A child process could not be started.
    Spawn {
        /// The program.
        program: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A sweep or comparison folder was made for a different grid than the one asked for now
    /// (or holds something else).
    SweepMismatch(PathBuf),
    /// Anything else, described in the text.
    Other(String),
}

/// The lab's error type.
#[derive(Debug)]
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
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::new(ErrorKind::Io { path: path.into(), source })
    }

    /// Shorthand for a malformed file.
    pub fn malformed(path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        Error::new(ErrorKind::Malformed { path: path.into(), detail: detail.into() })
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::InvalidConfig(issues) => {
                write!(f, "the configuration has {} problem(s):", issues.len())?;
                for i in issues {
                    write!(f, "\n  - {i}")?;
                }
                Ok(())
            }
            ErrorKind::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ErrorKind::NotARun(p) => write!(
                f,
                "{} is not a lab run or sweep folder (no manifest.json, sweep.json or compare.json \
                 in it); give the folder `troupe lab run`, `sweep` or `compare` wrote",
                p.display()
            ),
            ErrorKind::Malformed { path, detail } => write!(f, "{}: {detail}", path.display()),
            ErrorKind::MissingToolchain { runtime, message } => {
                write!(f, "the {runtime} toolchain is missing: {message}")
            }
            ErrorKind::Unsupported(what) => f.write_str(what),
            ErrorKind::NoProjectRoot => f.write_str(
                "cannot find the Troupe project root (a folder with peers/ and Cargo.toml): \
                 run from inside the project or set TROUPE_HOME",
            ),
            ErrorKind::Spawn { program, source } => {
                write!(f, "cannot start {}: {source}", program.display())
            }
            ErrorKind::SweepMismatch(p) => write!(
                f,
                "{} holds a run, sweep or comparison of a different grid or base config; \
                 use another --out folder or delete it to start over",
                p.display()
            ),
            ErrorKind::Other(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io { source, .. } | ErrorKind::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The lab's result type.
pub type Result<T> = std::result::Result<T, Error>;
