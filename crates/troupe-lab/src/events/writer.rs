//! The event writer of events.md for Troupe-side workloads: actors hand a line to a bounded
//! buffer and never wait; a dedicated OS thread writes the lines to the transport.
//!
//! Rules:
//! 1. `Emitter::emit` never blocks: when the buffer is full (or the writer is closed) the line
//!    is dropped and counted; the count is reported in `run_finished.dropped_events`.
//! 2. The writer thread flushes at least once per `flush_interval` (1 s by default) while
//!    lines arrive or not, and at close.
//! 3. `finish` writes `run_finished` last (waiting for room: it must not be dropped), flushes
//!    and joins the thread; lines emitted after it are dropped.
//! 4. Transports: a file path (appended to, whole lines per write, so two processes can share
//!    the file), `tcp://HOST:PORT` (one connection per process) or `amqp://...` (one message
//!    per line to the exchange `troupe.events`, routing key = the run id; see `events::amqp`).
//! 5. The thread counts as errors the writes and the flushes its sink fails; for `amqp://` a
//!    flush fails unless the broker confirmed every line, so the `errors` `finish` returns is
//!    0 only when every line reached the broker.
//!    A writer thread that crashed (its sink panicked) counts as one error more, so a run
//!    whose writer died never reports 0 errors.
//! 6. The writer blocks on the buffer only when it is idle; while lines arrive it drains them
//!    in batches, pausing `BATCH_PAUSE` between batches, so a burst of emits (50,000 clients
//!    detecting one failure) does not pay one thread wake-up per line.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::error::{Error, Result};

/// How long the writer pauses once it has drained a burst, before it drains again (rule 6).
const BATCH_PAUSE: Duration = Duration::from_micros(500);

/// Default buffer capacity, lines.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// The fields every line carries besides `ts_us` and `ev`.
#[derive(Debug, Clone)]
pub struct Common {
    /// Run id (`TROUPE_RUN_ID`).
    pub run: String,
    /// Runtime name, e.g. `troupe`.
    pub rt: String,
    /// Node / OS-process name.
    pub node: String,
}

enum Msg {
    Line(String),
    Flush(SyncSender<()>),
    Close(String, SyncSender<()>),
}

/// A cheap, cloneable handle actors use to emit events.
#[derive(Clone)]
pub struct Emitter {
    tx: SyncSender<Msg>,
    dropped: Arc<AtomicU64>,
    prefix: Arc<str>,
}

/// Microseconds since the Unix epoch (CLOCK_REALTIME).
pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

impl Emitter {
    /// A whole line: the common fields, `ev`, then `members` (JSON members, no braces).
    fn line_with(&self, ev: &str, members: &str) -> String {
        let mut s = String::with_capacity(80 + self.prefix.len() + members.len());
        s.push_str("{\"ts_us\":");
        s.push_str(&now_us().to_string());
        s.push_str(&self.prefix);
        s.push_str(",\"ev\":");
        s.push_str(&Value::from(ev).to_string());
        if !members.is_empty() {
            s.push(',');
            s.push_str(members);
        }
        s.push('}');
        s
    }

    fn line(&self, ev: &str, fields: &Value) -> String {
        let mut members = String::new();
        if let Value::Object(m) = fields {
            for (k, v) in m {
                if !members.is_empty() {
                    members.push(',');
                }
                members.push_str(&Value::from(k.as_str()).to_string());
                members.push(':');
                members.push_str(&v.to_string());
            }
        }
        self.line_with(ev, &members)
    }

    /// Emits one event `ev` with extra `fields` (a JSON object). Never blocks; returns `false`
    /// when the line was dropped (and counted).
    pub fn emit(&self, ev: &str, fields: Value) -> bool {
        let line = self.line(ev, &fields);
        self.send_line(line)
    }

    /// Emits `ev` with fields already rendered as JSON members (`"k":1,"j":"x"`, no braces);
    /// for hot paths that emit the same fields often. Never blocks, like [`Emitter::emit`].
    pub fn emit_raw(&self, ev: &str, members: &str) -> bool {
        self.send_line(self.line_with(ev, members))
    }

    fn send_line(&self, line: String) -> bool {
        match self.tx.try_send(Msg::Line(line)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Owns the writer thread; hands out [`Emitter`]s.
pub struct EventWriter {
    emitter: Emitter,
    thread: Option<JoinHandle<u64>>,
}

/// A file sink that only ever writes whole lines, each batch in one `write` on a file opened
/// for appending, so several processes of one run (the SUB and its injector) can append to the
/// same events file without splitting each other's lines (rule 4).
struct WholeLines {
    f: std::fs::File,
    buf: Vec<u8>,
}

impl WholeLines {
    fn write_complete(&mut self) -> std::io::Result<()> {
        if let Some(end) = self.buf.iter().rposition(|&b| b == b'\n') {
            self.f.write_all(&self.buf[..=end])?;
            self.buf.drain(..=end);
        }
        Ok(())
    }
}

impl Write for WholeLines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 1 << 16 {
            self.write_complete()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_complete()?;
        self.f.flush()
    }
}

/// Where lines go.
pub enum Transport {
    /// Append to a file.
    File(std::path::PathBuf),
    /// Send to a collector over TCP.
    Tcp(String),
    /// Publish to a RabbitMQ broker: the whole `amqp://` URL.
    Amqp(String),
    /// Any writer (tests, custom sinks).
    Writer(Box<dyn Write + Send>),
}

impl Transport {
    /// Parses a `TROUPE_EVENTS` value: `tcp://HOST:PORT`, `amqp://...` or a file path.
    pub fn parse(spec: &str) -> Transport {
        if let Some(addr) = spec.strip_prefix("tcp://") {
            Transport::Tcp(addr.to_string())
        } else if spec.starts_with("amqp://") {
            Transport::Amqp(spec.to_string())
        } else {
            Transport::File(spec.into())
        }
    }

    fn open(self, run: &str) -> Result<Box<dyn Write + Send>> {
        Ok(match self {
            Transport::File(p) => {
                let f = OpenOptions::new().create(true).append(true).open(&p).map_err(|e| Error::io(&p, e))?;
                Box::new(WholeLines { f, buf: Vec::with_capacity(1 << 16) })
            }
            Transport::Tcp(addr) => {
                let s = TcpStream::connect(&addr)
                    .map_err(|e| Error::other(format!("cannot connect to tcp://{addr}: {e}")))?;
                Box::new(BufWriter::with_capacity(1 << 16, s))
            }
            Transport::Amqp(url) => Box::new(super::amqp::Publisher::connect(&url, run)?),
            Transport::Writer(w) => w,
        })
    }
}

impl EventWriter {
    /// Starts a writer on `transport` with a buffer of `capacity` lines, flushing every
    /// `flush_interval` at least.
    pub fn start(
        transport: Transport,
        common: Common,
        capacity: usize,
        flush_interval: Duration,
    ) -> Result<EventWriter> {
        let mut sink = transport.open(&common.run)?;
        let (tx, rx) = mpsc::sync_channel::<Msg>(capacity.max(1));
        let thread = std::thread::Builder::new()
            .name("troupe-events".into())
            .spawn(move || {
                let mut errors = 0u64;
                let put = |sink: &mut Box<dyn Write + Send>, l: &str| {
                    u64::from(sink.write_all(l.as_bytes()).and_then(|_| sink.write_all(b"\n")).is_err())
                };
                let flush = |sink: &mut Box<dyn Write + Send>| u64::from(sink.flush().is_err());
                let mut last_flush = Instant::now();
                let mut lines_since_block = 0u32;
                loop {
                    // Rule 6: while lines keep coming, take them in batches without blocking
                    // (a blocked writer costs every emitter a wake-up).
                    let got = if lines_since_block > 0 {
                        match rx.try_recv() {
                            Ok(m) => Ok(m),
                            Err(mpsc::TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                            Err(mpsc::TryRecvError::Empty) => {
                                lines_since_block = 0;
                                std::thread::sleep(BATCH_PAUSE);
                                continue;
                            }
                        }
                    } else {
                        let wait = flush_interval.saturating_sub(last_flush.elapsed());
                        rx.recv_timeout(wait)
                    };
                    match got {
                        Ok(Msg::Line(l)) => {
                            errors += put(&mut sink, &l);
                            lines_since_block = lines_since_block.saturating_add(1);
                        }
                        Ok(Msg::Flush(ack)) => {
                            errors += flush(&mut sink);
                            last_flush = Instant::now();
                            let _ = ack.send(());
                        }
                        Ok(Msg::Close(l, ack)) => {
                            errors += put(&mut sink, &l);
                            errors += flush(&mut sink);
                            let _ = ack.send(());
                            break;
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => {
                            errors += flush(&mut sink);
                            break;
                        }
                    }
                    if last_flush.elapsed() >= flush_interval {
                        errors += flush(&mut sink);
                        last_flush = Instant::now();
                    }
                }
                drop(sink);
                errors
            })
            .map_err(|e| Error::other(format!("cannot start the event writer thread: {e}")))?;
        let prefix = format!(
            ",\"run\":{},\"rt\":{},\"node\":{}",
            Value::from(common.run),
            Value::from(common.rt),
            Value::from(common.node)
        );
        Ok(EventWriter {
            emitter: Emitter { tx, dropped: Arc::new(AtomicU64::new(0)), prefix: prefix.into() },
            thread: Some(thread),
        })
    }

    /// Starts a writer from `TROUPE_EVENTS` and `TROUPE_RUN_ID`, for runtime `rt` on `node`.
    pub fn from_env(rt: &str, node: &str) -> Result<EventWriter> {
        let spec = std::env::var("TROUPE_EVENTS")
            .map_err(|_| Error::other("TROUPE_EVENTS is not set (a file path, tcp://HOST:PORT or amqp://...)"))?;
        let run = std::env::var("TROUPE_RUN_ID").unwrap_or_else(|_| "unnamed".into());
        let common = Common { run, rt: rt.into(), node: node.into() };
        EventWriter::start(Transport::parse(&spec), common, DEFAULT_CAPACITY, Duration::from_secs(1))
    }

    /// A handle for emitting.
    pub fn emitter(&self) -> Emitter {
        self.emitter.clone()
    }

    /// Asks the thread to flush everything queued so far and waits until it has.
    pub fn flush(&self) {
        let (ack_tx, ack_rx) = mpsc::sync_channel(1);
        if self.emitter.tx.send(Msg::Flush(ack_tx)).is_ok() {
            let _ = ack_rx.recv();
        }
    }

    /// Writes `run_finished` (with `dropped_events` filled in and the given extra fields, e.g.
    /// `errors`), flushes and stops the thread. Returns the drops and the write errors.
    pub fn finish(mut self, mut fields: Value) -> (u64, u64) {
        let dropped = self.emitter.dropped();
        if let Value::Object(m) = &mut fields {
            m.insert("dropped_events".into(), dropped.into());
        }
        let line = self.emitter.line("run_finished", &fields);
        let (ack_tx, ack_rx) = mpsc::sync_channel(1);
        if self.emitter.tx.send(Msg::Close(line, ack_tx)).is_ok() {
            let _ = ack_rx.recv();
        }
        let errors = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(n)) => n,
            // Rule 5: a crashed writer lost lines it cannot count; it is an error itself.
            Some(Err(_)) => {
                eprintln!("troupe events: the event writer thread crashed; events after the crash are lost");
                1
            }
            None => 0,
        };
        (dropped, errors)
    }
}

impl Drop for EventWriter {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let (ack_tx, ack_rx) = mpsc::sync_channel(1);
            if self.emitter.tx.send(Msg::Flush(ack_tx)).is_ok() {
                let _ = ack_rx.recv();
            }
            drop(t);
        }
    }
}
