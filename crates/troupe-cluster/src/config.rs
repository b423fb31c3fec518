//! The `[cluster]` section of a node's TOML file ([`ClusterConfig`]): the cluster's name,
//! how to find seeds, the failure detector, gossip, and downing. Every key has a default
//! (Akka Cluster's, where Akka has one); [`ClusterConfig::fast`] is the 100 ms heartbeat
//! profile. Bad values are refused by [`ClusterConfig::validate`] with what to change.

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The wire protocol version of the membership layer; a node speaking another is refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// How a partition is resolved (Akka's split brain resolver as the reference). Nothing is
/// downed automatically unless one is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Downing {
    /// Unreachable members stay unreachable until an operator downs them (the default).
    #[default]
    Off,
    /// The side with more members survives; on a tie, the side holding the lowest address.
    KeepMajority,
    /// A side with at least `quorum_size` members survives; a smaller side downs itself.
    StaticQuorum,
    /// The side holding the oldest member survives (see `down_if_alone`).
    KeepOldest,
}

impl Downing {
    /// Its name as the configuration spells it (`off`, `keep-majority`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Downing::Off => "off",
            Downing::KeepMajority => "keep-majority",
            Downing::StaticQuorum => "static-quorum",
            Downing::KeepOldest => "keep-oldest",
        }
    }
}

/// The `[cluster]` section.
///
/// ```
/// let cfg: troupe_cluster::ClusterConfig = toml::from_str(r#"
///     name = "shop"
///     seeds = ["127.0.0.1:7000"]
///     downing = "keep-majority"
/// "#).unwrap();
/// assert_eq!(cfg.heartbeat_interval_ms, 1000);
/// assert_eq!(cfg.phi_threshold, 8.0);
/// assert!(cfg.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The cluster's name: a node asking to join a cluster of another name is refused.
    pub name: String,
    /// Addresses (`host:port`) of nodes to join through. Empty: this node starts a new
    /// cluster at once. When this node's own address is the first seed, it starts a new
    /// cluster only after no other seed answered for `seed_timeout_ms` (Akka's first-seed rule).
    pub seeds: Vec<String>,
    /// A `host:port` whose name resolves to several addresses (a Kubernetes headless
    /// Service): each resolved address is a seed. Resolved again at every join attempt.
    pub seed_dns: Option<String>,
    /// How long the first seed waits for another seed before starting a new cluster.
    pub seed_timeout_ms: u64,
    /// Join retry backoff: first delay, doubled up to `join_retry_max_ms`.
    pub join_retry_min_ms: u64,
    /// Join retry backoff: longest delay.
    pub join_retry_max_ms: u64,
    /// How often each node heartbeats the members it monitors.
    pub heartbeat_interval_ms: u64,
    /// Phi above which a monitored member is marked unreachable (Akka: 8).
    pub phi_threshold: f64,
    /// Added to the mean heartbeat interval before phi grows (Akka: 3 s).
    pub acceptable_pause_ms: u64,
    /// Floor of the standard deviation of heartbeat intervals (Akka: 100 ms).
    pub min_std_dev_ms: u64,
    /// Heartbeat intervals kept per monitored member (the sliding window; Akka: 1000).
    pub max_sample_size: usize,
    /// How many members monitor each member (its successors on the ring; Akka: 9).
    pub monitored_by: usize,
    /// Period of the background gossip round. Changes are also pushed at once.
    pub gossip_interval_ms: u64,
    /// Members a change is pushed to at once (besides the periodic round).
    pub gossip_fanout: usize,
    /// How partitions are resolved; `off` by default.
    pub downing: Downing,
    /// How long membership and reachability must stay unchanged before downing acts.
    pub stable_after_ms: u64,
    /// `static-quorum`: the smallest side that survives.
    pub quorum_size: usize,
    /// `keep-oldest`: when the oldest member is alone on its side, it is the one downed.
    pub down_if_alone: bool,
    /// A node that was downed (by a strategy or an operator) joins again as a new
    /// incarnation once a seed or former member answers. Default false: it stays out.
    pub rejoin_when_downed: bool,
    /// Virtual nodes per member on the public hash ring ([`crate::HashRing`]).
    pub vnodes: usize,
    /// Most members a gossip may carry; a larger one is refused as garbage.
    pub max_members: usize,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            name: "troupe".into(),
            seeds: Vec::new(),
            seed_dns: None,
            seed_timeout_ms: 5_000,
            join_retry_min_ms: 200,
            join_retry_max_ms: 5_000,
            heartbeat_interval_ms: 1_000,
            phi_threshold: 8.0,
            acceptable_pause_ms: 3_000,
            min_std_dev_ms: 100,
            max_sample_size: 1_000,
            monitored_by: 9,
            gossip_interval_ms: 1_000,
            gossip_fanout: 3,
            downing: Downing::Off,
            stable_after_ms: 20_000,
            quorum_size: 0,
            down_if_alone: true,
            rejoin_when_downed: false,
            vnodes: 128,
            max_members: 10_000,
        }
    }
}

impl ClusterConfig {
    /// The fast profile: 100 ms heartbeats, 200 ms acceptable pause, 50 ms minimum standard
    /// deviation, 200 ms gossip, 1 s stable-after: a SIGKILLed member is unreachable
    /// everywhere in well under a second on loopback (measured by `lab micro cluster-detect`).
    #[must_use]
    pub fn fast() -> Self {
        Self {
            heartbeat_interval_ms: 100,
            acceptable_pause_ms: 200,
            min_std_dev_ms: 50,
            gossip_interval_ms: 200,
            stable_after_ms: 1_000,
            seed_timeout_ms: 1_000,
            join_retry_min_ms: 100,
            join_retry_max_ms: 1_000,
            ..Self::default()
        }
    }

    /// Reads the `[cluster]` table of a node's configuration.
    pub fn from_table(table: &toml::Table) -> Result<Self, Error> {
        let cfg: Self = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| Error::config(format!("[cluster]: {}", e.message())))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Rejects bad combinations with a message saying what to change.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::config(format!("[cluster] {m}")));
        if self.name.is_empty() {
            return bad("name is empty; every node of a cluster needs the same cluster name");
        }
        if self.heartbeat_interval_ms == 0 || self.gossip_interval_ms == 0 {
            return bad("heartbeat_interval_ms and gossip_interval_ms must be at least 1");
        }
        if !(self.phi_threshold.is_finite() && self.phi_threshold > 0.0) {
            return bad("phi_threshold must be a positive number (Akka uses 8)");
        }
        if self.max_sample_size < 2 {
            return bad("max_sample_size must be at least 2");
        }
        if self.monitored_by == 0 || self.gossip_fanout == 0 {
            return bad("monitored_by and gossip_fanout must be at least 1");
        }
        if self.join_retry_min_ms == 0 || self.join_retry_max_ms < self.join_retry_min_ms {
            return bad("join_retry_min_ms must be at least 1 and join_retry_max_ms at least as large");
        }
        if self.downing == Downing::StaticQuorum && self.quorum_size == 0 {
            return bad("downing = \"static-quorum\" needs quorum_size (the smallest side that survives)");
        }
        if self.vnodes == 0 || self.vnodes > 4096 {
            return bad("vnodes must be between 1 and 4096");
        }
        if self.max_members < 2 {
            return bad("max_members must be at least 2");
        }
        for s in self.seeds.iter().chain(self.seed_dns.iter()) {
            if s.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
                return Err(Error::config(format!("[cluster] seed {s:?} is not host:port")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_the_key() {
        let t: toml::Table = toml::from_str("nmae = \"x\"").unwrap();
        let e = ClusterConfig::from_table(&t).unwrap_err().to_string();
        assert!(e.contains("nmae"), "{e}");
        let t: toml::Table = toml::from_str("downing = \"static-quorum\"").unwrap();
        let e = ClusterConfig::from_table(&t).unwrap_err().to_string();
        assert!(e.contains("quorum_size"), "{e}");
        let t: toml::Table = toml::from_str("seeds = [\"nohost\"]").unwrap();
        assert!(ClusterConfig::from_table(&t).unwrap_err().to_string().contains("host:port"));
        let t: toml::Table = toml::from_str("downing = \"keep-majority\"").unwrap();
        assert_eq!(ClusterConfig::from_table(&t).unwrap().downing, Downing::KeepMajority);
    }
}
