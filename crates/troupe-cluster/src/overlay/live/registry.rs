//! Which overlay a `[overlay] kind` names ([`OverlayRegistry`]): the built-in kinds and the
//! user-defined ones registered by name, resolved at one dispatch point.
//!
//! Rules:
//! 1. Built-in and registered kinds are looked up in the same place
//!    ([`OverlayRegistry::names`]); a name that is neither is refused, at validation and at
//!    start, with the kind and every known name (built in, then registered).
//! 2. A registered name is lowercase ASCII letters, digits, `_` or `-`; it cannot be a
//!    built-in name, nor be registered twice in one registry.
//! 3. A registry is a value handed to [`super::OverlayConfig::from_table_with`] and
//!    [`super::Overlay::start_with`], not a global: two tests, or two nodes in one process,
//!    can run different sets. [`OverlayRegistry::new`] holds the built-in kinds only (what
//!    [`super::Overlay::start`] uses).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::config::LiveKind;
use super::service::{PeerService, ServiceContext};
use crate::error::Error;

/// Makes a node's [`PeerService`] when an overlay of its kind starts there; an error refuses
/// the start (say which key is wrong and what is allowed).
pub type OverlayFactory = Arc<dyn Fn(&ServiceContext<'_>) -> Result<Box<dyn PeerService>, Error> + Send + Sync>;

/// The built-in kinds, in the order the refusal lists them.
const BUILT_IN: [(&str, LiveKind); 5] = [
    ("full_mesh", LiveKind::FullMesh),
    ("static", LiveKind::Static),
    ("client_server", LiveKind::ClientServer),
    ("hyparview", LiveKind::Hyparview),
    ("amqp", LiveKind::Amqp),
];

/// What a kind name resolves to (rule 1).
#[derive(Clone)]
pub(crate) enum Resolved {
    BuiltIn(LiveKind),
    Registered(OverlayFactory),
}

/// The overlays a node may run: the built-in kinds and those registered by name (rules).
///
/// ```
/// use troupe_cluster::overlay::live::{OverlayConfig, OverlayRegistry};
/// let overlays = OverlayRegistry::new();
/// let t: toml::Table = toml::from_str("kind = \"ring\"").unwrap();
/// let e = OverlayConfig::from_table_with(&t, &overlays).unwrap_err().to_string();
/// assert!(e.contains("kind = \"ring\"") && e.contains("built in: full_mesh, static"), "{e}");
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct OverlayRegistry {
    registered: BTreeMap<String, OverlayFactory>,
}

impl fmt::Debug for OverlayRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OverlayRegistry").field("registered", &self.registered.keys().collect::<Vec<_>>()).finish()
    }
}

impl OverlayRegistry {
    /// The built-in kinds only (rule 3).
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the overlay `name`, made on each node by `factory` (rule 2).
    pub fn register<F>(&mut self, name: &str, factory: F) -> Result<&mut Self, Error>
    where
        F: Fn(&ServiceContext<'_>) -> Result<Box<dyn PeerService>, Error> + Send + Sync + 'static,
    {
        let ok_chars = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if name.is_empty() || !ok_chars {
            return Err(Error::config(format!(
                "overlay name {name:?} cannot be registered: use lowercase letters, digits, '_' or '-'"
            )));
        }
        if BUILT_IN.iter().any(|(n, _)| *n == name) {
            return Err(Error::config(format!(
                "overlay name {name:?} is built in and cannot be registered again; pick another name"
            )));
        }
        if self.registered.contains_key(name) {
            return Err(Error::config(format!(
                "overlay name {name:?} is already registered in this registry; pick another name"
            )));
        }
        self.registered.insert(name.to_owned(), Arc::new(factory));
        Ok(self)
    }

    /// Every kind `[overlay] kind` accepts: the built-in ones, then the registered ones (sorted).
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        BUILT_IN.iter().map(|(n, _)| (*n).to_owned()).chain(self.registered.keys().cloned()).collect()
    }

    /// Whether `name` is a kind this registry knows.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_ok()
    }

    /// The dispatch point (rule 1).
    pub(crate) fn resolve(&self, name: &str) -> Result<Resolved, Error> {
        if let Some((_, k)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            return Ok(Resolved::BuiltIn(*k));
        }
        if let Some(f) = self.registered.get(name) {
            return Ok(Resolved::Registered(f.clone()));
        }
        let registered: Vec<&str> = self.registered.keys().map(String::as_str).collect();
        let registered = if registered.is_empty() { "none".to_owned() } else { registered.join(", ") };
        Err(Error::config(format!(
            "[overlay] kind = {name:?} does not exist; built in: {}; registered: {registered} \
             (register your own with OverlayRegistry::register before the node starts)",
            LiveKind::ALLOWED
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::live::service::Outbox;
    use std::collections::BTreeSet;

    struct Nothing;
    impl PeerService for Nothing {
        fn join(&mut self, _: &[String], _: &mut Outbox) {}
        fn neighbours(&self) -> BTreeSet<String> {
            BTreeSet::new()
        }
        fn next_hop(&self, _: &str) -> Option<String> {
            None
        }
    }

    fn nothing(_: &ServiceContext<'_>) -> Result<Box<dyn PeerService>, Error> {
        Ok(Box::new(Nothing))
    }

    #[test]
    fn rule_1_an_unknown_name_is_refused_naming_it_and_every_known_kind() {
        let mut r = OverlayRegistry::new();
        r.register("ring", nothing).unwrap().register("star", nothing).unwrap();
        let e = r.resolve("rign").err().expect("refused").to_string();
        assert_eq!(
            e,
            "invalid cluster configuration: [overlay] kind = \"rign\" does not exist; built in: full_mesh, \
             static, client_server, hyparview, amqp; registered: ring, star (register your own with \
             OverlayRegistry::register before the node starts)"
        );
        let e = OverlayRegistry::new().resolve("ring").err().expect("refused").to_string();
        assert!(e.contains("registered: none"), "{e}");
        assert!(matches!(r.resolve("ring"), Ok(Resolved::Registered(_))));
        assert!(matches!(r.resolve("static"), Ok(Resolved::BuiltIn(LiveKind::Static))));
        assert_eq!(r.names(), ["full_mesh", "static", "client_server", "hyparview", "amqp", "ring", "star"]);
    }

    #[test]
    fn rule_2_built_in_duplicate_and_odd_names_cannot_be_registered() {
        let mut r = OverlayRegistry::new();
        let e = r.register("hyparview", nothing).expect_err("built in").to_string();
        assert!(e.contains("\"hyparview\" is built in"), "{e}");
        r.register("ring", nothing).unwrap();
        let e = r.register("ring", nothing).expect_err("twice").to_string();
        assert!(e.contains("already registered"), "{e}");
        for bad in ["", "Ring", "my ring", "ring!"] {
            let e = r.register(bad, nothing).expect_err("odd name").to_string();
            assert!(e.contains("lowercase letters"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn rule_3_registries_are_separate_values() {
        let mut a = OverlayRegistry::new();
        a.register("ring", nothing).unwrap();
        assert!(a.contains("ring"));
        assert!(!OverlayRegistry::new().contains("ring"));
        assert!(a.clone().contains("ring"));
    }
}
