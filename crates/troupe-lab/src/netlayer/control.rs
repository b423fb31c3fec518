//! Carrying out the network lines of a run's schedule in the hub, timed from the window start
//! (rules 6-8 of [`super`]).

use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::nft::{self, Counters};
use super::ns::Topology;
use crate::config::net_faults::{DELAY, DROP, PARTITION};
use crate::events::writer::now_us;
use crate::schedule::FaultAction;

/// How often the events file is read while waiting for the window start.
const POLL: Duration = Duration::from_millis(20);
/// The longest single sleep (so a stop is seen soon).
const SLICE: Duration = Duration::from_millis(50);

/// One thing to do in the hub.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Loss { id: String, pct: f64 },
    Delay { id: String, ms: [u64; 2] },
    Cut { k: String, ids: Vec<(String, u32)>, side: Vec<u32>, bridge: Vec<u32>, heal_at_ms: u64 },
    Heal { k: String },
}

/// The steps of a schedule, `(at_ms, step)` in time order: one loss step, and per partition
/// (the lines sharing `net-part-K-`) one cut and one heal.
fn plan(actions: &[FaultAction]) -> Vec<(u64, Step)> {
    let mut out: Vec<(u64, Step)> = Vec::new();
    for a in actions {
        match a.kind.as_str() {
            DROP => {
                out.push((a.at_ms, Step::Loss { id: a.id.clone(), pct: a.drop_pct.unwrap_or(0.0) }));
                // A loss with a duration (a nemesis's) is removed when it ends, as a cut is.
                if let Some(d) = a.duration_ms {
                    out.push((a.at_ms + d, Step::Heal { k: a.id.clone() }));
                }
            }
            DELAY => out.push((a.at_ms, Step::Delay { id: a.id.clone(), ms: a.delay_ms.unwrap_or([0, 0]) })),
            PARTITION => {
                let k = a.id.rsplit_once('-').map(|(k, _)| k.to_string()).unwrap_or_else(|| a.id.clone());
                let heal_at_ms = a.at_ms + a.duration_ms.unwrap_or(0);
                let existing = out.iter_mut().find_map(|(_, s)| match s {
                    Step::Cut { k: kk, ids, .. } if *kk == k => Some(ids),
                    _ => None,
                });
                match existing {
                    Some(ids) => ids.push((a.id.clone(), a.group)),
                    None => {
                        let side = a.nodes.clone().unwrap_or_else(|| vec![a.group]);
                        out.push((
                            a.at_ms,
                            Step::Cut {
                                k: k.clone(),
                                ids: vec![(a.id.clone(), a.group)],
                                side,
                                bridge: a.bridge.clone().unwrap_or_default(),
                                heal_at_ms,
                            },
                        ));
                        out.push((heal_at_ms, Step::Heal { k }));
                    }
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|(at, s)| (*at, matches!(s, Step::Cut { .. })));
    out
}

/// What the controller did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The window start it timed from, when the window opened.
    pub start_us: Option<i64>,
    /// The ids of the lines carried out.
    pub injected: Vec<String>,
    /// What went wrong applying a rule, one line each.
    pub errors: Vec<String>,
    /// The hub's counters at the end.
    pub counters: Counters,
}

/// The running controller; [`Controller::finish`] stops it and writes its last line.
pub struct Controller {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Outcome>>,
}

impl Controller {
    /// Starts carrying out `actions`' network lines in `topo`'s hub, timed from the first
    /// `ready {what: "window"}` line appended to `events`; its own lines go to `out`.
    pub fn start(
        topo: Arc<Topology>,
        actions: &[FaultAction],
        events: PathBuf,
        out: PathBuf,
        run_id: String,
        rt: String,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let steps = plan(actions);
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("net-layer".into())
            .spawn(move || {
                let mut w = Writer { path: out, run_id, rt };
                let mut o = Outcome::default();
                // A delay due at 0 is the network's round trip for the whole run (rule 9 of
                // `super`): in force before the window opens. The window start is known only
                // once the program's `ready {what: "window"}` line reaches the events file, and
                // a runtime may flush it hundreds of milliseconds late; timed from it, the
                // first half second of a 5 s window ran undelayed.
                for (_, step) in steps.iter().filter(|(at, _)| *at == 0) {
                    if let Step::Delay { id, ms } = step {
                        delay_now(&topo, id, ms, &mut w, &mut o);
                    }
                }
                if let Some(start_us) = wait_window(&events, &flag) {
                    o.start_us = Some(start_us);
                    carry_out(&topo, &steps, start_us, &flag, &mut w, &mut o);
                }
                // The counters cover the whole run: read once the program has ended.
                while !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(SLICE);
                }
                match nft::counters(&topo.hub()) {
                    Ok(c) => o.counters = c,
                    Err(e) => o.errors.push(format!("reading the hub's counters: {e}")),
                }
                let mut counters = json!({"packets_seen": o.counters.packets_seen, "packets_lost": o.counters.packets_lost,
                           "packets_cut": o.counters.packets_cut, "errors": o.errors});
                if let Some((conns, delayed, failed)) = topo.relay_counts() {
                    counters["relay_connections"] = conns.into();
                    counters["relay_delayed_chunks"] = delayed.into();
                    counters["relay_failed_connects"] = failed.into();
                }
                w.line("net_counters", counters);
                // The layer is one of the run's event sources: it ends like every node does.
                w.line("run_finished", json!({"dropped_events": 0, "errors": o.errors.len()}));
                o
            })
            .ok();
        Controller { stop, thread }
    }

    /// Stops the controller (the run's program has ended) and returns what it did.
    pub fn finish(mut self) -> Outcome {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The `start_us` of the first `ready {what: "window"}` line, reading `events` as it grows,
/// until `stop`.
fn wait_window(events: &Path, stop: &AtomicBool) -> Option<i64> {
    let mut pos = 0u64;
    let mut partial = String::new();
    loop {
        if let Ok(mut f) = std::fs::File::open(events) {
            if f.seek(SeekFrom::Start(pos)).is_ok() {
                let mut r = BufReader::new(f);
                let mut line = String::new();
                while let Ok(n) = r.read_line(&mut line) {
                    if n == 0 {
                        break;
                    }
                    pos += n as u64;
                    if !line.ends_with('\n') {
                        partial.push_str(&line);
                        line.clear();
                        continue;
                    }
                    let whole = std::mem::take(&mut partial) + &line;
                    line.clear();
                    if let Some(s) = window_start(&whole) {
                        return Some(s);
                    }
                }
            }
        }
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// The `start_us` of a `ready {what: "window"}` event line.
///
/// ```
/// use troupe_lab::netlayer::control::window_start;
/// let l = r#"{"ts_us":1,"run":"r","rt":"elixir","node":"o","ev":"ready","what":"window","count":5,"start_us":77}"#;
/// assert_eq!(window_start(l), Some(77));
/// assert_eq!(window_start(r#"{"ev":"ready","what":"clients","count":5}"#), None);
/// ```
pub fn window_start(line: &str) -> Option<i64> {
    if !line.contains("\"window\"") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    (v.get("ev")?.as_str()? == "ready" && v.get("what")?.as_str()? == "window")
        .then(|| v.get("start_us")?.as_i64())
        .flatten()
}

/// Puts the relay's delay in force now, with its `fault_injected` line.
fn delay_now(topo: &Topology, id: &str, ms: &[u64; 2], w: &mut Writer, o: &mut Outcome) {
    if topo.delay_now() {
        w.line("fault_injected", json!({"id": id, "target": super::NODE, "kind": DELAY, "delay_ms": ms}));
        o.injected.push(id.to_owned());
    } else {
        o.errors.push(format!("{id}: the run has no relay to delay through"));
    }
}

/// Sleeps until wall-clock `due_us` or `stop`; false when stopped first.
fn sleep_until(due_us: i64, stop: &AtomicBool) -> bool {
    let limit = Instant::now() + Duration::from_secs(24 * 3600);
    loop {
        if stop.load(Ordering::SeqCst) || Instant::now() > limit {
            return false;
        }
        let left = due_us - now_us();
        if left <= 0 {
            return true;
        }
        std::thread::sleep(SLICE.min(Duration::from_micros(left as u64)));
    }
}

fn carry_out(
    topo: &Topology,
    steps: &[(u64, Step)],
    start_us: i64,
    stop: &AtomicBool,
    w: &mut Writer,
    o: &mut Outcome,
) {
    let hub = topo.hub();
    if !sleep_until(start_us, stop) {
        return;
    }
    if let Err(e) = nft::reset_seen(&hub) {
        o.errors.push(format!("resetting the packet counter at the window start: {e}"));
    }
    let mut cuts: Vec<(String, Vec<nft::Handle>)> = Vec::new();
    for (at_ms, step) in steps {
        if !sleep_until(start_us + (*at_ms as i64) * 1000, stop) {
            return;
        }
        match step {
            Step::Delay { .. } if *at_ms == 0 => {} // in force since the run started
            Step::Delay { id, ms } => delay_now(topo, id, ms, w, o),
            Step::Loss { id, pct } => match nft::add_loss(&hub, *pct, topo.has_relay()) {
                Ok(handles) => {
                    cuts.push((id.clone(), handles));
                    w.line("fault_injected", json!({"id": id, "target": super::NODE, "kind": DROP, "drop_pct": pct}));
                    o.injected.push(id.clone());
                }
                Err(e) => o.errors.push(format!("{id}: {e}")),
            },
            Step::Cut { k, ids, side, bridge, heal_at_ms } => {
                if now_us() >= start_us + (*heal_at_ms as i64) * 1000 {
                    o.errors.push(format!("{k}: its heal time passed before it could be applied"));
                    continue;
                }
                let s: Vec<&str> = side.iter().filter_map(|i| topo.addr_of(*i)).collect();
                let rest: Vec<&str> = (0..topo.len() as u32)
                    .filter(|i| !side.contains(i) && !bridge.contains(i))
                    .filter_map(|i| topo.addr_of(i))
                    .collect();
                match nft::add_cut(&hub, &s, &rest, topo.has_relay()) {
                    Ok(handles) => {
                        cuts.push((k.clone(), handles));
                        let names = &topo.file().nodes;
                        for (id, n) in ids {
                            let target = names.get(*n as usize).map(|p| p.name.clone()).unwrap_or_default();
                            let dur = heal_at_ms - at_ms;
                            w.line(
                                "fault_injected",
                                json!({"id": id, "target": target, "kind": PARTITION, "duration_ms": dur}),
                            );
                            o.injected.push(id.clone());
                        }
                    }
                    Err(e) => o.errors.push(format!("{k}: {e}")),
                }
            }
            Step::Heal { k } => {
                if let Some(i) = cuts.iter().position(|(kk, _)| kk == k) {
                    let (_, handles) = cuts.remove(i);
                    if let Err(e) = nft::remove(&hub, &handles) {
                        o.errors.push(format!("healing {k}: {e}"));
                    } else {
                        w.line("net_healed", json!({"id": k}));
                    }
                }
            }
        }
    }
}

/// Appends the layer's own event lines to `events.net.jsonl`.
struct Writer {
    path: PathBuf,
    run_id: String,
    rt: String,
}

impl Writer {
    fn line(&mut self, ev: &str, fields: serde_json::Value) {
        let mut obj = json!({"ts_us": now_us(), "run": self.run_id, "rt": self.rt, "node": super::NODE, "ev": ev});
        if let (Some(o), serde_json::Value::Object(f)) = (obj.as_object_mut(), fields) {
            o.extend(f);
        }
        let f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path);
        if let Ok(mut f) = f {
            let _ = writeln!(f, "{obj}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(at: u64, id: &str, n: u32, nodes: &[u32], dur: u64) -> FaultAction {
        FaultAction {
            at_ms: at,
            id: id.into(),
            kind: PARTITION.into(),
            group: n,
            duration_ms: Some(dur),
            nodes: Some(nodes.to_vec()),
            ..Default::default()
        }
    }

    #[test]
    fn rule_6_a_partition_of_two_nodes_is_one_cut_and_one_heal() {
        let acts = vec![
            FaultAction { id: "net-drop".into(), kind: DROP.into(), drop_pct: Some(2.0), ..Default::default() },
            part(500, "net-part-0-1", 1, &[1, 2], 300),
            part(500, "net-part-0-2", 2, &[1, 2], 300),
        ];
        let p = plan(&acts);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(matches!(&p[0], (0, Step::Loss { .. })));
        match &p[1] {
            (500, Step::Cut { k, ids, side, heal_at_ms: 800, .. }) => {
                assert_eq!(k, "net-part-0");
                assert_eq!(ids.len(), 2);
                assert_eq!(side, &vec![1, 2]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&p[2], (800, Step::Heal { .. })));
    }
}
