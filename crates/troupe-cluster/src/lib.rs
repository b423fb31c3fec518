//! Troupe clusters (work in progress in this commit: the configuration only).

mod config;
mod error;

pub use config::{ClusterConfig, Downing, PROTOCOL_VERSION};
pub use error::{Error, ErrorKind};
