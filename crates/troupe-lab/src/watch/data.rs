//! What the live view plots, read from the events a run writes while it goes: throughput per
//! second and the faults injected and healed, as the `/data` JSON of [`super`].
//!
//! Rules:
//! 1. The sources are the run folder's event files as they grow: `events.raw.jsonl` (the
//!    program's lines, or those the RabbitMQ collector received) and `events.net.jsonl` (the
//!    network layer's). [`Tail`] reads each from where it stopped, keeps a line without its
//!    newline for the next read, and reads at most [`MAX_READ`] bytes per call. A file not yet
//!    there, or already merged away at the end of the run, reads as nothing new.
//! 2. Throughput is what the lab's statistics count: the `throughput {second, count}` events.
//!    One point per `second`, its count summed over the nodes that reported it, at the time of
//!    the first report of that second; points are sorted by time.
//! 3. A fault is a `fault_injected {id, target, kind}`; the `fault_healed` with the same `id`
//!    closes its interval. One still open (or never healed, such as a kill) has no end.
//! 4. Times are seconds since the view started ([`Series::new`]'s `t0_us`), from the events'
//!    own `ts_us`.
//! 5. Bounded: at most [`MAX_POINTS`] points and [`MAX_FAULTS`] faults are kept; the JSON says
//!    how many of each were left out.
//! 6. A line that is not a well-formed event (events.md) is skipped and counted; the run, not
//!    the view, judges its events.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::events::{parse_line, Event};

/// The most bytes one [`Tail::read`] takes from a file (rule 1).
pub const MAX_READ: usize = 4 << 20;

/// The most throughput points kept (rule 5).
pub const MAX_POINTS: usize = 20_000;

/// The most faults kept (rule 5).
pub const MAX_FAULTS: usize = 2_000;

/// An event file read as it grows (rule 1).
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    /// A reader of `path` from its start.
    pub fn new(path: PathBuf) -> Tail {
        Tail { path, offset: 0, partial: Vec::new() }
    }

    /// The whole lines written since the last call.
    pub fn read(&mut self) -> Vec<String> {
        let Ok(mut f) = std::fs::File::open(&self.path) else { return Vec::new() };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let Ok(n) = f.take(MAX_READ as u64).read_to_end(&mut buf) else { return Vec::new() };
        self.offset += n as u64;
        self.partial.extend_from_slice(&buf);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else { return Vec::new() };
        let whole: Vec<u8> = self.partial.drain(..=end).collect();
        String::from_utf8_lossy(&whole).lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect()
    }
}

#[derive(Debug, Clone)]
struct Fault {
    id: String,
    kind: String,
    target: String,
    from_us: i64,
    to_us: Option<i64>,
}

/// The plotted series of one run (rules 2-6).
#[derive(Debug)]
pub struct Series {
    t0_us: i64,
    /// `second` -> (first report's ts_us, count summed over nodes).
    seconds: BTreeMap<i64, (i64, i64)>,
    points_dropped: u64,
    faults: Vec<Fault>,
    open: HashMap<String, usize>,
    faults_dropped: u64,
    malformed: u64,
    events: u64,
}

impl Series {
    /// An empty series whose times count from `t0_us` (rule 4).
    pub fn new(t0_us: i64) -> Series {
        Series {
            t0_us,
            seconds: BTreeMap::new(),
            points_dropped: 0,
            faults: Vec::new(),
            open: HashMap::new(),
            faults_dropped: 0,
            malformed: 0,
            events: 0,
        }
    }

    /// Takes in one line of an event file (rule 6).
    pub fn feed_line(&mut self, line: &str) {
        match parse_line(line) {
            Ok(e) => self.feed(&e),
            Err(_) => self.malformed += 1,
        }
    }

    /// Takes in one event (rules 2, 3, 5).
    pub fn feed(&mut self, e: &Event) {
        self.events += 1;
        match e.ev.as_str() {
            "throughput" => {
                let (second, count) = (e.int("second"), e.int("count"));
                let full = self.seconds.len() >= MAX_POINTS;
                match self.seconds.get_mut(&second) {
                    Some((ts, c)) => {
                        *ts = (*ts).min(e.ts_us);
                        *c += count;
                    }
                    None if !full => {
                        self.seconds.insert(second, (e.ts_us, count));
                    }
                    None => self.points_dropped += 1,
                }
            }
            "fault_injected" => {
                if self.faults.len() >= MAX_FAULTS {
                    self.faults_dropped += 1;
                    return;
                }
                let id = e.str("id").to_string();
                self.open.insert(id.clone(), self.faults.len());
                self.faults.push(Fault {
                    id,
                    kind: e.str("kind").to_string(),
                    target: e.str("target").to_string(),
                    from_us: e.ts_us,
                    to_us: None,
                });
            }
            "fault_healed" => {
                if let Some(i) = self.open.remove(e.str("id")) {
                    self.faults[i].to_us = Some(e.ts_us);
                }
            }
            _ => {}
        }
    }

    /// How many throughput points there are.
    pub fn points(&self) -> usize {
        self.seconds.len()
    }

    fn secs(&self, ts_us: i64) -> f64 {
        ((ts_us - self.t0_us) as f64 / 1e6 * 1000.0).round() / 1000.0
    }

    /// The `/data` document: `points` (`[t_s, count]`, by time), `faults` (`{id, kind,
    /// target, from_s, to_s}`, `to_s` null while open), `points_dropped`, `faults_dropped`,
    /// `malformed_lines`, `events` (well-formed lines read) and `now_s` (`now_us`'s time).
    pub fn to_json(&self, now_us: i64) -> Value {
        let mut points: Vec<(f64, i64)> = self.seconds.values().map(|&(ts, c)| (self.secs(ts), c)).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let faults: Vec<Value> = self
            .faults
            .iter()
            .map(|f| {
                json!({
                    "id": f.id, "kind": f.kind, "target": f.target,
                    "from_s": self.secs(f.from_us), "to_s": f.to_us.map(|t| self.secs(t)),
                })
            })
            .collect();
        json!({
            "points": points.iter().map(|(t, c)| json!([t, c])).collect::<Vec<_>>(),
            "faults": faults,
            "points_dropped": self.points_dropped,
            "faults_dropped": self.faults_dropped,
            "malformed_lines": self.malformed,
            "events": self.events,
            "now_s": self.secs(now_us),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ts_us: i64, node: &str, ev: &str, fields: &str) -> String {
        let sep = if fields.is_empty() { "" } else { "," };
        format!(r#"{{"ts_us":{ts_us},"run":"r","rt":"troupe","node":"{node}","ev":"{ev}"{sep}{fields}}}"#)
    }

    #[test]
    fn rule_1_a_tail_keeps_a_line_without_its_newline_for_later() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("events.raw.jsonl");
        let mut tail = Tail::new(p.clone());
        assert!(tail.read().is_empty(), "a missing file reads as nothing");
        std::fs::write(&p, "a\nb").unwrap();
        assert_eq!(tail.read(), vec!["a".to_string()]);
        std::fs::write(&p, "a\nbc\n\nd\n").unwrap();
        assert_eq!(tail.read(), vec!["bc".to_string(), "d".to_string()]);
        assert!(tail.read().is_empty());
        std::fs::remove_file(&p).unwrap();
        assert!(tail.read().is_empty(), "a file merged away reads as nothing new");
    }

    #[test]
    fn rules_2_to_4_throughput_per_second_and_fault_intervals() {
        let t0 = 1_000_000_000;
        let mut s = Series::new(t0);
        for l in [
            line(t0 + 1_000_000, "a", "throughput", r#""second":0,"count":10"#),
            line(t0 + 1_100_000, "b", "throughput", r#""second":0,"count":5"#),
            line(t0 + 2_500_000, "a", "fault_injected", r#""id":"f1","target":"n1","kind":"partition""#),
            line(t0 + 2_000_000, "a", "throughput", r#""second":1,"count":7"#),
            line(t0 + 3_000_000, "a", "fault_injected", r#""id":"k1","target":"w3","kind":"kill""#),
            line(t0 + 4_000_000, "a", "fault_healed", r#""id":"f1","target":"n1","kind":"partition""#),
            line(t0 + 4_000_000, "a", "restarted", r#""target":"w3","attempt":1"#),
            "not json".to_string(),
            line(t0, "a", "throughput", r#""second":"x","count":1"#),
        ] {
            s.feed_line(&l);
        }
        assert_eq!(s.points(), 2);
        let d = s.to_json(t0 + 5_000_000);
        assert_eq!(d["points"], json!([[1.0, 15], [2.0, 7]]));
        assert_eq!(
            d["faults"],
            json!([
                {"id": "f1", "kind": "partition", "target": "n1", "from_s": 2.5, "to_s": 4.0},
                {"id": "k1", "kind": "kill", "target": "w3", "from_s": 3.0, "to_s": null},
            ])
        );
        assert_eq!((d["malformed_lines"].as_u64(), d["events"].as_u64()), (Some(2), Some(7)));
        assert_eq!(d["now_s"].as_f64(), Some(5.0));
    }

    #[test]
    fn rule_5_the_series_is_bounded() {
        let mut s = Series::new(0);
        for i in 0..(MAX_POINTS + 3) as i64 {
            s.feed_line(&line(i, "a", "throughput", &format!(r#""second":{i},"count":1"#)));
        }
        for i in 0..MAX_FAULTS + 4 {
            s.feed_line(&line(0, "a", "fault_injected", &format!(r#""id":"{i}","target":"t","kind":"kill""#)));
        }
        let d = s.to_json(0);
        assert_eq!(d["points"].as_array().unwrap().len(), MAX_POINTS);
        assert_eq!(d["points_dropped"], 3);
        assert_eq!(d["faults"].as_array().unwrap().len(), MAX_FAULTS);
        assert_eq!(d["faults_dropped"], 4);
    }
}
