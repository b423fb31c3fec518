//! The kv workload's conformance rules (`troupe lab conform kv`): the behaviour contract of
//! docs/kv.md ("Behaviour contract", rules 1-9) as checks of a run's trace, one [`Rule`] per
//! contract rule, named after it (`kv.3`); a contract rule the events cannot show is a rule
//! whose check is [`not_observable`]. A check fails on the first evidence it finds, quoting the
//! event ([`cite`]).
//!
//! Rules:
//! 1. `kv.3`: clients 0 .. concurrency - 1 each recorded operations with seq 0 .. n - 1, none
//!    other; the operations are the service's (`echo`, or `get` and `put`); and a client's
//!    latencies add up to at most the window plus one operation limit (one operation at a
//!    time, back to back).
//! 2. `kv.7`: no successful operation took longer than the operation limit, and `window.ops`
//!    and `window.failed_ops` are what the `op` lines add up to.
//! 3. `kv.8`: the nodes sent at least half the anti-entropy digests (3 x vnodes every 500 ms)
//!    and received at least half the ring gossip (6 messages every 200 ms) the window's length
//!    calls for. Not applicable when the run has network faults (they may cut both).
//! 4. `kv.9`: one `window` and one `nodes` line; the `op`, `window` and `nodes` lines are one
//!    node's (the client process), whose lines open with `run_started` and close with
//!    `run_finished`; and its first `op` line is written at least the window's length after
//!    its `run_started` (none during the window).
//! 5. `kv.10`: with `storage_delay_ms` = D, every successful get and put took at least D ms (a
//!    quorum waits for replicas that each wait D before they answer).

use std::collections::BTreeMap;

use troupe_lab::conform::{cite, not_observable, Rule, Scenario, Trace, Verdict};
use troupe_lab::events::Event;

use super::config::KvConfig;

/// The contract's rules, in its order.
pub(crate) fn rules() -> Vec<Rule> {
    let r = |id, text, check| Rule { id, text, check };
    vec![
        r("kv.1", "the client process and three store nodes, connected before the window", not_observable),
        r(
            "kv.2",
            "a key's vnode by a uniform hash; a replica per vnode per node; preferred replicas spread evenly",
            not_observable,
        ),
        r("kv.3", "concurrency clients, one operation at a time, back to back, of the service's kinds", c3),
        r(
            "kv.4",
            "client-coordinated quorums (W acks, R replies, newest wins); apply only newer versions",
            not_observable,
        ),
        r("kv.5", "replies after a quorum are discarded as they come", not_observable),
        r("kv.6", "one object buffer, never copied per message", not_observable),
        r("kv.7", "latency from first send to completion; an operation past its limit fails and is counted", c7),
        r("kv.8", "anti-entropy every 500 ms per vnode, ring gossip every 200 ms per node", c8),
        r("kv.9", "events after the window only: op lines, window, nodes", c9),
        r("kv.10", "each get and put waits its replica's simulated storage time", c10),
    ]
}

/// Short configs on one connection (what every runtime has): the store and the echo service.
pub(crate) fn scenarios() -> Vec<Scenario> {
    let common: [(&str, &str); 4] =
        [("transport", "one_connection"), ("concurrency", "4"), ("duration_s", "2"), ("object_bytes", "65536")];
    let with = |service| {
        let mut v = common.to_vec();
        v.push(("service", service));
        v
    };
    let mut slow = with("kv");
    slow.push(("storage_delay_ms", "3"));
    vec![Scenario::new("store", &with("kv")), Scenario::new("echo", &with("echo")), Scenario::new("storage", &slow)]
}

fn verdict(r: Result<(), String>) -> Verdict {
    r.map_or_else(Verdict::fail, |()| Verdict::Pass)
}

fn c3(t: &Trace<'_>) -> Verdict {
    verdict(clients(&KvConfig::from_config(t.config), t.events))
}
fn c7(t: &Trace<'_>) -> Verdict {
    verdict(failures(&KvConfig::from_config(t.config), t.events))
}
fn c8(t: &Trace<'_>) -> Verdict {
    match background(&KvConfig::from_config(t.config), t.events, !t.schedule.is_empty()) {
        Some(r) => verdict(r),
        None => Verdict::na("the run has network faults, which may cut the background traffic"),
    }
}
fn c9(t: &Trace<'_>) -> Verdict {
    verdict(after_window(t.events))
}

fn c10(t: &Trace<'_>) -> Verdict {
    let cfg = KvConfig::from_config(t.config);
    if cfg.storage_delay_ms == 0 || cfg.service != "kv" {
        return Verdict::na("no simulated storage time (storage_delay_ms = 0, or the echo service)");
    }
    verdict(storage(&cfg, t.events))
}

/// Rule 5 (`kv.10`).
pub(crate) fn storage(cfg: &KvConfig, events: &[Event]) -> Result<(), String> {
    let floor = (cfg.storage_delay_ms * 1000) as i64;
    let ok = |o: &&Event| o.raw.get("ok").and_then(serde_json::Value::as_bool).unwrap_or(false);
    match ops(events).filter(ok).find(|o| o.int("latency_us") < floor) {
        Some(o) => Err(format!(
            "{} completed in {} µs, under the storage time of {} ms",
            cite(o),
            o.int("latency_us"),
            cfg.storage_delay_ms
        )),
        None => Ok(()),
    }
}

fn ops(events: &[Event]) -> impl Iterator<Item = &Event> {
    events.iter().filter(|e| e.ev == "op")
}

fn one<'a>(events: &'a [Event], ev: &str) -> Result<&'a Event, String> {
    let mut it = events.iter().filter(|e| e.ev == ev);
    match (it.next(), it.next()) {
        (Some(e), None) => Ok(e),
        (None, _) => Err(format!("no {ev} line")),
        (Some(_), Some(e)) => Err(format!("{} is a second {ev} line", cite(e))),
    }
}

fn limit_us(cfg: &KvConfig) -> i64 {
    super::client::op_limit(cfg).as_micros() as i64
}

/// Rule 1 (`kv.3`).
pub(crate) fn clients(cfg: &KvConfig, events: &[Event]) -> Result<(), String> {
    let allowed: &[&str] = if cfg.service == "echo" { &["echo"] } else { &["get", "put"] };
    let mut per: BTreeMap<i64, (Vec<i64>, i64)> = BTreeMap::new();
    for o in ops(events) {
        if !allowed.contains(&o.str("op")) {
            return Err(format!("{} is a {:?} operation in service {}", cite(o), o.str("op"), cfg.service));
        }
        if o.int("client") < 0 || o.int("client") as u64 >= cfg.concurrency {
            return Err(format!("{} is of client {}, outside 0..{}", cite(o), o.int("client"), cfg.concurrency));
        }
        let e = per.entry(o.int("client")).or_default();
        e.0.push(o.int("seq"));
        e.1 += o.int("latency_us");
    }
    let window = one(events, "window")?.int("elapsed_us");
    for c in 0..cfg.concurrency as i64 {
        let Some((mut seqs, busy)) = per.remove(&c) else {
            return Err(format!("client {c} recorded no operation"));
        };
        seqs.sort_unstable();
        if seqs.iter().enumerate().any(|(i, &s)| s != i as i64) {
            return Err(format!("client {c}'s {} operations are not seq 0..{} once each", seqs.len(), seqs.len()));
        }
        if busy > window + limit_us(cfg) {
            return Err(format!(
                "client {c}'s operations took {busy} µs in all, more than the {window} µs window and one limit: they overlapped"
            ));
        }
    }
    Ok(())
}

/// Rule 2 (`kv.7`).
pub(crate) fn failures(cfg: &KvConfig, events: &[Event]) -> Result<(), String> {
    let limit = limit_us(cfg);
    let (mut n, mut failed) = (0, 0);
    for o in ops(events) {
        n += 1;
        if !o.raw.get("ok").and_then(serde_json::Value::as_bool).unwrap_or(false) {
            failed += 1;
        } else if o.int("latency_us") > limit {
            return Err(format!("{} succeeded after {} µs, past the {limit} µs limit", cite(o), o.int("latency_us")));
        }
    }
    let w = one(events, "window")?;
    if w.int("ops") != n || w.int("failed_ops") != failed {
        return Err(format!(
            "{} says {} operations, {} failed; the op lines add up to {n}, {failed} failed",
            cite(w),
            w.int("ops"),
            w.int("failed_ops")
        ));
    }
    Ok(())
}

/// Rule 3 (`kv.8`): `None` when the run had network faults (not applicable).
pub(crate) fn background(cfg: &KvConfig, events: &[Event], net_faults: bool) -> Option<Result<(), String>> {
    if net_faults {
        return None;
    }
    let check = || {
        let ms = one(events, "window")?.int("elapsed_us") / 1000;
        let nodes = one(events, "nodes")?;
        let digests = 3 * cfg.vnodes as i64 * (ms / 500) / 2;
        let gossip = 6 * (ms / 200) / 2;
        if nodes.int("digests_sent") < digests {
            return Err(format!(
                "{} says {} digests sent in a {ms} ms window; at least {digests} (half of 3 x {} every 500 ms) were due",
                cite(nodes),
                nodes.int("digests_sent"),
                cfg.vnodes
            ));
        }
        if nodes.int("gossip_received") < gossip {
            return Err(format!(
                "{} says {} ring gossip messages received in a {ms} ms window; at least {gossip} (half of 6 every 200 ms) were due",
                cite(nodes),
                nodes.int("gossip_received")
            ));
        }
        Ok(())
    };
    Some(check())
}

/// Rule 4 (`kv.9`). Lines of other nodes (the store nodes' network-fault lines, when a run has
/// them) are not the client process's and are left alone.
pub(crate) fn after_window(events: &[Event]) -> Result<(), String> {
    let w = one(events, "window")?;
    let own: Vec<&Event> = events.iter().filter(|e| e.node == w.node).collect();
    let (Some(f), Some(l)) = (own.first(), own.last()) else {
        return Err("no events".into());
    };
    if f.ev != "run_started" || l.ev != "run_finished" {
        return Err(format!("node {}'s lines open with {} and close with {}", w.node, cite(f), cite(l)));
    }
    let nodes = one(events, "nodes")?;
    if let Some(e) = ops(events).chain([nodes]).find(|e| e.node != w.node) {
        return Err(format!("{} is not from the client process ({})", cite(e), w.node));
    }
    let elapsed = w.int("elapsed_us");
    if let Some(o) = ops(events).find(|o| o.ts_us < f.ts_us + elapsed) {
        return Err(format!(
            "{} is written {} µs after run_started, inside what a {elapsed} µs window must cover",
            cite(o),
            o.ts_us - f.ts_us
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn cfg() -> KvConfig {
        KvConfig {
            service: "kv".into(),
            object_bytes: 1000,
            concurrency: 2,
            duration_s: 1,
            vnodes: 4,
            n: 3,
            r: 2,
            w: 2,
            parallelism: 4,
            transport: "channels".into(),
            keys: 10,
            read_pct: 50,
            storage_delay_ms: 0,
            seed: 1,
            nemesis: None,
            overlay: "full_mesh".into(),
        }
    }

    fn line(ts: i64, kind: &str, extra: Value) -> Event {
        let mut v = json!({"ts_us": ts, "run": "r", "rt": "x", "node": "client", "ev": kind});
        if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        troupe_lab::events::parse_line(&v.to_string()).expect("a valid event line")
    }

    fn op(client: i64, seq: i64, kind: &str, us: i64, ok: bool) -> Event {
        line(2_000_000, "op", json!({"client": client, "seq": seq, "op": kind, "latency_us": us, "ok": ok}))
    }

    /// Two clients, two operations each (one failed), in a 1 s window.
    fn good() -> Vec<Event> {
        vec![
            line(0, "run_started", json!({})),
            op(0, 0, "get", 400_000, true),
            op(0, 1, "put", 500_000, true),
            op(1, 0, "put", 300_000, false),
            op(1, 1, "get", 600_000, true),
            line(2_000_001, "window", json!({"elapsed_us": 1_000_000, "ops": 4, "failed_ops": 1})),
            line(2_000_002, "nodes", json!({"digests_sent": 24, "gossip_received": 30, "objects": 3})),
            line(2_000_003, "run_finished", json!({"errors": 0, "dropped_events": 0})),
        ]
    }

    fn with(mut v: Vec<Event>, i: usize, e: Event) -> Vec<Event> {
        v[i] = e;
        v
    }

    #[test]
    fn rule_5_a_get_or_put_faster_than_the_storage_time_fails_and_a_failed_one_does_not_count() {
        let slow = KvConfig { storage_delay_ms: 350, ..cfg() };
        // good(): the successful operations took 400, 500 and 600 ms; the failed one 300 ms.
        assert_eq!(storage(&slow, &good()), Ok(()));
        let quick = KvConfig { storage_delay_ms: 450, ..cfg() };
        assert!(storage(&quick, &good())
            .unwrap_err()
            .contains("completed in 400000 µs, under the storage time of 450 ms"));
    }

    #[test]
    fn rule_1_missing_clients_gaps_wrong_ops_and_overlap_fail() {
        assert_eq!(clients(&cfg(), &good()), Ok(()));
        let gap = with(good(), 2, op(0, 2, "put", 500_000, true));
        assert!(clients(&cfg(), &gap).unwrap_err().contains("client 0's 2 operations are not seq 0..2"));
        let echo = with(good(), 2, op(0, 1, "echo", 500_000, true));
        assert!(clients(&cfg(), &echo).unwrap_err().contains("is a \"echo\" operation in service kv"));
        let lone: Vec<Event> = good().into_iter().filter(|e| e.int("client") != 1 || e.ev != "op").collect();
        assert!(clients(&cfg(), &lone).unwrap_err().contains("client 1 recorded no operation"));
        let limit = limit_us(&cfg());
        let busy = with(good(), 2, op(0, 1, "put", limit + 700_000, true));
        assert!(clients(&cfg(), &busy).unwrap_err().contains("overlapped"));
    }

    #[test]
    fn rule_2_a_slow_success_or_wrong_counts_fail() {
        assert_eq!(failures(&cfg(), &good()), Ok(()));
        let slow = with(good(), 4, op(1, 1, "get", limit_us(&cfg()) + 1, true));
        assert!(failures(&cfg(), &slow).unwrap_err().contains("past the"));
        let hidden =
            with(good(), 5, line(2_000_001, "window", json!({"elapsed_us": 1_000_000, "ops": 4, "failed_ops": 0})));
        assert!(failures(&cfg(), &hidden)
            .unwrap_err()
            .contains("says 4 operations, 0 failed; the op lines add up to 4, 1 failed"));
    }

    #[test]
    fn rule_3_missing_background_traffic_fails_and_network_faults_make_it_not_applicable() {
        assert_eq!(background(&cfg(), &good(), false), Some(Ok(())));
        let quiet = with(good(), 6, line(2_000_002, "nodes", json!({"digests_sent": 11, "gossip_received": 30})));
        assert!(background(&cfg(), &quiet, false).unwrap().unwrap_err().contains("11 digests"));
        let mute = with(good(), 6, line(2_000_002, "nodes", json!({"digests_sent": 24, "gossip_received": 14})));
        assert!(background(&cfg(), &mute, false).unwrap().unwrap_err().contains("14 ring gossip"));
        assert_eq!(background(&cfg(), &quiet, true), None);
    }

    #[test]
    fn every_contract_rule_has_a_rule_and_every_scenario_sets_valid_keys() {
        let ids: Vec<&str> = rules().iter().map(|r| r.id).collect();
        assert_eq!(ids, (1..=10).map(|n| format!("kv.{n}")).collect::<Vec<_>>());
        for s in scenarios() {
            let mut b = troupe_lab::config::ConfigBuilder::new(&super::super::Kv);
            for (k, v) in &s.settings {
                b.apply_set(&format!("{k}={v}"));
            }
            assert!(b.build().is_ok(), "scenario {} has a setting the keys refuse", s.name);
        }
    }

    #[test]
    fn rule_4_lines_during_the_window_or_from_another_node_fail() {
        assert_eq!(after_window(&good()), Ok(()));
        let early = with(
            good(),
            1,
            line(500_000, "op", json!({"client": 0, "seq": 0, "op": "get", "latency_us": 1, "ok": true})),
        );
        assert!(after_window(&early).unwrap_err().contains("inside what a 1000000 µs window"));
        let mut other = good();
        other.insert(
            2,
            troupe_lab::events::parse_line(r#"{"ts_us":1,"run":"r","rt":"x","node":"kv0","ev":"op"}"#).unwrap(),
        );
        assert!(after_window(&other).unwrap_err().contains("[node=kv0"));
        // A store node's network-fault line is not the client's.
        let mut net = good();
        net.insert(1, troupe_lab::events::parse_line(r#"{"ts_us":7,"run":"r","rt":"x","node":"node-1","ev":"fault_injected","id":"n-0","target":"node-1","kind":"drop"}"#).unwrap());
        assert_eq!(after_window(&net), Ok(()));
        let no_nodes: Vec<Event> = good().into_iter().filter(|e| e.ev != "nodes").collect();
        assert!(after_window(&no_nodes).unwrap_err().contains("no nodes line"));
    }
}
