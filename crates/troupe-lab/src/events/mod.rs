//! Events (events.md): the writer workloads use, the TCP collector, and the reader that
//! checks recorded lines and merges them into the run folder's `events.jsonl`.
//!
//! Rules for reading:
//! 1. Every non-empty line is a JSON object with the common fields: `ts_us` (integer), `run`,
//!    `rt`, `node`, `ev` (strings). Anything else is malformed, reported with its line number.
//! 2. The kinds the statistics read carry their fields with the right types: `throughput`
//!    (`second`, `count` integers), `fault_injected` (`id`, `target`, `kind` strings),
//!    `restarted` (`target` string, `attempt` integer), `run_finished` (`dropped_events`,
//!    `errors` integers), `ready` (`what` string, `count` integer).
//! 3. Unknown fields and kinds are kept and ignored.
//! 4. The merged file is sorted by `ts_us`, stably (lines with equal stamps keep file order).

pub mod amqp;
pub mod collector;
pub mod writer;

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};

/// One recorded event line.
#[derive(Debug, Clone)]
pub struct Event {
    /// Wall-clock microseconds since the epoch.
    pub ts_us: i64,
    /// Event kind.
    pub ev: String,
    /// Node that emitted it.
    pub node: String,
    /// Runtime that emitted it.
    pub rt: String,
    /// The whole line, parsed.
    pub raw: Value,
    /// The line as written (kept so merging does not reorder its fields).
    pub line: String,
}

impl Event {
    /// An integer field (0 if absent: the reader already checked the fields it needs).
    pub fn int(&self, field: &str) -> i64 {
        self.raw.get(field).and_then(Value::as_i64).unwrap_or(0)
    }

    /// A string field ("" if absent).
    pub fn str(&self, field: &str) -> &str {
        self.raw.get(field).and_then(Value::as_str).unwrap_or("")
    }

    /// The event's own fields: the line without the ones every event has (`ts_us`, `run`, `rt`,
    /// `node`, `ev`).
    pub fn own_fields(&self) -> Value {
        let mut v = self.raw.clone();
        if let Some(o) = v.as_object_mut() {
            for k in ["ts_us", "run", "rt", "node", "ev"] {
                o.remove(k);
            }
        }
        v
    }
}

fn need(obj: &serde_json::Map<String, Value>, field: &str, int: bool) -> std::result::Result<(), String> {
    match obj.get(field) {
        Some(v) if int && (v.is_i64() || v.is_u64()) => Ok(()),
        Some(Value::String(_)) if !int => Ok(()),
        Some(v) => Err(format!("field {field:?} is {v}, expected {}", if int { "an integer" } else { "a string" })),
        None => Err(format!("missing field {field:?}")),
    }
}

/// Parses and checks one line (rules 1-3).
pub fn parse_line(line: &str) -> std::result::Result<Event, String> {
    let raw: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let obj = raw.as_object().ok_or("not a JSON object")?;
    need(obj, "ts_us", true)?;
    for f in ["run", "rt", "node", "ev"] {
        need(obj, f, false)?;
    }
    let ev = obj["ev"].as_str().unwrap_or("").to_string();
    let fields: &[(&str, bool)] = match ev.as_str() {
        "throughput" => &[("second", true), ("count", true)],
        "fault_injected" => &[("id", false), ("target", false), ("kind", false)],
        "restarted" => &[("target", false), ("attempt", true)],
        "run_finished" => &[("dropped_events", true), ("errors", true)],
        "ready" => &[("what", false), ("count", true)],
        _ => &[],
    };
    for (f, int) in fields {
        need(obj, f, *int).map_err(|e| format!("{ev}: {e}"))?;
    }
    Ok(Event {
        ts_us: obj["ts_us"].as_i64().unwrap_or(0),
        node: obj["node"].as_str().unwrap_or("").to_string(),
        rt: obj["rt"].as_str().unwrap_or("").to_string(),
        ev,
        raw,
        line: line.trim_end().to_string(),
    })
}

/// Reads and checks a JSON Lines event file.
pub fn read(path: &Path) -> Result<Vec<Event>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    for (n, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let ev = parse_line(&line).map_err(|e| Error::malformed(path, format!("line {}: {e}", n + 1)))?;
        out.push(ev);
    }
    Ok(out)
}

/// Reads every input file, sorts all events by `ts_us` (stably) and writes them to `out`.
pub fn merge(inputs: &[&Path], out: &Path) -> Result<Vec<Event>> {
    let mut all = Vec::new();
    for p in inputs {
        all.extend(read(p)?);
    }
    all.sort_by_key(|e| e.ts_us);
    let f = std::fs::File::create(out).map_err(|e| Error::io(out, e))?;
    let mut w = BufWriter::new(f);
    for e in &all {
        writeln!(w, "{}", e.line).map_err(|e| Error::io(out, e))?;
    }
    w.flush().map_err(|e| Error::io(out, e))?;
    Ok(all)
}
