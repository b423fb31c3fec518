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

use serde_json::json;
use tokio::sync::mpsc;
use troupe_remote::cli::EventLines;

use super::{Delivery, Overlay};

/// The overlay's commands and event lines on one node.
pub struct OverlayCommands {
    overlay: Overlay,
    lines: EventLines,
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
    /// Prints `overlay`'s neighbour changes and the `inbox` actor's messages (rules 1, 2).
    #[must_use]
    pub fn new(overlay: Overlay, lines: EventLines) -> Self {
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
        Self { overlay, lines }
    }

    /// The overlay.
    #[must_use]
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Answers one command line (rule 3); `None` when it is not an overlay command.
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
            _ => return None,
        })
    }
}
