//! `overlay-scale --set mode=processes` (docs/overlay-scale.md, "Process mode"): seed 004
//! §6.3's replicated counter on real node processes. `troupe lab exec overlay-scale` is the
//! orchestrator and writes the events; it starts `nodes` `troupe node` processes on loopback
//! ([`member`]), each running the live overlay of `overlay` and, once told, the counter actor
//! of `troupe_cluster::overlay::live::counter` (typed sends to its overlay neighbours' counter
//! actors every `period_ms`).
//!
//! Rules (every wait is bounded; nothing that goes wrong is left out, it is an event):
//! 1. Start: node i is `os-i`; they start one after another, each joining through a node
//!    started before it (the seeded choice the simulator makes; client-server: node 0 is the
//!    server). A node that does not start is a `node_failed {index, why}` and is left out of
//!    the counter (the counter's N is the number of nodes that started); the run goes on.
//! 2. Traffic: from the first start, every second, every running node's `stats` (the node
//!    layer's `bytes_out` and `frames_out`, membership and heartbeats included) is read and the
//!    growth of their sum is a `traffic {second, at_ms, bytes, messages}`; the last one is taken
//!    after the counter phase. A node that dies keeps its last counts.
//! 3. Formation: once every node started, the orchestrator reads each node's neighbours
//!    (`overlay-status`: links kept from the start, a client's server, print no event), then
//!    follows every node's `neighbour_up`/`neighbour_down` events until the overlay has formed (full mesh: every node lists every other; client-server: the
//!    server lists every client and every client the server; HyParView: every node has a
//!    neighbour and the views connect every node), at most `30 s + 100 ms x nodes`; then
//!    `ready {what: "formed", count, sim_ms}` (ms since the first start), or first
//!    `formation_failed {why}` when the bound passed (the counter runs anyway).
//! 4. Counter: `overlay-counter-start J N PERIOD_MS` on every node (J its rank among the N
//!    started), then `overlay-counter-go` on every node; `ready {what: "go", count, at_us}`
//!    (taken before the first go). Each node's `counter_converged` is a
//!    `node_converged {index, ms}` (ms from `at_us`, by the node's clock, the same machine's);
//!    when every counter holds all N, `ready {what: "converged", count, ms}` (the last one's).
//!    The phase lasts `duration_s` from the go whatever happens, as in the simulator.
//! 5. End: every node's counter report and resident memory (`VmRSS`) are read, then
//!    `processes {...}` sums them up with the failures; then every node is told to quit.
//! 6. A node that dies is a `node_lost {index, why}`; a command that fails is counted in the
//!    `processes` event. Any of them, a failed start, a formation that did not happen in its
//!    bound, or a counter that did not converge makes the run `degraded` (analysis.rs).

mod member;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use parking_lot::Mutex;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use troupe_cluster::overlay::OverlayKind;
use troupe_lab::events::writer::{now_us, Emitter};

use super::config::OverlayScaleConfig;
use member::{Asker, Member, Note};

/// How long one command may take to be answered.
const ASK_LIMIT: Duration = Duration::from_secs(10);

/// Runs the experiment; the outcome and the fields of `run_finished`.
pub(super) async fn run(cfg: &OverlayScaleConfig, seed: u64, em: &Emitter) -> (Result<(), String>, Value) {
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("troupe-overlay-scale-{}", std::process::id()));
    let outcome = match std::fs::create_dir_all(&dir) {
        Ok(()) => Run::new(cfg, seed, em, dir.clone()).go().await,
        Err(e) => Err(format!("cannot create {} for the node configs: {e}", dir.display())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    (outcome, json!({"wall_ms": started.elapsed().as_millis() as u64}))
}

/// The running nodes' handles the traffic sampler reads (rule 2).
type Live = Arc<Mutex<BTreeMap<usize, Asker>>>;

struct Run<'a> {
    cfg: &'a OverlayScaleConfig,
    em: &'a Emitter,
    rng: ChaCha8Rng,
    dir: PathBuf,
    secret: String,
    start: Instant,
    members: Vec<Member>,
    live: Live,
    notes_tx: mpsc::UnboundedSender<Note>,
    notes: mpsc::UnboundedReceiver<Note>,
    /// Each node's neighbours (addresses) as its events said (rule 3).
    views: BTreeMap<usize, BTreeSet<String>>,
    /// Node index -> converged at (µs).
    converged: BTreeMap<usize, i64>,
    failed: Vec<String>,
    lost: Vec<String>,
    command_failures: Vec<String>,
}

impl<'a> Run<'a> {
    fn new(cfg: &'a OverlayScaleConfig, seed: u64, em: &'a Emitter, dir: PathBuf) -> Self {
        let (notes_tx, notes) = mpsc::unbounded_channel();
        Run {
            cfg,
            em,
            rng: ChaCha8Rng::seed_from_u64(seed),
            dir,
            secret: troupe_lab::nodes::secret(),
            start: Instant::now(),
            members: Vec::new(),
            live: Arc::new(Mutex::new(BTreeMap::new())),
            notes_tx,
            notes,
            views: BTreeMap::new(),
            converged: BTreeMap::new(),
            failed: Vec::new(),
            lost: Vec::new(),
            command_failures: Vec::new(),
        }
    }

    async fn go(mut self) -> Result<(), String> {
        let (stop_tx, stop_rx) = oneshot::channel();
        let sampler = tokio::spawn(sample(self.live.clone(), self.em.clone(), self.start, stop_rx));
        let result = self.experiment().await;
        let _ = stop_tx.send(());
        let _ = sampler.await;
        if result.is_ok() {
            self.finish().await;
        }
        self.live.lock().clear();
        join_all(self.members.drain(..).map(Member::close)).await;
        result
    }

    async fn experiment(&mut self) -> Result<(), String> {
        self.start_nodes().await?;
        self.form().await;
        self.counter().await;
        Ok(())
    }

    /// The `[overlay]` section of node `i` (rule 1).
    fn overlay_section(&mut self, i: usize) -> String {
        let routing = format!("routing = {}\n", self.cfg.routing);
        routing + &self.overlay_kind_section(i)
    }

    fn overlay_kind_section(&mut self, i: usize) -> String {
        let c = self.cfg;
        let earlier: Vec<usize> = (0..self.members.len()).collect();
        let contact = earlier.choose(&mut self.rng).map(|&k| {
            let m = &self.members[k];
            format!("\"os-{}@{}\"", m.index, m.addr)
        });
        match c.overlay {
            OverlayKind::ClientServer if i == 0 => "kind = \"client_server\"\nrole = \"server\"\n".into(),
            OverlayKind::ClientServer => {
                let server = self.members.iter().find(|m| m.index == 0).map(|m| m.addr.clone()).unwrap_or_default();
                format!("kind = \"client_server\"\nrole = \"client\"\nservers = [\"os-0@{server}\"]\n")
            }
            OverlayKind::FullMesh => {
                format!("kind = \"full_mesh\"\ncontacts = [{}]\n", contact.unwrap_or_default())
            }
            OverlayKind::Hyparview => format!(
                "kind = \"hyparview\"\ncontacts = [{}]\nactive_size = {}\npassive_size = {}\n",
                contact.unwrap_or_default(),
                c.sim.hyparview.active_size,
                c.sim.hyparview.passive_size
            ),
        }
    }

    /// Rule 1.
    async fn start_nodes(&mut self) -> Result<(), String> {
        for i in 0..self.cfg.nodes {
            let section = self.overlay_section(i);
            let text = format!(
                "name = \"os-{i}\"\nsecret = \"{}\"\nlisten = \"127.0.0.1:0\"\n[overlay]\n{section}",
                self.secret
            );
            let path = self.dir.join(format!("os-{i}.toml"));
            std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            match Member::start(i, &path, self.notes_tx.clone()).await {
                Ok(m) => {
                    self.live.lock().insert(i, m.asker());
                    self.members.push(m);
                }
                Err(why) => {
                    self.em.emit("node_failed", json!({"index": i, "why": why}));
                    self.failed.push(format!("os-{i}: {why}"));
                    if i == 0 && self.cfg.overlay == OverlayKind::ClientServer {
                        return Err(format!("the client-server overlay's server (os-0) did not start: {why}"));
                    }
                }
            }
        }
        if self.members.is_empty() {
            return Err("no node process started".into());
        }
        Ok(())
    }

    /// Handles one note (rules 3, 4, 6).
    fn note(&mut self, n: Note, go_us: i64) {
        match n {
            Note::Ended(i, why) => {
                self.live.lock().remove(&i);
                self.em.emit("node_lost", json!({"index": i, "why": why}));
                self.lost.push(format!("os-{i}: {why}"));
            }
            Note::Event(i, text, at) => {
                let Ok(v) = serde_json::from_str::<Value>(&text) else { return };
                let addr = v["addr"].as_str().unwrap_or_default().to_owned();
                match v["ev"].as_str() {
                    Some("neighbour_up") => {
                        self.views.entry(i).or_default().insert(addr);
                    }
                    Some("neighbour_down") => {
                        self.views.entry(i).or_default().remove(&addr);
                    }
                    Some("counter_converged") => {
                        let us = v["unix_us"].as_i64().unwrap_or(at);
                        if self.converged.insert(i, us).is_none() {
                            let ms = (us - go_us).max(0) as f64 / 1000.0;
                            self.em.emit("node_converged", json!({"index": i, "ms": ms}));
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The indices of the nodes running now.
    fn running(&self) -> BTreeSet<usize> {
        self.live.lock().keys().copied().collect()
    }

    /// Whether the overlay has formed among the running nodes (rule 3).
    fn formed(&self) -> bool {
        let running = self.running();
        let addr: BTreeMap<usize, &str> = self.members.iter().map(|m| (m.index, m.addr.as_str())).collect();
        let index: BTreeMap<&str, usize> = addr.iter().map(|(i, a)| (*a, *i)).collect();
        let empty = BTreeSet::new();
        let view = |i: usize| -> BTreeSet<usize> {
            self.views.get(&i).unwrap_or(&empty).iter().filter_map(|a| index.get(a.as_str()).copied()).collect()
        };
        let others = |i: usize| -> BTreeSet<usize> { running.iter().copied().filter(|&j| j != i).collect() };
        match self.cfg.overlay {
            OverlayKind::FullMesh => running.iter().all(|&i| view(i).is_superset(&others(i))),
            OverlayKind::ClientServer => running.iter().all(|&i| match i {
                0 => view(0).is_superset(&others(0)),
                _ => view(i).contains(&0),
            }),
            OverlayKind::Hyparview => {
                if running.len() > 1 && running.iter().any(|&i| view(i).is_empty()) {
                    return false;
                }
                let Some(&first) = running.first() else { return true };
                let mut seen = BTreeSet::from([first]);
                let mut stack = vec![first];
                let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
                for &i in &running {
                    for j in view(i) {
                        edges.entry(i).or_default().insert(j);
                        edges.entry(j).or_default().insert(i);
                    }
                }
                while let Some(i) = stack.pop() {
                    for &j in edges.get(&i).unwrap_or(&BTreeSet::new()) {
                        if running.contains(&j) && seen.insert(j) {
                            stack.push(j);
                        }
                    }
                }
                seen.len() == running.len()
            }
        }
    }

    /// Rule 3: takes every node's neighbours from its `overlay-status` once, then follows their
    /// events until the overlay formed or its bound passed.
    async fn form(&mut self) {
        let limit = Duration::from_secs(30) + Duration::from_millis(100) * self.cfg.nodes as u32;
        let deadline = Instant::now() + limit;
        // Links an overlay keeps from the start (a client's server) print no event. Applying the
        // events printed before the snapshot again after it is harmless: each address ends as
        // the last event about it (or, without one, the snapshot) says.
        for (i, a) in self.ask_all("overlay-status", |_| "overlay-status".into()).await {
            let status = a.ok().and_then(|l| serde_json::from_str::<Value>(l.strip_prefix("overlay-status ")?).ok());
            let Some(list) = status.as_ref().and_then(|v| v["neighbours"].as_array()) else { continue };
            let view = self.views.entry(i).or_default();
            view.extend(list.iter().filter_map(|a| a.as_str().map(str::to_owned)));
        }
        while !self.formed() {
            match tokio::time::timeout_at(deadline, self.notes.recv()).await {
                Ok(Some(n)) => self.note(n, 0),
                Ok(None) | Err(_) => {
                    let without: Vec<usize> = self
                        .running()
                        .into_iter()
                        .filter(|i| self.views.get(i).is_none_or(BTreeSet::is_empty))
                        .collect();
                    let why = format!(
                        "the {} overlay did not form within {} s ({} running nodes, {} of them without a neighbour)",
                        self.cfg.overlay_name,
                        limit.as_secs(),
                        self.running().len(),
                        without.len()
                    );
                    self.em.emit("formation_failed", json!({"why": why}));
                    break;
                }
            }
        }
        let ms = self.start.elapsed().as_millis() as u64;
        self.em.emit("ready", json!({"what": "formed", "count": self.running().len(), "sim_ms": ms}));
    }

    /// Sends `line(asker)` to every running node at once; the answers by index.
    async fn ask_all(
        &mut self,
        what: &str,
        line: impl Fn(&Asker) -> String,
    ) -> BTreeMap<usize, Result<String, String>> {
        let askers: Vec<Asker> = self.live.lock().values().cloned().collect();
        let answers = join_all(askers.iter().map(|a| {
            let l = line(a);
            async move { (a.index(), a.ask(&l, ASK_LIMIT).await) }
        }))
        .await;
        for (i, a) in &answers {
            if let Err(e) = a {
                self.command_failures.push(format!("{what} on os-{i}: {e}"));
            }
        }
        answers.into_iter().collect()
    }

    /// Rule 4.
    async fn counter(&mut self) {
        let running: Vec<usize> = self.running().into_iter().collect();
        let n = running.len();
        let rank: BTreeMap<usize, usize> = running.iter().enumerate().map(|(j, &i)| (i, j)).collect();
        let period = self.cfg.period_ms;
        self.ask_all("overlay-counter-start", |a| {
            format!("overlay-counter-start {} {n} {period}", rank.get(&a.index()).copied().unwrap_or(usize::MAX))
        })
        .await;
        let go_us = now_us();
        let go = Instant::now();
        self.ask_all("overlay-counter-go", |_| "overlay-counter-go".into()).await;
        self.em.emit("ready", json!({"what": "go", "count": n, "at_us": go_us}));
        let end = go + Duration::from_millis(self.cfg.duration_ms);
        let mut all_done = false;
        loop {
            if !all_done && running.iter().all(|i| self.converged.contains_key(i)) {
                all_done = true;
                let last = self.converged.values().copied().max().unwrap_or(go_us);
                let ms = ((last - go_us).max(0) as f64 / 1000.0).round() as u64;
                self.em.emit("ready", json!({"what": "converged", "count": n, "ms": ms}));
            }
            match tokio::time::timeout_at(end, self.notes.recv()).await {
                Ok(Some(note)) => self.note(note, go_us),
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Rule 5.
    async fn finish(&mut self) {
        let reports = self.ask_all("overlay-counter-status", |_| "overlay-counter-status".into()).await;
        let (mut sent, mut received, mut send_failures, mut rounds) = (0u64, 0u64, 0u64, 0u64);
        for r in reports.values().flatten() {
            let Some(json) = r.strip_prefix("overlay-counter-status ") else { continue };
            let v: Value = serde_json::from_str(json).unwrap_or_default();
            let u = |k: &str| v[k].as_u64().unwrap_or(0);
            sent += u("sent");
            received += u("received");
            send_failures += u("send_failures");
            rounds += u("rounds");
        }
        let running = self.running();
        let rss: Vec<u64> =
            self.members.iter().filter(|m| running.contains(&m.index)).filter_map(Member::rss_kb).collect();
        let not_converged: Vec<usize> = running.iter().copied().filter(|i| !self.converged.contains_key(i)).collect();
        self.em.emit(
            "processes",
            json!({
                "nodes_wanted": self.cfg.nodes,
                "nodes_started": self.members.len(),
                "nodes_running": running.len(),
                "nodes_converged": self.converged.len(),
                "not_converged": not_converged,
                "start_failures": self.failed,
                "lost": self.lost,
                "command_failures": self.command_failures,
                "counter_rounds": rounds,
                "counter_sent": sent,
                "counter_received": received,
                "counter_send_failures": send_failures,
                "rss_kb_total": rss.iter().sum::<u64>(),
                "rss_kb_max": rss.iter().copied().max(),
                "rss_read": rss.len(),
            }),
        );
    }
}

/// Rule 2: a `traffic` event every second until `stop`, then a last one.
async fn sample(live: Live, em: Emitter, start: Instant, mut stop: oneshot::Receiver<()>) {
    let mut last: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    let (mut bytes, mut frames) = (0u64, 0u64);
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for second in 0u64.. {
        let stopping = tokio::select! {
            _ = tick.tick() => false,
            _ = &mut stop => true,
        };
        let askers: Vec<Asker> = live.lock().values().cloned().collect();
        let answers =
            join_all(askers.iter().map(|a| async move { (a.index(), a.ask("stats", ASK_LIMIT).await) })).await;
        for (i, a) in answers {
            let Some(v) = a.ok().and_then(|l| serde_json::from_str::<Value>(l.strip_prefix("stats ")?).ok()) else {
                continue;
            };
            let counts = (v["bytes_out"].as_u64().unwrap_or(0), v["frames_out"].as_u64().unwrap_or(0));
            last.insert(i, counts);
        }
        let (b, f) = last.values().fold((0, 0), |(b, f), (x, y)| (b + x, f + y));
        let at_ms = start.elapsed().as_millis() as u64;
        em.emit(
            "traffic",
            json!({"second": second, "at_ms": at_ms, "bytes": b.saturating_sub(bytes), "messages": f.saturating_sub(frames)}),
        );
        (bytes, frames) = (b, f);
        if stopping {
            return;
        }
    }
}
