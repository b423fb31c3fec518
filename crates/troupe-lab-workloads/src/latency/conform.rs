//! The latency workload's conformance rules (`troupe lab conform latency`): the behaviour
//! contract of docs/latency.md ("Behaviour contract", rules 1-9) as checks of a run's trace, one
//! [`Rule`] per contract rule, named after it (`latency.3`); a contract rule the events cannot
//! show is a rule whose check is [`not_observable`]. A check fails on the first evidence it
//! finds, quoting the event ([`cite`]).
//!
//! Rules:
//! 1. `latency.1`: every round trip crossed the relay both ways, so no `latency_us` is below
//!    `rtt_ms` x 1000; and the relay carried every payload (`relay.bytes_up_in` +
//!    `relay.bytes_down_in` >= messages x payload_bytes).
//! 2. `latency.3`: pair i recorded exactly its share of `messages`, seq 0 .. share - 1, each
//!    once, and no pair outside 0 .. pairs - 1.
//! 3. `latency.4`: a pair's messages follow one another: its latencies add up to no more than
//!    the window.
//! 4. `latency.6`: one `window` line, whose `messages` and `bytes` are what the `msg` lines add
//!    up to.
//! 5. `latency.7`: events come from one node, `run_started` first and `run_finished` last, and
//!    the first `msg` line is written at least the window's length after `run_started` (none is
//!    written during the window).
//! 6. `latency.8`: no latency is above the ack limit, and `run_finished.errors` is 0.

use std::collections::BTreeMap;

use troupe_lab::conform::{cite, not_observable, Rule, Scenario, Trace, Verdict};
use troupe_lab::events::Event;

use super::config::LatencyConfig;

/// The contract's rules, in its order.
pub(crate) fn rules() -> Vec<Rule> {
    let r = |id, text, check| Rule { id, text, check };
    vec![
        r("latency.1", "every connection between the nodes through the relay (rtt_ms per round trip)", c1),
        r("latency.2", "the transport's connections; one_connection is one data connection", not_observable),
        r("latency.3", "pair i sends its share of messages, seq 0.., each once", c3),
        r("latency.4", "one message in flight per pair, acked before the next", c4),
        r("latency.5", "one unrecorded full-size warm-up message per pair", not_observable),
        r("latency.6", "one window from the common start to the last ack, counting every message", c6),
        r("latency.7", "events written after the window only, from node A", c7),
        r("latency.8", "every ack within the limit; no error", c8),
        r("latency.9", "each runtime's default settings", not_observable),
    ]
}

/// A short config: 4 pairs, 100 messages of 512 KiB, 1 ms RTT, one connection (what every
/// runtime has).
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![Scenario::new("small", &[("pairs", "4"), ("messages", "100"), ("transport", "one_connection")])]
}

fn verdict(r: Result<(), String>) -> Verdict {
    r.map_or_else(Verdict::fail, |()| Verdict::Pass)
}

fn c1(t: &Trace<'_>) -> Verdict {
    verdict(relay(&LatencyConfig::from_config(t.config), t.events))
}
fn c3(t: &Trace<'_>) -> Verdict {
    verdict(shares(&LatencyConfig::from_config(t.config), t.events))
}
fn c4(t: &Trace<'_>) -> Verdict {
    verdict(one_in_flight(t.events))
}
fn c6(t: &Trace<'_>) -> Verdict {
    verdict(window(&LatencyConfig::from_config(t.config), t.events))
}
fn c7(t: &Trace<'_>) -> Verdict {
    verdict(after_window(t.events))
}
fn c8(t: &Trace<'_>) -> Verdict {
    verdict(bounds(&LatencyConfig::from_config(t.config), t.events))
}

fn msgs(events: &[Event]) -> impl Iterator<Item = &Event> {
    events.iter().filter(|e| e.ev == "msg")
}

fn one<'a>(events: &'a [Event], ev: &str) -> Result<&'a Event, String> {
    let mut it = events.iter().filter(|e| e.ev == ev);
    match (it.next(), it.next()) {
        (Some(e), None) => Ok(e),
        (None, _) => Err(format!("no {ev} line")),
        (Some(_), Some(e)) => Err(format!("{} is a second {ev} line", cite(e))),
    }
}

/// Rule 1 (`latency.1`).
pub(crate) fn relay(cfg: &LatencyConfig, events: &[Event]) -> Result<(), String> {
    let floor = (cfg.rtt_ms * 1000) as i64;
    if let Some(m) = msgs(events).find(|m| m.int("latency_us") < floor) {
        return Err(format!(
            "{} (pair {} seq {}) took {} µs, less than the relay's round trip of {floor} µs",
            cite(m),
            m.int("pair"),
            m.int("seq"),
            m.int("latency_us")
        ));
    }
    let r = one(events, "relay")?;
    let carried = r.int("bytes_up_in") + r.int("bytes_down_in");
    let payloads = (cfg.messages * cfg.payload_bytes) as i64;
    if carried < payloads {
        return Err(format!("{} carried {carried} bytes, less than the {payloads} bytes of payload", cite(r)));
    }
    Ok(())
}

/// Rule 2 (`latency.3`).
pub(crate) fn shares(cfg: &LatencyConfig, events: &[Event]) -> Result<(), String> {
    let mut seen: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for m in msgs(events) {
        if m.int("pair") < 0 || m.int("pair") as u64 >= cfg.pairs {
            return Err(format!("{} is of pair {}, outside 0..{}", cite(m), m.int("pair"), cfg.pairs));
        }
        seen.entry(m.int("pair")).or_default().push(m.int("seq"));
    }
    for pair in 0..cfg.pairs {
        let mut seqs = seen.remove(&(pair as i64)).unwrap_or_default();
        seqs.sort_unstable();
        if seqs != (0..cfg.share(pair) as i64).collect::<Vec<_>>() {
            return Err(format!(
                "pair {pair} recorded {} messages (seq {:?} .. {:?}) where its share is seq 0..{} once each",
                seqs.len(),
                seqs.first(),
                seqs.last(),
                cfg.share(pair)
            ));
        }
    }
    Ok(())
}

/// Rule 3 (`latency.4`).
pub(crate) fn one_in_flight(events: &[Event]) -> Result<(), String> {
    let w = one(events, "window")?;
    let mut per_pair: BTreeMap<i64, i64> = BTreeMap::new();
    for m in msgs(events) {
        *per_pair.entry(m.int("pair")).or_default() += m.int("latency_us");
    }
    let elapsed = w.int("elapsed_us");
    if let Some((p, sum)) = per_pair.iter().find(|(_, &sum)| sum > elapsed) {
        return Err(format!(
            "pair {p}'s latencies add up to {sum} µs, more than the {elapsed} µs of {}: its messages overlapped",
            cite(w)
        ));
    }
    Ok(())
}

/// Rule 4 (`latency.6`).
pub(crate) fn window(cfg: &LatencyConfig, events: &[Event]) -> Result<(), String> {
    let w = one(events, "window")?;
    let n = msgs(events).count() as i64;
    let bytes = n * cfg.payload_bytes as i64;
    if w.int("messages") != n || w.int("bytes") != bytes {
        return Err(format!(
            "{} says {} messages and {} bytes; the msg lines add up to {n} and {bytes}",
            cite(w),
            w.int("messages"),
            w.int("bytes")
        ));
    }
    Ok(())
}

/// Rule 5 (`latency.7`).
pub(crate) fn after_window(events: &[Event]) -> Result<(), String> {
    let (Some(f), Some(l)) = (events.first(), events.last()) else {
        return Err("no events".into());
    };
    if f.ev != "run_started" || l.ev != "run_finished" {
        return Err(format!("the events open with {} and close with {}", cite(f), cite(l)));
    }
    if let Some(e) = events.iter().find(|e| e.node != f.node) {
        return Err(format!("{} is not node {}'s (node A writes every line)", cite(e), f.node));
    }
    let elapsed = one(events, "window")?.int("elapsed_us");
    if let Some(m) = msgs(events).find(|m| m.ts_us < f.ts_us + elapsed) {
        return Err(format!(
            "{} is written {} µs after run_started, inside what a {elapsed} µs window must cover",
            cite(m),
            m.ts_us - f.ts_us
        ));
    }
    Ok(())
}

/// Rule 6 (`latency.8`).
pub(crate) fn bounds(cfg: &LatencyConfig, events: &[Event]) -> Result<(), String> {
    let limit = super::sub::ack_limit(cfg).as_micros() as i64;
    if let Some(m) = msgs(events).find(|m| m.int("latency_us") > limit) {
        return Err(format!("{} took {} µs, past the ack limit of {limit} µs", cite(m), m.int("latency_us")));
    }
    let f = one(events, "run_finished")?;
    if f.int("errors") != 0 {
        return Err(format!("{} counts {} errors", cite(f), f.int("errors")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn cfg() -> LatencyConfig {
        LatencyConfig {
            pairs: 2,
            payload_bytes: 1000,
            messages: 5,
            rtt_ms: 1,
            transport: "one_connection".into(),
            parallelism: 4,
            overlay: "full_mesh".into(),
        }
    }

    fn line(ts: i64, kind: &str, extra: Value) -> Event {
        let mut v = json!({"ts_us": ts, "run": "r", "rt": "x", "node": "a", "ev": kind});
        if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        troupe_lab::events::parse_line(&v.to_string()).expect("a valid event line")
    }

    /// Pair 0 sends 3 messages, pair 1 two, 1,500 µs each, in a 5,000 µs window.
    fn good() -> Vec<Event> {
        let mut v = vec![line(0, "run_started", json!({}))];
        for (p, s) in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)] {
            v.push(line(10_000, "msg", json!({"pair": p, "seq": s, "latency_us": 1500})));
        }
        v.push(line(10_001, "window", json!({"elapsed_us": 5000, "messages": 5, "bytes": 5000})));
        v.push(line(10_002, "relay", json!({"connections": 1, "bytes_up_in": 5200, "bytes_down_in": 40})));
        v.push(line(10_003, "run_finished", json!({"errors": 0, "dropped_events": 0})));
        v
    }

    fn with(mut v: Vec<Event>, i: usize, e: Event) -> Vec<Event> {
        v[i] = e;
        v
    }

    #[test]
    fn rule_1_a_latency_below_the_rtt_or_payloads_past_the_relay_fail() {
        assert_eq!(relay(&cfg(), &good()), Ok(()));
        let fast = with(good(), 1, line(10_000, "msg", json!({"pair": 0, "seq": 0, "latency_us": 900})));
        assert!(relay(&cfg(), &fast).unwrap_err().contains("took 900 µs, less than the relay's round trip"));
        let around = with(good(), 7, line(10_002, "relay", json!({"bytes_up_in": 100, "bytes_down_in": 40})));
        assert!(relay(&cfg(), &around).unwrap_err().contains("less than the 5000 bytes"));
    }

    #[test]
    fn rule_2_a_missing_or_repeated_seq_fails() {
        assert_eq!(shares(&cfg(), &good()), Ok(()));
        let twice = with(good(), 2, line(10_000, "msg", json!({"pair": 0, "seq": 0, "latency_us": 1500})));
        assert!(shares(&cfg(), &twice).unwrap_err().contains("pair 0 recorded"));
        let stray = with(good(), 5, line(10_000, "msg", json!({"pair": 2, "seq": 1, "latency_us": 1500})));
        assert!(shares(&cfg(), &stray).unwrap_err().contains("pair 2"));
    }

    #[test]
    fn rule_3_overlapping_messages_fail() {
        assert_eq!(one_in_flight(&good()), Ok(()));
        let slow = with(good(), 3, line(10_000, "msg", json!({"pair": 0, "seq": 2, "latency_us": 2500})));
        assert!(one_in_flight(&slow).unwrap_err().contains("pair 0's latencies add up to 5500 µs"));
    }

    #[test]
    fn rule_4_a_window_that_miscounts_fails() {
        assert_eq!(window(&cfg(), &good()), Ok(()));
        let short = with(good(), 6, line(10_001, "window", json!({"elapsed_us": 5000, "messages": 4, "bytes": 4000})));
        assert!(window(&cfg(), &short).unwrap_err().contains("says 4 messages and 4000 bytes"));
        let mut twice = good();
        twice.insert(7, line(10_001, "window", json!({"elapsed_us": 5000, "messages": 5, "bytes": 5000})));
        assert!(window(&cfg(), &twice).unwrap_err().contains("a second window line"));
    }

    #[test]
    fn every_contract_rule_has_a_rule_and_the_scenarios_set_valid_keys() {
        let ids: Vec<&str> = rules().iter().map(|r| r.id).collect();
        assert_eq!(ids, (1..=9).map(|n| format!("latency.{n}")).collect::<Vec<_>>());
        for s in scenarios() {
            let mut b = troupe_lab::config::ConfigBuilder::new(&super::super::Latency);
            for (k, v) in &s.settings {
                b.apply_set(&format!("{k}={v}"));
            }
            assert!(b.build().is_ok(), "scenario {} has a setting the keys refuse", s.name);
        }
    }

    #[test]
    fn rule_5_lines_during_the_window_or_from_another_node_fail() {
        assert_eq!(after_window(&good()), Ok(()));
        let early = with(good(), 1, line(3000, "msg", json!({"pair": 0, "seq": 0, "latency_us": 1500})));
        assert!(after_window(&early).unwrap_err().contains("inside what a 5000 µs window"));
        let mut b = good();
        b.insert(
            1,
            troupe_lab::events::parse_line(r#"{"ts_us":1,"run":"r","rt":"x","node":"b","ev":"note"}"#).unwrap(),
        );
        assert!(after_window(&b).unwrap_err().contains("[node=b"));
    }

    #[test]
    fn rule_6_a_latency_past_the_limit_or_errors_fail() {
        assert_eq!(bounds(&cfg(), &good()), Ok(()));
        let hung = with(good(), 1, line(10_000, "msg", json!({"pair": 0, "seq": 0, "latency_us": 100_000_000})));
        assert!(bounds(&cfg(), &hung).unwrap_err().contains("past the ack limit"));
        let errs = with(good(), 8, line(10_003, "run_finished", json!({"errors": 1, "dropped_events": 0})));
        assert!(bounds(&cfg(), &errs).unwrap_err().contains("1 errors"));
    }
}
