//! Node configuration: what `troupe-node --config FILE` reads (TOML) and what
//! [`crate::Node::start`] takes. Every field has a default except the secret's value, which
//! must be set by the user (an empty secret is refused). [`NodeConfig::from_file`] lets the
//! environment override the name, listen and advertised addresses and the secret
//! ([`ENV_VARS`]), so one file serves every replica of a container.

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

/// Overrides `name`.
pub const ENV_NODE_NAME: &str = "TROUPE_NODE_NAME";
/// Overrides `listen`.
pub const ENV_LISTEN: &str = "TROUPE_LISTEN";
/// Overrides `advertise`.
pub const ENV_ADVERTISE: &str = "TROUPE_ADVERTISE";
/// Overrides `secret` with its value.
pub const ENV_SECRET: &str = "TROUPE_SECRET";
/// Overrides `secret` with the contents of the file it names (one trailing newline dropped).
pub const ENV_SECRET_FILE: &str = "TROUPE_SECRET_FILE";
/// Every environment variable [`NodeConfig::from_file`] reads.
pub const ENV_VARS: [&str; 5] = [ENV_NODE_NAME, ENV_LISTEN, ENV_ADVERTISE, ENV_SECRET, ENV_SECRET_FILE];

/// A node's configuration.
///
/// Read from a file with [`NodeConfig::from_file`], which then applies the environment
/// overrides ([`NodeConfig::apply_env`]): `TROUPE_NODE_NAME` replaces `name`, `TROUPE_LISTEN`
/// `listen`, `TROUPE_ADVERTISE` `advertise`, and `TROUPE_SECRET` (the value) or
/// `TROUPE_SECRET_FILE` (a file holding it) `secret`. A variable that is set but empty is
/// refused, and so is setting both secret variables. `toml::from_str` and
/// [`crate::Node::start`] read no environment.
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
    /// The address other nodes reach this node at (`host:port`, the host a DNS name or an IP
    /// address, IPv6 in brackets); default: the bound listen address. It is this node's
    /// identity: what [`crate::Node::addr`] returns, what handshakes state and what refs to
    /// its actors carry, so peers should dial exactly this string. Set it when the node
    /// listens on a wildcard address (`0.0.0.0:7000` in a Kubernetes pod) but is known by a
    /// stable name (`troupe-0.troupe.default.svc.cluster.local:7000`).
    pub advertise: Option<String>,
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
    /// The `[overlay]` section: read and validated by `troupe-cluster`'s live overlays (which
    /// nodes this one connects to and how messages travel; see docs/cluster.md). A node
    /// started without the overlay layer ignores it.
    pub overlay: Option<toml::Table>,
    /// The `[observe]` section: `listen = "host:port"` for the node's operator endpoint
    /// (Prometheus `/metrics`, `/health/live`, `/health/ready`; see docs/operating.md), read by
    /// `troupe node`. Off when absent.
    pub observe: Option<toml::Table>,
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
    /// Monitors one peer may hold on this node's actors; a `Monitor` past it closes the
    /// session (`limit_closes`). Default 100,000.
    pub max_monitors_per_peer: usize,
    /// Links one peer may hold with this node's actors; a `Link` past it closes the session
    /// (`limit_closes`). Default 100,000.
    pub max_links_per_peer: usize,
    /// Global names one peer may hold on this node; a name past it closes the session
    /// (`limit_closes`). Default 10,000.
    pub max_globals_per_peer: usize,
    /// Global names all peers together may hold on this node (its own names do not count); a
    /// name past it closes the session that announced it. Default 100,000.
    pub max_globals: usize,
    /// Bytes of causal frames one label may hold back for their causes; a frame past it
    /// closes its sender's session (`limit_closes`). Default 64 MiB.
    pub max_causal_held_bytes_per_label: usize,
    /// The same for what one peer's session sent. Default 64 MiB.
    pub max_causal_held_bytes_per_session: usize,
    /// The same over the whole node. Default 256 MiB.
    pub max_causal_held_bytes: usize,
    /// Connections one peer may have open to this node at once; one past it is closed after
    /// its handshake (`connections_refused`). Default 16, and never below this node's own
    /// lanes plus one (control, `parallelism` and each channel's, [`NodeConfig::connection_budget`]).
    pub max_connections_per_peer: usize,
    /// Bytes of replies to remote askers this node holds, queued for their peers or being
    /// written to them, over all peers: what askers that never read their answers can make
    /// the node keep (issue 36: several identities held 1.1 GB this way, each under its own
    /// `max_buffer_bytes`). A reply past it closes the session of the peer that holds the most
    /// of these bytes (`limit_closes`; `reply_bytes` in `stats` is the gauge). Default 128 MiB.
    pub max_reply_bytes: usize,
    /// Bytes one peer's connections may hold for large frames (64 KiB and more) still being
    /// received, each counted at its full length once its header is in; a frame past it
    /// closes the session (`limit_closes`; `partial_frame_bytes` in `stats` is the gauge).
    /// Default 64 MiB, and never below this node's own lanes times `max_frame_bytes`
    /// ([`NodeConfig::partial_frame_budget`]).
    pub max_partial_frame_bytes_per_peer: usize,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            name: "node".into(),
            listen: "127.0.0.1:0".into(),
            advertise: None,
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
            overlay: None,
            observe: None,
            max_peers: 1024,
            peer_idle_ms: 60_000,
            max_held_bytes_per_session: 64 << 20,
            max_held_bytes: 256 << 20,
            max_monitors_per_peer: 100_000,
            max_links_per_peer: 100_000,
            max_globals_per_peer: 10_000,
            max_globals: 100_000,
            max_causal_held_bytes_per_label: 64 << 20,
            max_causal_held_bytes_per_session: 64 << 20,
            max_causal_held_bytes: 256 << 20,
            max_connections_per_peer: 16,
            max_reply_bytes: 128 << 20,
            max_partial_frame_bytes_per_peer: 64 << 20,
        }
    }
}

impl NodeConfig {
    /// A configuration with this name and secret, listening on a free loopback port.
    #[must_use]
    pub fn new(name: &str, secret: &str) -> Self {
        Self { name: name.into(), secret: secret.into(), ..Self::default() }
    }

    /// Reads a TOML file, applies the environment overrides ([`NodeConfig::apply_env`]) and
    /// validates the result (so the file may leave `secret` to `TROUPE_SECRET`).
    pub fn from_file(path: &std::path::Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read the node configuration {}", path.display()), e))?;
        let mut cfg: Self = toml::from_str(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))?;
        cfg.apply_env()?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Applies the overrides of the process environment ([`ENV_VARS`]; see [`NodeConfig`]).
    pub fn apply_env(&mut self) -> Result<(), Error> {
        self.apply_env_with(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
    }

    /// Applies the overrides that `var` returns for the names in [`ENV_VARS`] (`None`: not
    /// set). `TROUPE_SECRET_FILE` is read from disk.
    ///
    /// ```
    /// let mut cfg = troupe_remote::NodeConfig::new("a", "s");
    /// cfg.apply_env_with(|k| (k == "TROUPE_ADVERTISE").then(|| "node-a.example:7000".to_owned())).unwrap();
    /// assert_eq!(cfg.advertise.as_deref(), Some("node-a.example:7000"));
    /// ```
    pub fn apply_env_with(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<(), Error> {
        let get = |k: &str| match var(k) {
            Some(v) if v.is_empty() => Err(Error::config(format!("{k} is set but empty; unset it or give a value"))),
            other => Ok(other),
        };
        if let Some(v) = get(ENV_NODE_NAME)? {
            self.name = v;
        }
        if let Some(v) = get(ENV_LISTEN)? {
            self.listen = v;
        }
        if let Some(v) = get(ENV_ADVERTISE)? {
            check_host_port(&v).map_err(|e| Error::config(format!("advertise (from {ENV_ADVERTISE}) = {v:?}: {e}")))?;
            self.advertise = Some(v);
        }
        match (get(ENV_SECRET)?, get(ENV_SECRET_FILE)?) {
            (Some(_), Some(_)) => {
                return Err(Error::config(format!("both {ENV_SECRET} and {ENV_SECRET_FILE} are set; set one")));
            }
            (Some(v), None) => self.secret = v,
            (None, Some(path)) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| Error::io(format!("cannot read the secret file {path} ({ENV_SECRET_FILE})"), e))?;
                let text = text.strip_suffix('\n').unwrap_or(&text);
                self.secret = text.strip_suffix('\r').unwrap_or(text).to_owned();
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// Rejects bad combinations with a message saying what to change.
    pub fn validate(&self) -> Result<(), Error> {
        if self.name.is_empty() {
            return Err(Error::config("name is empty"));
        }
        if self.secret.is_empty() {
            return Err(Error::config("secret is empty; every node of a cluster needs the same non-empty secret"));
        }
        if let Some(a) = &self.advertise {
            check_host_port(a).map_err(|e| Error::config(format!("advertise = {a:?}: {e}")))?;
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
        if self.max_reply_bytes == 0 {
            return Err(Error::config("max_reply_bytes must be at least 1"));
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

    /// The connections one peer may have open to this node: `max_connections_per_peer`, raised
    /// to this node's own lanes plus one when they are more (a cluster's nodes use the same
    /// channels, so a peer needs as many; one more lets a broken lane reconnect while the
    /// old connection is still being closed).
    #[must_use]
    pub fn connection_budget(&self) -> usize {
        let lanes: usize = self.all_channels().iter().map(|c| usize::from(c.parallelism)).sum();
        self.max_connections_per_peer.max(lanes + 1)
    }

    /// The bytes one peer's large frames still being received may hold:
    /// `max_partial_frame_bytes_per_peer`, raised to this node's own lanes times
    /// `max_frame_bytes` when that is more (a peer with the same channels may be sending a
    /// frame of the largest size on each of its lanes at once).
    #[must_use]
    pub fn partial_frame_budget(&self) -> usize {
        let lanes: usize = self.all_channels().iter().map(|c| usize::from(c.parallelism)).sum();
        self.max_partial_frame_bytes_per_peer.max(lanes.saturating_mul(self.max_frame_bytes))
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

/// Checks that `addr` is `host:port` as `advertise` needs it: a non-empty host (a DNS name, an
/// IPv4 address, or an IPv6 address in brackets) and a port from 1 to 65535.
pub(crate) fn check_host_port(addr: &str) -> Result<(), String> {
    const WANT: &str = "expected host:port, e.g. troupe-0.troupe.default.svc.cluster.local:7000";
    if addr.len() > crate::handshake::MAX_NAME {
        return Err(format!("longer than {} bytes", crate::handshake::MAX_NAME));
    }
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(format!("no port; {WANT}"));
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 && !port.starts_with('+') => {}
        _ => return Err(format!("port {port:?} is not a number from 1 to 65535; {WANT}")),
    }
    if let Some(inner) = host.strip_prefix('[') {
        let ok = inner.strip_suffix(']').is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok());
        return if ok { Ok(()) } else { Err(format!("{host:?} is not an IPv6 address in brackets; {WANT}")) };
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() || !name.split('.').all(label_ok) {
        return Err(format!("host {host:?} is not a DNS name or an IPv4 address (IPv6 goes in brackets); {WANT}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_host_port;

    #[test]
    fn host_port_forms() {
        for ok in
            ["localhost:7000", "troupe-0.troupe.default.svc.cluster.local:7000", "10.0.0.1:1", "[::1]:65535", "a.b.:9"]
        {
            assert!(check_host_port(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "host",
            ":7000",
            "host:",
            "host:0",
            "host:70000",
            "host:+1",
            "::1:7000",
            "[::1:7000",
            "a b:1",
            "-a:1",
            "a..b:1",
            "[nope]:1",
        ] {
            assert!(check_host_port(bad).is_err(), "{bad}");
        }
    }
}
