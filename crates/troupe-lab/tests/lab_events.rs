//! The event writer: never blocks, counts drops when its buffer is full and reports them in
//! `run_finished`; flushes on request and at finish; the TCP transport reaches the collector;
//! the reader rejects malformed lines with their line number.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use troupe_lab::events::collector::Collector;
use troupe_lab::events::writer::{Common, EventWriter, Transport};
use troupe_lab::events::{self, parse_line};

fn common() -> Common {
    Common { run: "t".into(), rt: "troupe".into(), node: "n1".into() }
}

/// A sink that blocks its first write until released, then appends to a shared buffer.
struct GatedSink {
    gate: Option<mpsc::Receiver<()>>,
    entered: Option<mpsc::Sender<()>>,
    out: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Write for GatedSink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if let Some(tx) = self.entered.take() {
            let _ = tx.send(());
        }
        if let Some(g) = self.gate.take() {
            let _ = g.recv();
        }
        self.out.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_buffer_drops_and_counts_without_blocking() {
    let (release, gate) = mpsc::channel();
    let (entered_tx, entered) = mpsc::channel();
    let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = GatedSink { gate: Some(gate), entered: Some(entered_tx), out: out.clone() };
    let cap = 8;
    let w = EventWriter::start(Transport::Writer(Box::new(sink)), common(), cap, Duration::from_secs(1)).unwrap();
    let em = w.emitter();
    // The first line reaches the sink and blocks the writer thread there.
    assert!(em.emit("probe", json!({})));
    entered.recv_timeout(Duration::from_secs(10)).expect("the writer thread took the first line");
    let t0 = Instant::now();
    let n = 1000;
    let accepted = (0..n).filter(|i| em.emit("latency", json!({"op": "x", "us": *i as f64}))).count();
    assert!(t0.elapsed() < Duration::from_secs(2), "emit must never wait for the writer");
    assert_eq!(accepted, cap, "exactly the buffer's capacity is queued while the writer is stuck");
    assert_eq!(em.dropped(), (n - cap) as u64);
    release.send(()).unwrap();
    let (dropped, errors) = w.finish(json!({"errors": 0}));
    assert_eq!((dropped, errors), ((n - cap) as u64, 0));
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 1 + cap + 1);
    let last = parse_line(lines.last().unwrap()).unwrap();
    assert_eq!(last.ev, "run_finished");
    assert_eq!(last.int("dropped_events"), (n - cap) as i64);
    // Lines emitted after finish are dropped, not blocked on.
    assert!(!em.emit("late", json!({})));
}

/// A sink that panics on its first write (a crashed writer thread).
struct PanickingSink;

impl Write for PanickingSink {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        panic!("sink broke (test)")
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn rule_5_a_crashed_writer_thread_reports_an_error_not_zero() {
    let w =
        EventWriter::start(Transport::Writer(Box::new(PanickingSink)), common(), 8, Duration::from_secs(1)).unwrap();
    w.emitter().emit("ready", json!({"what": "pairs", "count": 1}));
    let (_, errors) = w.finish(json!({"errors": 0}));
    assert!(errors >= 1, "a writer that crashed reported {errors} errors");
}

#[test]
fn file_transport_flushes_on_request_and_keeps_common_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ev.jsonl");
    let w = EventWriter::start(Transport::File(path.clone()), common(), 64, Duration::from_secs(3600)).unwrap();
    w.emitter().emit("ready", json!({"what": "pairs", "count": 4}));
    w.flush();
    let evs = events::read(&path).unwrap();
    assert_eq!(evs.len(), 1);
    let e = &evs[0];
    assert_eq!((e.ev.as_str(), e.node.as_str(), e.rt.as_str()), ("ready", "n1", "troupe"));
    assert_eq!(e.str("run"), "t");
    assert!(e.ts_us > 1_600_000_000_000_000, "wall-clock microseconds");
    assert!(e.line.starts_with("{\"ts_us\":"), "common fields first: {}", e.line);
    w.finish(json!({"errors": 0}));
    assert_eq!(events::read(&path).unwrap().len(), 2);
}

#[test]
fn the_writer_flushes_within_its_interval_without_being_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ev.jsonl");
    let w = EventWriter::start(Transport::File(path.clone()), common(), 64, Duration::from_millis(50)).unwrap();
    w.emitter().emit("ready", json!({"what": "x", "count": 1}));
    // Wait for the line to appear (bounded), never asking for a flush.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if std::fs::read_to_string(&path).unwrap_or_default().contains("\"ready\"") {
            break;
        }
        assert!(Instant::now() < deadline, "not flushed by the periodic flush");
        std::thread::yield_now();
    }
    w.finish(json!({"errors": 0}));
}

#[test]
fn tcp_transport_reaches_the_collector() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("collected.jsonl");
    let c = Collector::start("127.0.0.1:0", &path).unwrap();
    let spec = format!("tcp://{}", c.addr());
    let w = EventWriter::start(Transport::parse(&spec), common(), 64, Duration::from_secs(1)).unwrap();
    for s in 0..5 {
        w.emitter().emit("throughput", json!({"second": s, "count": 100}));
    }
    w.finish(json!({"errors": 0}));
    c.finish();
    let evs = events::read(&path).unwrap();
    assert_eq!(evs.len(), 6);
    assert_eq!(evs.iter().filter(|e| e.ev == "throughput").count(), 5);
}

#[test]
fn malformed_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(
        &path,
        "{\"ts_us\":1,\"run\":\"r\",\"rt\":\"x\",\"node\":\"n\",\"ev\":\"ready\",\"what\":\"p\",\"count\":1}\n\
         {\"ts_us\":2,\"run\":\"r\",\"rt\":\"x\",\"node\":\"n\",\"ev\":\"throughput\",\"second\":\"zero\",\"count\":1}\n",
    )
    .unwrap();
    let err = events::read(&path).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("second"), "{err}");
    assert!(parse_line("not json").is_err());
    assert!(parse_line("[1,2]").is_err());
    assert!(parse_line("{\"ts_us\":1.5,\"run\":\"r\",\"rt\":\"x\",\"node\":\"n\",\"ev\":\"x\"}").is_err());
    assert!(
        parse_line("{\"ts_us\":1,\"run\":\"r\",\"rt\":\"x\",\"node\":\"n\",\"ev\":\"custom\",\"extra\":[1]}").is_ok()
    );
}

#[test]
fn merge_sorts_by_time_stably() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let line = |ts: i64, node: &str| {
        format!("{{\"ts_us\":{ts},\"run\":\"r\",\"rt\":\"x\",\"node\":\"{node}\",\"ev\":\"e\"}}\n")
    };
    std::fs::write(&a, line(5, "a1") + &line(1, "a2") + &line(3, "a3")).unwrap();
    std::fs::write(&b, line(3, "b1") + &line(2, "b2")).unwrap();
    let out = dir.path().join("m.jsonl");
    let evs = events::merge(&[&a, &b], &out).unwrap();
    let order: Vec<&str> = evs.iter().map(|e| e.node.as_str()).collect();
    assert_eq!(order, ["a2", "b2", "a3", "b1", "a1"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 5);
}
