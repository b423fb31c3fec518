//! The overlay's part of `troupe node` (a node whose configuration has an `[overlay]`
//! section): event lines and commands on the node's line protocol, so that tests and
//! operators drive the same application code whatever the overlay.
//!
//! Rules:
//! 1. At start the node registers the actor name `inbox`; each message sent to it prints
//!    `event {"ev":"overlay_delivery","actor":"inbox","origin":ADDR,"text":TEXT,"hops":N}`.
//! 2. Each neighbour change prints `event {"ev":"neighbour_up"|"neighbour_down","addr":ADDR}`,
//!    each message this node could not route `event {"ev":"unroutable","to":ADDR,"origin":ADDR}`.
//! 3. Commands: `overlay-status` (answers `overlay-status {json}`), `overlay-send ADDR ACTOR
//!    TEXT` (answers `overlay-sent ADDR`), `overlay-subscribe TOPIC` (answers
//!    `overlay-subscribed TOPIC` once the subscription is in force, on AMQP once the broker
//!    bound the topic, so every broadcast sent after the answer reaches it; each broadcast on it
//!    then prints an `overlay_delivery` event with its `topic`), `overlay-broadcast TOPIC TEXT`
//!    (answers `overlay-broadcast TOPIC`).
//!    A command that fails answers `error ...`.
//! 4. The replicated counter of `counter.rs` (what `overlay-scale --set mode=processes` runs):
//!    `overlay-counter-start INDEX NODES PERIOD_MS` starts and exports this node's counter
//!    actor (answers `overlay-counter-started INDEX` once it is exported; a second start
//!    answers `error ...`); `overlay-counter-go` increments and starts the rounds (answers
//!    `overlay-counter-go UNIX_US`, this node's wall clock at the go); `overlay-counter-status`
//!    answers `overlay-counter-status {json}` (`counter::CounterReport`). When the counter
//!    holds all NODES entries the node prints, once,
//!    `event {"ev":"counter_converged","index":I,"nodes":N,"ms":MS,"unix_us":US}` (MS since
//!    its go, US its wall clock then). The node layer's byte and frame counters are the base
//!    protocol's `stats` answer.

use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::mpsc;
use troupe_remote::cli::EventLines;
use troupe_remote::Node;

use super::counter::{Counter, CounterConfig};
use super::{Delivery, Overlay};

/// The overlay's commands and event lines on one node.
pub struct OverlayCommands {
    node: Node,
    overlay: Overlay,
    lines: EventLines,
    counter: Mutex<Option<Counter>>,
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

fn print(lines: EventLines, actor: Option<String>, mut rx: mpsc::UnboundedReceiver<Delivery>) {
    tokio::spawn(async move {
        while let Some(d) = rx.recv().await {
            let ev = json!({
                "ev": "overlay_delivery",
                "actor": actor,
                "topic": d.topic,
                "origin": d.origin,
                "text": String::from_utf8_lossy(&d.bytes),
                "hops": d.hops,
            });
            lines.event(&ev.to_string());
        }
    });
}

impl OverlayCommands {
    /// Prints `overlay`'s neighbour changes and the `inbox` actor's messages (rules 1, 2);
    /// `node` is the node the overlay runs on (the counter of rule 4 exports its actor there).
    #[must_use]
    pub fn new(node: &Node, overlay: Overlay, lines: EventLines) -> Self {
        let mut events = overlay.events();
        let l = lines.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(ev) => l.event(&serde_json::to_string(&ev).unwrap_or_default()),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("{n} overlay event lines were dropped (the printer lagged)");
                    }
                    Err(_) => return,
                }
            }
        });
        print(lines.clone(), Some("inbox".into()), overlay.register("inbox"));
        Self { node: node.clone(), overlay, lines, counter: Mutex::new(None) }
    }

    /// The overlay.
    #[must_use]
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// `overlay-counter-start INDEX NODES PERIOD_MS` (rule 4).
    fn counter_start(&self, args: &str) -> String {
        let a: Vec<u64> = args.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        let [index, nodes, period] = a[..] else {
            return "error usage: overlay-counter-start INDEX NODES PERIOD_MS".into();
        };
        let mut slot = self.counter.lock();
        if slot.is_some() {
            return "error a counter is already running on this node".into();
        }
        let cfg = CounterConfig {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            nodes: u32::try_from(nodes).unwrap_or(u32::MAX),
            period: std::time::Duration::from_millis(period),
        };
        let counter = match Counter::start(&self.node, &self.overlay, cfg) {
            Ok(c) => c,
            Err(e) => return format!("error {e}"),
        };
        let (c, lines) = (counter.clone(), self.lines.clone());
        tokio::spawn(async move {
            let r = c.converged().await;
            if r.converged_ms.is_some() {
                let ev = json!({"ev": "counter_converged", "index": r.index, "nodes": r.nodes,
                                "ms": r.converged_ms, "unix_us": unix_us()});
                lines.event(&ev.to_string());
            }
        });
        *slot = Some(counter);
        format!("overlay-counter-started {index}")
    }

    fn counter_cmd(&self, cmd: &str) -> String {
        let Some(c) = self.counter.lock().clone() else {
            return "error no counter on this node: send overlay-counter-start INDEX NODES PERIOD_MS first".into();
        };
        if cmd == "overlay-counter-go" {
            let at = unix_us();
            return match c.go() {
                Ok(()) => format!("overlay-counter-go {at}"),
                Err(e) => format!("error {e}"),
            };
        }
        format!("overlay-counter-status {}", serde_json::to_string(&c.report()).unwrap_or_default())
    }

    /// Answers one command line (rules 3, 4); `None` when it is not an overlay command.
    pub async fn answer(&self, line: &str) -> Option<String> {
        let mut parts = line.splitn(2, ' ');
        let cmd = parts.next()?;
        let rest = parts.next().unwrap_or("").trim();
        let err = |e: crate::Error| format!("error {e}");
        Some(match cmd {
            "overlay-status" => match self.overlay.status().await {
                Ok(s) => format!("overlay-status {}", serde_json::to_string(&s).unwrap_or_default()),
                Err(e) => err(e),
            },
            "overlay-send" => {
                let mut a = rest.splitn(3, ' ');
                let (Some(to), Some(actor)) = (a.next(), a.next()) else {
                    return Some("error usage: overlay-send ADDR ACTOR TEXT".into());
                };
                let text = a.next().unwrap_or("");
                match self.overlay.send(to, actor, text.as_bytes().to_vec()) {
                    Ok(()) => format!("overlay-sent {to}"),
                    Err(e) => err(e),
                }
            }
            "overlay-subscribe" if !rest.is_empty() => match self.overlay.subscribed(rest).await {
                Ok(rx) => {
                    print(self.lines.clone(), None, rx);
                    format!("overlay-subscribed {rest}")
                }
                Err(e) => err(e),
            },
            "overlay-broadcast" => {
                let mut a = rest.splitn(2, ' ');
                let Some(topic) = a.next().filter(|t| !t.is_empty()) else {
                    return Some("error usage: overlay-broadcast TOPIC TEXT".into());
                };
                match self.overlay.broadcast(topic, a.next().unwrap_or("").as_bytes().to_vec()) {
                    Ok(()) => format!("overlay-broadcast {topic}"),
                    Err(e) => err(e),
                }
            }
            "overlay-counter-start" => self.counter_start(rest),
            "overlay-counter-go" | "overlay-counter-status" => self.counter_cmd(cmd),
            _ => return None,
        })
    }
}
