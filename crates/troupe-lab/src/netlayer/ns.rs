//! The run's namespaces (rule 3 of [`super`]): made with `ip`, removed on drop.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{NetFile, NodePlace, Place};

/// The most network nodes a run can have (one /24 each in 10.232.0.0/16, the coordinator's is 0).
pub const MAX_NODES: usize = 254;
/// The prefix of every namespace the layer makes.
const PREFIX: &str = "tlab-";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Runs `ip ARGS`; the error quotes the command and its stderr.
pub(crate) fn ip(args: &[&str]) -> Result<(), String> {
    run("ip", args).map(|_| ())
}

/// Runs a tool and returns its stdout; the error quotes the command and its stderr.
pub(crate) fn run(tool: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(tool).args(args).output().map_err(|e| format!("{tool} {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{tool} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A run's namespaces; dropping it removes them (and with them their interfaces and rules).
pub struct Topology {
    tag: String,
    made: Vec<String>,
    file: NetFile,
    relay: Option<super::relay::Relay>,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology").field("tag", &self.tag).field("relay", &self.relay.is_some()).finish()
    }
}

impl Topology {
    /// Makes the hub, the coordinator and one namespace per node of `nodes` (names in index
    /// order), and the hub's nftables table ([`super::nft::setup`]); with `delay` = `([min,
    /// max] ms, seed)`, the hub's delaying relay ([`super::relay`]), delaying once
    /// [`Topology::delay_now`] is called. Stale namespaces of dead lab processes are removed
    /// first. On error what was made is removed again.
    pub fn create(nodes: &[String], delay: Option<([u64; 2], u64)>) -> Result<Topology, String> {
        if nodes.len() > MAX_NODES {
            return Err(format!("the network layer takes at most {MAX_NODES} nodes; this run has {}", nodes.len()));
        }
        sweep_stale();
        let tag = format!("{:x}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let name = |role: &str| format!("{PREFIX}{tag}-{role}");
        let file = NetFile {
            coordinator: Place { netns: name("c"), addr: "10.232.0.2".into() },
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(i, n)| NodePlace {
                    index: i as u32,
                    name: n.clone(),
                    netns: name(&i.to_string()),
                    addr: format!("10.232.{}.2", i + 1),
                })
                .collect(),
        };
        let mut t = Topology { tag, made: Vec::new(), file, relay: None };
        t.build(delay.is_some())?;
        if let Some((ms, seed)) = delay {
            t.relay = Some(super::relay::Relay::start(&t.hub(), ms, seed)?);
        }
        Ok(t)
    }

    fn build(&mut self, relay: bool) -> Result<(), String> {
        let hub = self.hub();
        self.add(&hub)?;
        // The hub routes between the namespaces (its own forwarding switch, not the host's).
        run("ip", &["netns", "exec", &hub, "sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
        let coordinator = self.file.coordinator.netns.clone();
        self.attach(&coordinator, "c0", 0)?;
        for n in self.file.nodes.clone() {
            self.attach(&n.netns, &format!("n{}", n.index), n.index + 1)?;
        }
        super::nft::setup(&hub, relay)
    }

    fn add(&mut self, ns: &str) -> Result<(), String> {
        ip(&["netns", "add", ns])?;
        self.made.push(ns.to_string());
        ip(&["-n", ns, "link", "set", "lo", "up"])
    }

    /// Makes namespace `ns` with `eth0` = 10.232.K.2/24, joined to the hub's `hub_if` = .1.
    fn attach(&mut self, ns: &str, hub_if: &str, k: u32) -> Result<(), String> {
        let hub = self.hub();
        self.add(ns)?;
        ip(&["link", "add", "name", "eth0", "netns", ns, "type", "veth", "peer", "name", hub_if, "netns", &hub])?;
        let (near, far) = (format!("10.232.{k}.1"), format!("10.232.{k}.2"));
        ip(&["-n", &hub, "addr", "add", &format!("{near}/24"), "dev", hub_if])?;
        ip(&["-n", &hub, "link", "set", hub_if, "up"])?;
        ip(&["-n", ns, "addr", "add", &format!("{far}/24"), "dev", "eth0"])?;
        ip(&["-n", ns, "link", "set", "eth0", "up"])?;
        ip(&["-n", ns, "route", "add", "default", "via", &near])
    }

    /// Whether the run has the delaying relay (its rules go into the input and output chains too).
    pub fn has_relay(&self) -> bool {
        self.relay.is_some()
    }

    /// The delay line is due: the relay delays chunks from now on. False without a relay.
    pub fn delay_now(&self) -> bool {
        self.relay.as_ref().map(|r| r.delay_now()).is_some()
    }

    /// The relay's counters: connections relayed, chunks delayed, connections that failed.
    pub fn relay_counts(&self) -> Option<(u64, u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        self.relay.as_ref().map(|r| {
            let s = &r.stats;
            (s.connections.load(Relaxed), s.delayed_chunks.load(Relaxed), s.failed_connects.load(Relaxed))
        })
    }

    /// The hub's namespace.
    pub fn hub(&self) -> String {
        format!("{PREFIX}{}-h", self.tag)
    }

    /// What `netns.json` holds.
    pub fn file(&self) -> &NetFile {
        &self.file
    }

    /// The address of node `i`.
    pub fn addr_of(&self, i: u32) -> Option<&str> {
        self.file.nodes.get(i as usize).map(|n| n.addr.as_str())
    }

    /// The number of network nodes.
    pub fn len(&self) -> usize {
        self.file.nodes.len()
    }

    /// Whether the run has no network node.
    pub fn is_empty(&self) -> bool {
        self.file.nodes.is_empty()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.relay = None;
        for ns in self.made.iter().rev() {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// Removes the namespaces of lab processes that no longer live (rule 3): `tlab-<pid hex>-<seq>-...` only.
fn sweep_stale() {
    let Ok(list) = run("ip", &["netns", "list"]) else { return };
    for ns in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = ns.strip_prefix(PREFIX) else { continue };
        let mut parts = rest.split('-');
        let Some(pid) = parts.next().and_then(|p| u32::from_str_radix(p, 16).ok()) else { continue };
        if !parts.next().is_some_and(|seq| !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}
