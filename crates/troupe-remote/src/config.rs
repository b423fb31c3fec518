//! Node configuration: what `troupe-node --config FILE` reads (TOML) and what
//! [`crate::Node::start`] takes. Every field has a default except the secret's value, which
//! must be set by the user (an empty secret is refused).

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::frame::DEFAULT_MAX_FRAME;

/// A named channel and its parallelism (Partisan's named channels, seed 004 §4).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Its name (`control` and `default` are built in).
    pub name: String,
    /// Connections per peer for this channel (default 1).
    #[serde(default = "one")]
    pub parallelism: u16,
    /// Pick the connection by a hash of sender and receiver (true, the default: per-pair FIFO)
    /// or at random (false).
    #[serde(default = "yes")]
    pub affinity: bool,
}

fn one() -> u16 {
    1
}
fn yes() -> bool {
    true
}

/// A node's configuration.
///
/// ```
/// let cfg: troupe_remote::NodeConfig = toml::from_str(r#"
///     name = "a"
///     listen = "127.0.0.1:0"
///     secret = "change me"
///     parallelism = 4
/// "#).unwrap();
/// assert_eq!(cfg.heartbeat_interval_ms, 1000);
/// assert!(cfg.validate().is_ok());
/// ```
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NodeConfig {
    /// The node's name (unique in a cluster).
    pub name: String,
    /// The address to listen on; port 0 picks a free one.
    pub listen: String,
    /// The shared secret every node of the cluster must hold.
    pub secret: String,
    /// Addresses of peers to connect to at start and to keep reconnecting to.
    pub peers: Vec<String>,
    /// How often a heartbeat goes to each peer.
    pub heartbeat_interval_ms: u64,
    /// A peer silent for this long is declared down (`NoConnection`).
    pub heartbeat_timeout_ms: u64,
    /// Deadline of a handshake.
    pub handshake_timeout_ms: u64,
    /// Deadline of a TCP connect.
    pub connect_timeout_ms: u64,
    /// Largest frame accepted (bytes); larger closes the connection.
    pub max_frame_bytes: usize,
    /// Outbound bytes buffered per connection before sends fail with `Full`.
    pub max_buffer_bytes: usize,
    /// Connections per peer for the `default` channel.
    pub parallelism: u16,
    /// Affinity on the `default` channel (see [`ChannelConfig::affinity`]).
    pub affinity: bool,
    /// Further named channels.
    pub channels: Vec<ChannelConfig>,
    /// A frame sent on an idle connection is written by the sender itself instead of waking
    /// the connection's writer task (lower latency for lone messages; streams of frames are
    /// batched either way). Default true; false always uses the writer task.
    pub write_through: bool,
    /// After receiving data, a connection's reader keeps polling it (yielding to other tasks
    /// between polls) for this many microseconds before it lets its thread sleep, trading CPU
    /// for latency as BEAM's schedulers do by spinning before they sleep. Default 0 (off).
    pub spin_us: u64,
    /// Unacknowledged frames sent with `ack` are retransmitted after this long.
    pub ack_timeout_ms: u64,
    /// Reconnect backoff: first delay.
    pub reconnect_min_ms: u64,
    /// Reconnect backoff: longest delay.
    pub reconnect_max_ms: u64,
    /// Built-in demo/test services `troupe-node` starts (see [`crate::services`]).
    pub services: Vec<String>,
    /// Mutual TLS under the handshake (`[tls]`); off when absent. See [`crate::TlsConfig`].
    pub tls: Option<crate::TlsConfig>,
    /// The `[cluster]` section: read and validated by `troupe-cluster` (membership, failure
    /// detection, downing; see docs/cluster.md). A node started without the cluster layer
    /// ignores it.
    pub cluster: Option<toml::Table>,
    /// Most peers a node keeps in its table (connected or not; at most 65,534). When it is full,
    /// the least recently seen unconnected peer nobody refers to is reclaimed; when none can
    /// be, a new peer from the network is refused (`peers_refused`).
    pub max_peers: usize,
    /// An unconnected, unconfigured peer nobody refers to is forgotten after this long idle.
    pub peer_idle_ms: u64,
    /// Bytes of out-of-order acknowledged frames one peer's session may hold back; past it the
    /// session is closed (`held_limit_closes`).
    pub max_held_bytes_per_session: usize,
    /// The same over all sessions of the node.
    pub max_held_bytes: usize,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            name: "node".into(),
            listen: "127.0.0.1:0".into(),
            secret: String::new(),
            peers: Vec::new(),
            heartbeat_interval_ms: 1000,
            heartbeat_timeout_ms: 5000,
            handshake_timeout_ms: 5000,
            connect_timeout_ms: 2000,
            max_frame_bytes: DEFAULT_MAX_FRAME,
            max_buffer_bytes: 256 << 20,
            parallelism: 1,
            affinity: true,
            channels: Vec::new(),
            write_through: true,
            spin_us: 0,
            ack_timeout_ms: 100,
            reconnect_min_ms: 100,
            reconnect_max_ms: 5000,
            services: Vec::new(),
            tls: None,
            cluster: None,
            max_peers: 1024,
            peer_idle_ms: 60_000,
            max_held_bytes_per_session: 64 << 20,
            max_held_bytes: 256 << 20,
        }
    }
}

impl NodeConfig {
    /// A configuration with this name and secret, listening on a free loopback port.
    #[must_use]
    pub fn new(name: &str, secret: &str) -> Self {
        Self { name: name.into(), secret: secret.into(), ..Self::default() }
    }

    /// Reads a TOML file.
    pub fn from_file(path: &std::path::Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read the node configuration {}: {e}", path.display())))?;
        let cfg: Self = toml::from_str(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Rejects bad combinations with a message saying what to change.
    pub fn validate(&self) -> Result<(), Error> {
        if self.name.is_empty() {
            return Err(Error::config("name is empty"));
        }
        if self.secret.is_empty() {
            return Err(Error::config("secret is empty; every node of a cluster needs the same non-empty secret"));
        }
        if self.parallelism == 0 || self.channels.iter().any(|c| c.parallelism == 0) {
            return Err(Error::config("parallelism must be at least 1"));
        }
        if self.heartbeat_interval_ms == 0 || self.heartbeat_timeout_ms <= self.heartbeat_interval_ms {
            return Err(Error::config("heartbeat_timeout_ms must exceed heartbeat_interval_ms (> 0)"));
        }
        if self.max_frame_bytes < 1024 {
            return Err(Error::config("max_frame_bytes must be at least 1024"));
        }
        if self.max_peers == 0 || self.max_peers > usize::from(crate::node::MAX_PEER_INDEX) {
            return Err(Error::config(format!("max_peers must be between 1 and {}", crate::node::MAX_PEER_INDEX)));
        }
        if self.max_held_bytes_per_session == 0 || self.max_held_bytes < self.max_held_bytes_per_session {
            return Err(Error::config(
                "max_held_bytes_per_session must be at least 1 and max_held_bytes at least as large",
            ));
        }
        let mut names = vec!["control", "default"];
        for c in &self.channels {
            if names.contains(&c.name.as_str()) {
                return Err(Error::config(format!(
                    "channel {:?} is defined twice (control and default are built in)",
                    c.name
                )));
            }
            names.push(&c.name);
        }
        Ok(())
    }

    /// All channels in index order: `control` (0), `default` (1), then the named ones.
    #[must_use]
    pub fn all_channels(&self) -> Vec<ChannelConfig> {
        let mut v = vec![
            ChannelConfig { name: "control".into(), parallelism: 1, affinity: true },
            ChannelConfig { name: "default".into(), parallelism: self.parallelism, affinity: self.affinity },
        ];
        v.extend(self.channels.iter().cloned());
        v
    }
}
