//! The `[overlay]` section of a node's TOML file ([`OverlayConfig`]): which overlay a live
//! node runs and its parameters. Every key has a default (`kind = "full_mesh"`); bad values
//! are refused at start by [`OverlayConfig::validate`], naming the key and what is allowed.
//!
//! Rules:
//! 1. `kind` is one of [`LiveKind::ALLOWED`] or a name registered in the
//!    [`OverlayRegistry`] the section is validated with (`registry.rs` rule 1; a user-defined
//!    overlay reads `contacts`, `peers`, `tick_ms` and `max_hops`, and rules 2 and 3 do not
//!    apply to it).
//! 2. `static`: each `peers` entry names a node by address (`name@host:port` or `host:port`);
//!    a bare name is an unknown node. `peers` may be empty: such a node connects to nobody
//!    and only accepts the nodes that list it. `client_server`: `role` is `client` or
//!    `server`; a client needs at least one entry in `servers`.
//! 3. `hyparview`: `active_size >= 1`, `passive_size >= 1`, `shuffle_interval_ms >= 1`.
//!    `amqp`: `amqp_url` is an `amqp://` URL.
//! 4. Every address list holds `host:port` entries (optionally `name@` in front).
//! 5. Under any kind but `full_mesh`, the node-level `peers` list must be empty: it keeps
//!    connections to every listed node, which the overlay forbids (checked by
//!    [`OverlayConfig::check_node`]). A `[cluster]` section runs on any overlay (the engine's
//!    rule 9: its gossip and heartbeats go to the overlay's neighbours, the rest through the
//!    overlay's router, `links.rs`).

use serde::{Deserialize, Serialize};

use super::registry::{OverlayRegistry, Resolved};
use crate::error::Error;
use crate::overlay::hyparview::HyParViewConfig;

/// The overlays a live node can run (rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LiveKind {
    /// Every node connects to every node it learns of (the default).
    FullMesh,
    /// Each node connects only to the peers its configuration lists.
    Static,
    /// Clients connect only to servers; servers forward between clients.
    ClientServer,
    /// HyParView membership with Plumtree broadcast.
    Hyparview,
    /// Publish-subscribe through an AMQP broker (RabbitMQ): nodes connect to the broker only.
    Amqp,
    /// A user-defined overlay (a [`super::PeerService`] registered by name in an
    /// [`OverlayRegistry`]); its name is the section's `kind`. [`LiveKind::parse`] never
    /// returns it.
    Registered,
}

impl LiveKind {
    /// The values `kind` accepts.
    pub const ALLOWED: &'static str = "full_mesh, static, client_server, hyparview, amqp";

    /// Parses a built-in `kind` value, naming the allowed values otherwise (registered names:
    /// [`OverlayRegistry`]).
    ///
    /// ```
    /// use troupe_cluster::overlay::live::LiveKind;
    /// assert_eq!(LiveKind::parse("static").unwrap(), LiveKind::Static);
    /// assert!(LiveKind::parse("ring").unwrap_err().to_string().contains("full_mesh, static"));
    /// ```
    pub fn parse(s: &str) -> Result<Self, Error> {
        Ok(match s {
            "full_mesh" => Self::FullMesh,
            "static" => Self::Static,
            "client_server" => Self::ClientServer,
            "hyparview" => Self::Hyparview,
            "amqp" => Self::Amqp,
            other => {
                return Err(Error::config(format!(
                    "[overlay] kind = {other:?} does not exist; allowed: {}",
                    Self::ALLOWED
                )))
            }
        })
    }
}

/// The `[overlay]` section.
///
/// ```
/// use troupe_cluster::overlay::live::{LiveKind, OverlayConfig};
/// let t: toml::Table = toml::from_str("kind = \"hyparview\"\ncontacts = [\"127.0.0.1:7001\"]").unwrap();
/// let cfg = OverlayConfig::from_table(&t).unwrap();
/// assert_eq!(cfg.kind().unwrap(), LiveKind::Hyparview);
/// assert_eq!(cfg.active_size, 5);
/// let t: toml::Table = toml::from_str("kind = \"hyparview\"\nactive_size = 0").unwrap();
/// assert!(OverlayConfig::from_table(&t).unwrap_err().to_string().contains("active_size"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OverlayConfig {
    /// `full_mesh` (default), `static`, `client_server`, `hyparview` or `amqp`.
    pub kind: String,
    /// `static`: the only nodes this one connects to.
    pub peers: Vec<String>,
    /// `client_server`: `client` or `server`.
    pub role: String,
    /// `client_server`: the servers (a client dials them; servers dial each other).
    pub servers: Vec<String>,
    /// `full_mesh` and `hyparview`: nodes to join through (tried in order until one answers).
    pub contacts: Vec<String>,
    /// `hyparview`: active view size.
    pub active_size: usize,
    /// `hyparview`: passive view size.
    pub passive_size: usize,
    /// `hyparview`: shuffle period.
    pub shuffle_interval_ms: u64,
    /// `amqp`: the broker (`amqp://user:password@host:port/vhost`).
    pub amqp_url: String,
    /// Period of the overlay's timer (Plumtree announcements and grafts, healing, sweeping
    /// connections to non-neighbours).
    pub tick_ms: u64,
    /// Hops a forwarded message may travel before it is dropped.
    pub max_hops: u32,
    /// Route the runtime's own traffic (typed sends, asks, monitors, links) to non-neighbours
    /// through neighbours (`links.rs`); `false`: nodes reach non-neighbours directly, and no
    /// link states are announced (full mesh and AMQP never route).
    pub routing: bool,
}

impl Default for OverlayConfig {
    fn default() -> Self {
        let hv = HyParViewConfig::default();
        Self {
            kind: "full_mesh".into(),
            peers: Vec::new(),
            role: "client".into(),
            servers: Vec::new(),
            contacts: Vec::new(),
            active_size: hv.active_size,
            passive_size: hv.passive_size,
            shuffle_interval_ms: 1_000,
            amqp_url: String::new(),
            tick_ms: 50,
            max_hops: 32,
            routing: true,
        }
    }
}

/// The address part of `name@host:port` or `host:port`.
#[must_use]
pub fn addr_of(entry: &str) -> &str {
    entry.rsplit_once('@').map_or(entry, |(_, a)| a)
}

fn check_addrs(key: &str, list: &[String]) -> Result<(), Error> {
    for e in list {
        let a = addr_of(e);
        if a.rsplit_once(':').and_then(|(h, p)| (!h.is_empty()).then(|| p.parse::<u16>().ok()).flatten()).is_none() {
            return Err(Error::config(format!(
                "[overlay] {key} entry {e:?} names no known node: give name@host:port or host:port"
            )));
        }
    }
    Ok(())
}

impl OverlayConfig {
    /// Reads and validates the `[overlay]` table of a node's configuration (built-in kinds
    /// only: [`OverlayConfig::from_table_with`] accepts registered ones too).
    pub fn from_table(table: &toml::Table) -> Result<Self, Error> {
        Self::from_table_with(table, &OverlayRegistry::new())
    }

    /// Reads the `[overlay]` table and validates it against `overlays` (rules 1 to 4).
    pub fn from_table_with(table: &toml::Table, overlays: &OverlayRegistry) -> Result<Self, Error> {
        let cfg: Self = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| Error::config(format!("[overlay]: {}", e.message())))?;
        cfg.validate_with(overlays)?;
        Ok(cfg)
    }

    /// The overlay's kind, when it is a built-in one (rule 1).
    pub fn kind(&self) -> Result<LiveKind, Error> {
        LiveKind::parse(&self.kind)
    }

    /// Whether this node is a client-server server.
    #[must_use]
    pub fn is_server(&self) -> bool {
        self.role == "server"
    }

    /// HyParView's parameters from this section.
    #[must_use]
    pub fn hyparview(&self) -> HyParViewConfig {
        HyParViewConfig {
            active_size: self.active_size,
            passive_size: self.passive_size,
            shuffle_ms: self.shuffle_interval_ms,
            ..HyParViewConfig::default()
        }
    }

    /// Rules 1 to 4, built-in kinds only.
    pub fn validate(&self) -> Result<(), Error> {
        self.validate_with(&OverlayRegistry::new())
    }

    /// Rules 1 to 4, with the kinds `overlays` knows.
    pub fn validate_with(&self, overlays: &OverlayRegistry) -> Result<(), Error> {
        let bad = |m: String| Err(Error::config(format!("[overlay] {m}")));
        let kind = match overlays.resolve(&self.kind)? {
            Resolved::BuiltIn(k) => k,
            Resolved::Registered(_) => LiveKind::Registered,
        };
        check_addrs("peers", &self.peers)?;
        check_addrs("servers", &self.servers)?;
        check_addrs("contacts", &self.contacts)?;
        if self.tick_ms == 0 || self.max_hops == 0 {
            return bad("tick_ms and max_hops must be at least 1".into());
        }
        match kind {
            LiveKind::ClientServer if self.role != "client" && self.role != "server" => {
                bad(format!("role = {:?} does not exist; allowed: client, server", self.role))
            }
            LiveKind::ClientServer if self.role == "client" && self.servers.is_empty() => {
                bad("role = \"client\" needs servers (at least one server's name@host:port)".into())
            }
            LiveKind::Hyparview if self.active_size == 0 => {
                bad("active_size = 0: the active view needs at least 1 (the paper uses 5)".into())
            }
            LiveKind::Hyparview if self.passive_size == 0 => {
                bad("passive_size = 0: the passive view needs at least 1 (the paper uses 30)".into())
            }
            LiveKind::Hyparview if self.shuffle_interval_ms == 0 => {
                bad("shuffle_interval_ms must be at least 1".into())
            }
            LiveKind::Amqp if !cfg!(feature = "amqp") => {
                bad("kind = \"amqp\": this build of troupe-cluster has no AMQP client; turn on its `amqp` \
                 feature (features = [\"amqp\"]; the `troupe` binary has it)"
                    .into())
            }
            #[cfg(feature = "amqp")]
            LiveKind::Amqp if !self.amqp_url.starts_with("amqp://") => bad(format!(
                "kind = \"amqp\" needs amqp_url = \"amqp://user:password@host:port/vhost\" (got {:?}; \
                 start a private broker with `bash scripts/rabbitmq.sh start DIR`)",
                crate::overlay::live::amqp::redact(&self.amqp_url)
            )),
            _ => Ok(()),
        }
    }

    /// Rule 5: refuses node settings that would connect this node to non-neighbours.
    pub fn check_node(&self, node_peers: &[String]) -> Result<(), Error> {
        if self.kind == "full_mesh" {
            return Ok(());
        }
        if !node_peers.is_empty() {
            return Err(Error::config(format!(
                "the node-level peers key cannot be used with [overlay] kind = {:?}: it keeps connections \
                 to every listed node; list them in [overlay] instead",
                self.kind
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let t: toml::Table = toml::from_str(text).unwrap();
        OverlayConfig::from_table(&t).unwrap_err().to_string()
    }

    #[test]
    fn rule_1_an_unknown_kind_is_refused_with_the_allowed_values() {
        let e = err("kind = \"ring\"");
        assert!(e.contains("kind") && e.contains("\"ring\"") && e.contains(LiveKind::ALLOWED), "{e}");
    }

    #[test]
    fn rule_1_a_registered_kind_is_accepted_only_with_its_registry() {
        use crate::overlay::live::{Outbox, PeerService};
        struct Alone;
        impl PeerService for Alone {
            fn join(&mut self, _: &[String], _: &mut Outbox) {}
            fn neighbours(&self) -> std::collections::BTreeSet<String> {
                std::collections::BTreeSet::new()
            }
            fn next_hop(&self, _: &str) -> Option<String> {
                None
            }
        }
        let mut r = OverlayRegistry::new();
        r.register("ring", |_| Ok(Box::new(Alone) as Box<dyn PeerService>)).unwrap();
        let t: toml::Table = toml::from_str("kind = \"ring\"\ncontacts = [\"n1@127.0.0.1:7001\"]").unwrap();
        let cfg = OverlayConfig::from_table_with(&t, &r).unwrap();
        assert_eq!(cfg.kind, "ring");
        let e = OverlayConfig::from_table(&t).unwrap_err().to_string();
        assert!(e.contains("kind = \"ring\"") && e.contains("registered: none"), "{e}");
        let t: toml::Table = toml::from_str("kind = \"ring\"\ncontacts = [\"n1\"]").unwrap();
        let e = OverlayConfig::from_table_with(&t, &r).unwrap_err().to_string();
        assert!(e.contains("contacts") && e.contains("\"n1\""), "rule 4 holds for it too: {e}");
        assert!(cfg.check_node(&["127.0.0.1:1".into()]).is_err(), "rule 5 holds for it too");
    }

    #[test]
    fn rule_2_static_peers_must_name_known_nodes() {
        let e = err("kind = \"static\"\npeers = [\"n9\"]");
        assert!(e.contains("peers") && e.contains("\"n9\"") && e.contains("name@host:port"), "{e}");
        let t: toml::Table = toml::from_str("kind = \"static\"\npeers = [\"n2@127.0.0.1:7002\"]").unwrap();
        assert!(OverlayConfig::from_table(&t).is_ok());
    }

    #[test]
    fn rule_2_client_server_needs_a_role_and_servers() {
        let e = err("kind = \"client_server\"\nrole = \"boss\"\nservers = [\"127.0.0.1:1\"]");
        assert!(e.contains("role") && e.contains("client, server"), "{e}");
        let e = err("kind = \"client_server\"\nrole = \"client\"");
        assert!(e.contains("servers"), "{e}");
        let t: toml::Table = toml::from_str("kind = \"client_server\"\nrole = \"server\"").unwrap();
        assert!(OverlayConfig::from_table(&t).unwrap().is_server());
    }

    #[test]
    fn rule_3_hyparview_view_sizes_of_zero_are_refused() {
        let e = err("kind = \"hyparview\"\nactive_size = 0");
        assert!(e.contains("active_size"), "{e}");
        let e = err("kind = \"hyparview\"\npassive_size = 0");
        assert!(e.contains("passive_size"), "{e}");
        let e = err("kind = \"hyparview\"\nshuffle_interval_ms = 0");
        assert!(e.contains("shuffle_interval_ms"), "{e}");
    }

    #[test]
    fn rule_3_amqp_needs_an_amqp_url() {
        let e = err("kind = \"amqp\"");
        assert!(e.contains("amqp_url"), "{e}");
        let e = err("kind = \"amqp\"\namqp_url = \"http://u:secret@h:1/\"");
        assert!(e.contains("amqp_url") && !e.contains("secret"), "the password is not printed: {e}");
        let t: toml::Table = toml::from_str("kind = \"amqp\"\namqp_url = \"amqp://g:g@127.0.0.1:5672/%2f\"").unwrap();
        assert_eq!(OverlayConfig::from_table(&t).unwrap().kind().unwrap(), LiveKind::Amqp);
    }

    #[test]
    fn rule_4_unknown_keys_and_bad_addresses_are_refused_with_the_key() {
        let e = err("knid = \"static\"");
        assert!(e.contains("knid"), "{e}");
        let e = err("contacts = [\"nowhere\"]");
        assert!(e.contains("contacts") && e.contains("nowhere"), "{e}");
    }

    #[test]
    fn rule_5_node_peers_are_refused_off_full_mesh() {
        let t: toml::Table = toml::from_str("kind = \"static\"\npeers = [\"127.0.0.1:7002\"]").unwrap();
        let cfg = OverlayConfig::from_table(&t).unwrap();
        let e = cfg.check_node(&["127.0.0.1:7003".into()]).unwrap_err().to_string();
        assert!(e.contains("peers"), "{e}");
        assert!(cfg.check_node(&[]).is_ok());
        assert!(OverlayConfig::default().check_node(&["127.0.0.1:1".into()]).is_ok());
    }
}
