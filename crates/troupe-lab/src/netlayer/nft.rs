//! The hub's nftables rules (rule 6 of [`super`]): named counters `seen`, `lost` and `cut`; a
//! loss rule; a pair of drop rules per partition, removed by handle when it heals.

use serde::{Deserialize, Serialize};

use super::ns::run;

/// The table's family and name.
const TABLE: [&str; 2] = ["inet", "troupe"];
/// The chain on the forward hook.
const CHAIN: &str = "lab";

/// Packets counted by the hub's rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Every packet forwarded between the run's namespaces (dropped ones included).
    pub packets_seen: u64,
    /// Dropped by the loss rule.
    pub packets_lost: u64,
    /// Dropped by partitions.
    pub packets_cut: u64,
}

fn nft(hub: &str, script: &str) -> Result<String, String> {
    // `nft -f -` would need stdin; a script of one command per call keeps errors precise.
    let args: Vec<&str> = ["netns", "exec", hub, "nft", "-e", "-a"].into_iter().chain(script.split(' ')).collect();
    run("ip", &args)
}

/// The chains a rule goes into: the forward chain, and with the relay (rule 9) the input and
/// output chains, where the relay's client-side legs pass (matched by their conntrack original
/// addresses, `ct status dnat`: each packet is faulted on one leg only).
fn chains(relay: bool) -> &'static [(&'static str, &'static str)] {
    if relay {
        &[(CHAIN, ""), (CHAIN_IN, "ct status dnat "), (CHAIN_OUT, "ct status dnat ")]
    } else {
        &[(CHAIN, "")]
    }
}

/// The input and output chains with the relay.
const CHAIN_IN: &str = "lab_in";
const CHAIN_OUT: &str = "lab_out";

/// Makes the table, its counters and the chains with the `seen` counter as their first rule;
/// with `relay`, the input and output chains and the redirect of every TCP connection between
/// the namespaces to the relay's port.
pub fn setup(hub: &str, relay: bool) -> Result<(), String> {
    let t = TABLE.join(" ");
    nft(hub, &format!("add table {t}"))?;
    for c in ["seen", "lost", "cut"] {
        nft(hub, &format!("add counter {t} {c}"))?;
    }
    for (chain, hook) in
        [(CHAIN, "forward"), (CHAIN_IN, "input"), (CHAIN_OUT, "output")].into_iter().take(if relay { 3 } else { 1 })
    {
        nft(hub, &format!("add chain {t} {chain} {{ type filter hook {hook} priority 0 ; policy accept ; }}"))?;
    }
    for (chain, only) in chains(relay) {
        nft(hub, &format!("add rule {t} {chain} {only}counter name seen"))?;
    }
    if relay {
        nft(hub, "add table ip troupe_nat")?;
        nft(hub, "add chain ip troupe_nat pre { type nat hook prerouting priority dstnat ; }")?;
        let port = super::relay::PORT;
        nft(hub, &format!("add rule ip troupe_nat pre iifname != lo meta l4proto tcp redirect to :{port}"))?;
    }
    Ok(())
}

/// A rule's place, for [`remove`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    chain: &'static str,
    handle: u64,
}

/// The loss rule: drops `pct` % of the packets (in steps of 0.01 %).
pub fn add_loss(hub: &str, pct: f64, relay: bool) -> Result<Vec<Handle>, String> {
    let below = (pct * 100.0).round().clamp(0.0, 10_000.0) as u64;
    let t = TABLE.join(" ");
    // `numgen random mod 10000` is 0..=9999: every packet is below 10000, which nft refuses to write.
    let pick = if below >= 10_000 { String::new() } else { format!("numgen random mod 10000 < {below} ") };
    let mut out = Vec::new();
    for (chain, only) in chains(relay) {
        let echo = nft(hub, &format!("add rule {t} {chain} {only}{pick}counter name lost drop"))?;
        out.push(Handle { chain, handle: handle(&echo)? });
    }
    Ok(out)
}

/// A partition: drops every packet between addresses `side` and `rest`, both ways; returns the
/// rules' handles (for [`remove`]).
pub fn add_cut(hub: &str, side: &[&str], rest: &[&str], relay: bool) -> Result<Vec<Handle>, String> {
    if side.is_empty() || rest.is_empty() {
        return Ok(Vec::new());
    }
    let (s, r) = (format!("{{ {} }}", side.join(", ")), format!("{{ {} }}", rest.join(", ")));
    let t = TABLE.join(" ");
    let mut out = Vec::new();
    for (chain, only) in chains(relay) {
        let field = if only.is_empty() { "ip" } else { "ct original ip" };
        for (from, to) in [(&s, &r), (&r, &s)] {
            let rule =
                format!("add rule {t} {chain} {only}{field} saddr {from} {field} daddr {to} counter name cut drop");
            out.push(Handle { chain, handle: handle(&nft(hub, &rule)?)? });
        }
    }
    Ok(out)
}

/// Removes rules by handle.
pub fn remove(hub: &str, handles: &[Handle]) -> Result<(), String> {
    let t = TABLE.join(" ");
    for h in handles {
        nft(hub, &format!("delete rule {t} {} handle {}", h.chain, h.handle))?;
    }
    Ok(())
}

/// Sets counter `seen` back to zero (the window starts: `seen` counts the window's packets).
pub fn reset_seen(hub: &str) -> Result<(), String> {
    let t = TABLE.join(" ");
    nft(hub, &format!("reset counter {t} seen")).map(|_| ())
}

/// Reads the counters.
pub fn counters(hub: &str) -> Result<Counters, String> {
    let t = TABLE.join(" ");
    let args: Vec<&str> =
        ["netns", "exec", hub, "nft", "-j", "list", "counters", "table"].into_iter().chain(t.split(' ')).collect();
    let out = run("ip", &args)?;
    parse_counters(&out)
}

/// The packets of the named counters in `nft -j list counters` output.
///
/// ```
/// let j = r#"{"nftables": [{"metainfo": {}}, {"counter": {"family": "inet", "name": "seen", "table": "troupe", "packets": 12, "bytes": 900}},
///   {"counter": {"name": "lost", "packets": 3, "bytes": 1}}, {"counter": {"name": "cut", "packets": 0, "bytes": 0}}]}"#;
/// let c = troupe_lab::netlayer::nft::parse_counters(j).unwrap();
/// assert_eq!((c.packets_seen, c.packets_lost, c.packets_cut), (12, 3, 0));
/// ```
pub fn parse_counters(json: &str) -> Result<Counters, String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("nft -j output: {e}"))?;
    let mut c = Counters::default();
    let items = v.get("nftables").and_then(|x| x.as_array()).ok_or("nft -j output has no nftables list")?;
    for item in items.iter().filter_map(|i| i.get("counter")) {
        let packets = item.get("packets").and_then(|p| p.as_u64()).unwrap_or(0);
        match item.get("name").and_then(|n| n.as_str()) {
            Some("seen") => c.packets_seen = packets,
            Some("lost") => c.packets_lost = packets,
            Some("cut") => c.packets_cut = packets,
            _ => {}
        }
    }
    Ok(c)
}

/// The handle `nft -e -a add rule` echoes (`... # handle N`).
fn handle(echo: &str) -> Result<u64, String> {
    echo.rsplit("# handle ")
        .next()
        .and_then(|h| h.split_whitespace().next())
        .and_then(|h| h.parse().ok())
        .ok_or_else(|| format!("nft did not echo the new rule's handle: {echo:?}"))
}
