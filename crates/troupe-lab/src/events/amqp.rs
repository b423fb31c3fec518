//! The `amqp://` event transport of events.md: a [`Publisher`] (the writer thread's sink, one
//! AMQP message per JSON line) and a [`Collector`] (the lab side, appending the lines of one run
//! to the run folder's raw events file), both over plain TCP with the `lapin` client.
//!
//! Rules:
//! 1. Lines go to the topic exchange [`EXCHANGE`] (declared, not durable, by both sides), one
//!    message per line without its `\n`, routing key = the run id. A run id holding `*` or `#`
//!    is refused (a topic binding would read them as wildcards).
//! 2. Connecting (TCP, AMQP handshake, channel, declarations) is bounded by
//!    [`CONNECT_TIMEOUT`]; failure is an error naming the URL without its password and saying
//!    how to start a broker.
//! 3. The publisher publishes with publisher confirms and `mandatory`. `flush` returns only when
//!    the broker has confirmed every line published so far, and fails when one was refused
//!    (nack), could not be routed to any queue (no collector bound to the run id) or was not
//!    confirmed within [`CONFIRM_TIMEOUT`]. The writer calls `flush` at finish, so when
//!    `EventWriter::finish` returns every line has reached the broker or been counted as an
//!    error.
//! 4. At most [`MAX_UNCONFIRMED`] lines are awaiting confirms; publishing more waits for them
//!    (this blocks the writer thread, never an actor: actors only touch the bounded buffer).
//! 5. The collector binds a fresh exclusive, auto-deleted queue to the run id before `start`
//!    returns, so every line published after that is delivered to it; it appends each line
//!    plus `\n` to its file, in the broker's delivery order (per publisher, publishing order).
//! 6. `Collector::finish` waits, at most its timeout, until every node that sent a line (the
//!    distinct `node` fields) has sent its `run_finished`, and at least `nodes_done` nodes did;
//!    then it takes what is still arriving (until 50 ms pass without a line, at most
//!    [`DRAIN_TIMEOUT`]), closes the connection and flushes the file. A broker lost before that
//!    makes `finish` an error (the lines received are in the file).
//! 7. Both sides may be created, finished and dropped from inside a tokio runtime (a workload's
//!    `#[tokio::main]`): their blocking work runs on threads of their own. A [`Publisher`]'s
//!    `Write` calls block, so it belongs on a plain thread, as the event writer's is.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::future::Future;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind, PublisherConfirm};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

use crate::error::{Error, Result};

/// The exchange every runtime publishes its event lines to (rule 1).
pub const EXCHANGE: &str = "troupe.events";
/// Bound on connecting to the broker, handshake and declarations included (rule 2).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(4);
/// Bound on waiting for the broker's confirms in one flush (rule 3).
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines published and not yet confirmed before publishing waits (rule 4).
pub const MAX_UNCONFIRMED: usize = 8192;
/// Bound on taking the already delivered lines once the collector stops (rule 6).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Bytes buffered before the publisher publishes the complete lines it holds.
const BATCH_BYTES: usize = 1 << 16;

/// `url` with its password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let auth_end = rest.find('/').unwrap_or(rest.len());
    match rest[..auth_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn unreachable(url: &str, what: impl std::fmt::Display) -> Error {
    Error::other(format!(
        "cannot reach the RabbitMQ broker at {}: {what}; start one with \
         `bash scripts/rabbitmq.sh start DIR` (install it with `bash scripts/install-rabbitmq.sh`) \
         and pass the URL it prints",
        redact(url)
    ))
}

fn runtime(name: &str) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the AMQP runtime thread: {e}")))
}

/// Runs `f` on a plain thread and waits for it: the blocking calls inside (`block_on`, dropping
/// a runtime) panic on a thread that drives a tokio runtime, and a workload's
/// `#[tokio::main]` is one (rule 7).
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn routing_key(run_id: &str) -> Result<ShortString> {
    if run_id.contains(['*', '#']) || run_id.len() > 255 {
        return Err(Error::other(format!(
            "run id {run_id:?} cannot be an AMQP routing key (no `*` or `#`, at most 255 bytes)"
        )));
    }
    Ok(run_id.into())
}

/// Connects, opens a channel and declares the exchange, all within [`CONNECT_TIMEOUT`].
fn connect(rt: &Runtime, url: &str, confirms: bool) -> Result<(Connection, Channel)> {
    let opened = rt.block_on(async {
        tokio::time::timeout(CONNECT_TIMEOUT, async {
            let props = ConnectionProperties::default().with_connection_name("troupe-lab events".into());
            let conn = Connection::connect(url, props).await?;
            let ch = conn.create_channel().await?;
            let opts = ExchangeDeclareOptions { durable: false, ..Default::default() };
            ch.exchange_declare(EXCHANGE.into(), ExchangeKind::Topic, opts, FieldTable::default()).await?;
            if confirms {
                ch.confirm_select(ConfirmSelectOptions::default()).await?;
            }
            Ok::<_, lapin::Error>((conn, ch))
        })
        .await
    });
    match opened {
        Ok(Ok(pair)) => Ok(pair),
        Ok(Err(e)) => Err(unreachable(url, e)),
        Err(_) => Err(unreachable(url, format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))),
    }
}

/// The writer thread's sink for `amqp://` (rules 1-4): buffers bytes, publishes every complete
/// line as one message and waits for the broker's confirms on `flush`.
pub struct Publisher {
    rt: Runtime,
    conn: Connection,
    channel: Channel,
    routing_key: ShortString,
    url: String,
    buf: Vec<u8>,
    unconfirmed: Vec<PublisherConfirm>,
    published: u64,
}

impl Publisher {
    /// Connects to the broker at `url` and publishes to routing key `run_id`.
    pub fn connect(url: &str, run_id: &str) -> Result<Publisher> {
        let routing_key = routing_key(run_id)?;
        let (rt, conn, channel) = off_runtime(|| {
            let rt = runtime("troupe-amqp-pub")?;
            let (conn, channel) = connect(&rt, url, true)?;
            Ok::<_, Error>((rt, conn, channel))
        })?;
        Ok(Publisher {
            rt,
            conn,
            channel,
            routing_key,
            url: redact(url),
            buf: Vec::with_capacity(BATCH_BYTES),
            unconfirmed: Vec::new(),
            published: 0,
        })
    }

    /// Lines published so far (confirmed or not).
    pub fn published(&self) -> u64 {
        self.published
    }

    fn fail(&self, what: impl std::fmt::Display) -> std::io::Error {
        std::io::Error::other(format!("amqp publisher to {}: {what}", self.url))
    }

    /// Waits for every outstanding confirm (rule 3).
    fn confirm_all(&mut self) -> std::io::Result<()> {
        let pending = std::mem::take(&mut self.unconfirmed);
        let n = pending.len();
        let outcome = self.rt.block_on(async {
            let deadline = tokio::time::Instant::now() + CONFIRM_TIMEOUT;
            let (mut nacked, mut returned) = (0usize, 0usize);
            for c in pending {
                match tokio::time::timeout_at(deadline, c).await {
                    Ok(Ok(conf)) if conf.is_nack() => nacked += 1,
                    Ok(Ok(conf)) => returned += usize::from(conf.take_message().is_some()),
                    Ok(Err(e)) => return Err(format!("waiting for confirms: {e}")),
                    Err(_) => return Err(format!("{n} lines not confirmed within {CONFIRM_TIMEOUT:?}")),
                }
            }
            Ok((nacked, returned))
        });
        match outcome {
            Ok((0, 0)) => Ok(()),
            Ok((nacked, returned)) => Err(self.fail(format!(
                "of {n} lines the broker refused {nacked} and could not route {returned} (is a \
                 collector bound to run id {:?}? start it before the workload)",
                self.routing_key.as_str()
            ))),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Publishes every complete line in the buffer, in order (rules 1 and 4), in chunks of at
    /// most [`MAX_UNCONFIRMED`] lines.
    fn publish_complete(&mut self) -> std::io::Result<()> {
        let Some(end) = self.buf.iter().rposition(|&b| b == b'\n') else { return Ok(()) };
        let batch: Vec<u8> = self.buf.drain(..=end).collect();
        let lines: Vec<&[u8]> = batch.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        for chunk in lines.chunks(MAX_UNCONFIRMED) {
            if self.unconfirmed.len() + chunk.len() > MAX_UNCONFIRMED {
                self.confirm_all()?;
            }
            let outcome = self.rt.block_on(publish_in_order(&self.channel, &self.routing_key, chunk));
            self.published += outcome.len() as u64;
            for published in outcome {
                match published {
                    Ok(confirm) => self.unconfirmed.push(confirm),
                    Err(e) => return Err(self.fail(e)),
                }
            }
        }
        Ok(())
    }
}

/// Publishes `lines` in their order, pipelined: every publish is polled once, in order, before
/// any is awaited. lapin's `basic_publish` hands its frames to the connection's queue on its
/// first poll (everything before its only await is synchronous), so the frames go out in this
/// order while the hand-offs overlap; `lab_amqp` checks the order on every run. Stops at the
/// first failure; returns the outcomes of the publishes it made.
async fn publish_in_order(
    channel: &Channel,
    key: &ShortString,
    lines: &[&[u8]],
) -> Vec<lapin::Result<PublisherConfirm>> {
    let opts = BasicPublishOptions { mandatory: true, immediate: false };
    let mut futs: Vec<_> = lines
        .iter()
        .map(|l| Box::pin(channel.basic_publish(EXCHANGE.into(), key.clone(), opts, l, BasicProperties::default())))
        .collect();
    let mut done: Vec<Option<lapin::Result<PublisherConfirm>>> = Vec::with_capacity(futs.len());
    std::future::poll_fn(|cx| {
        for f in futs.iter_mut() {
            done.push(match f.as_mut().poll(cx) {
                std::task::Poll::Ready(r) => Some(r),
                std::task::Poll::Pending => None,
            });
        }
        std::task::Poll::Ready(())
    })
    .await;
    let mut out = Vec::with_capacity(futs.len());
    for (f, d) in futs.into_iter().zip(done) {
        let r = match d {
            Some(r) => r,
            None => f.await,
        };
        let failed = r.is_err();
        out.push(r);
        if failed {
            break;
        }
    }
    out
}

impl Write for Publisher {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= BATCH_BYTES {
            self.publish_complete()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.publish_complete()?;
        self.confirm_all()
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let conn = &self.conn;
        let _ = self.rt.block_on(async { tokio::time::timeout(DRAIN_TIMEOUT, conn.close(200, "bye".into())).await });
    }
}

/// What a [`Collector`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectStats {
    /// Lines appended to the file.
    pub lines: u64,
    /// Distinct `node` fields seen.
    pub nodes: usize,
    /// Nodes whose `run_finished` arrived.
    pub finished: usize,
    /// Whether every node seen (and at least `nodes_done`) sent `run_finished` (rule 6).
    pub all_finished: bool,
}

#[derive(Default)]
struct Seen {
    lines: u64,
    nodes: HashSet<String>,
    finished: HashSet<String>,
    /// Set when the consumer ended before `finish` asked it to (the broker went away).
    lost: Option<String>,
}

impl Seen {
    fn done(&self, nodes_done: usize) -> bool {
        self.finished.len() >= nodes_done && self.nodes.iter().all(|n| self.finished.contains(n))
    }

    fn record(&mut self, line: &[u8]) {
        self.lines += 1;
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else { return };
        let Some(node) = v.get("node").and_then(|n| n.as_str()) else { return };
        if !self.nodes.contains(node) {
            self.nodes.insert(node.to_string());
        }
        if v.get("ev").and_then(|e| e.as_str()) == Some("run_finished") {
            self.finished.insert(node.to_string());
        }
    }
}

/// The lab side of `amqp://` (rules 5 and 6): consumes one run's lines into a file.
#[must_use = "call finish to wait for the nodes and close the connection"]
pub struct Collector {
    rt: Option<Runtime>,
    conn: Connection,
    seen: Arc<(Mutex<Seen>, Condvar)>,
    stop: Arc<Notify>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    path: PathBuf,
    url: String,
}

impl Collector {
    /// Connects to `url`, binds a fresh exclusive queue to routing key `run_id` and starts
    /// appending the lines it receives to `path`. Every line published after this returns is
    /// received (rule 5).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use troupe_lab::events::amqp::Collector;
    /// use troupe_lab::events::writer::{Common, EventWriter, Transport};
    ///
    /// // The URL `bash scripts/rabbitmq.sh start DIR` printed.
    /// let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
    /// let collector = Collector::start(url, "run-1", "events.raw.jsonl".as_ref())?;
    /// let common = Common { run: "run-1".into(), rt: "troupe".into(), node: "n1".into() };
    /// let w = EventWriter::start(Transport::parse(url), common, 65_536, Duration::from_secs(1))?;
    /// w.emitter().emit("ready", serde_json::json!({"what": "pairs", "count": 4}));
    /// let (_dropped, errors) = w.finish(serde_json::json!({"errors": 0}));
    /// let stats = collector.finish(1, Duration::from_secs(10))?;
    /// assert!(stats.all_finished && errors == 0);
    /// # Ok::<(), troupe_lab::Error>(())
    /// ```
    pub fn start(url: &str, run_id: &str, path: &Path) -> Result<Collector> {
        let key = routing_key(run_id)?;
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::io(path, e))?;
        let (rt, conn, channel, consumer) = off_runtime(|| {
            let rt = runtime("troupe-amqp-col")?;
            let (conn, channel) = connect(&rt, url, false)?;
            let consumer = subscribe(&rt, &channel, key, url)?;
            Ok::<_, Error>((rt, conn, channel, consumer))
        })?;
        let seen: Arc<(Mutex<Seen>, Condvar)> = Arc::default();
        let stop = Arc::new(Notify::new());
        let (seen2, stop2, handle) = (Arc::clone(&seen), Arc::clone(&stop), rt.handle().clone());
        let thread = std::thread::Builder::new()
            .name("troupe-amqp-collector".into())
            .spawn(move || handle.block_on(consume(consumer, channel, file, seen2, stop2)))
            .map_err(|e| Error::other(format!("cannot start the collector thread: {e}")))?;
        Ok(Collector {
            rt: Some(rt),
            conn,
            seen,
            stop,
            thread: Some(thread),
            path: path.to_path_buf(),
            url: redact(url),
        })
    }

    /// The file lines go to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines received so far.
    pub fn lines(&self) -> u64 {
        self.seen.0.lock().map(|s| s.lines).unwrap_or(0)
    }

    /// Waits (at most `timeout`) until every node that sent a line, and at least `nodes_done`
    /// nodes, sent `run_finished`; then stops and reports (rule 6). Pass the number of nodes
    /// the run has, so a node whose first line is still on its way is waited for.
    pub fn finish(mut self, nodes_done: usize, timeout: Duration) -> Result<CollectStats> {
        let deadline = Instant::now() + timeout;
        {
            let (lock, cv) = &*self.seen;
            let mut s = lock.lock().map_err(|_| Error::other("collector state poisoned"))?;
            while !s.done(nodes_done) && s.lost.is_none() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                s = cv.wait_timeout(s, left).map_err(|_| Error::other("collector state poisoned"))?.0;
            }
        }
        let written = self.stop_thread();
        let s = self.seen.0.lock().map_err(|_| Error::other("collector state poisoned"))?;
        if let Some(why) = &s.lost {
            return Err(Error::other(format!(
                "the collector lost the broker at {} after {} lines: {why}",
                self.url, s.lines
            )));
        }
        written.map_err(|e| Error::io(&self.path, e))?;
        Ok(CollectStats {
            lines: s.lines,
            nodes: s.nodes.len(),
            finished: s.finished.len(),
            all_finished: s.done(nodes_done),
        })
    }

    /// Stops the consumer thread, closes the connection; the file write outcome.
    fn stop_thread(&mut self) -> std::io::Result<()> {
        self.stop.notify_one();
        let written = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("the collector thread panicked")),
            None => Ok(()),
        };
        if let Some(rt) = self.rt.take() {
            let conn = &self.conn;
            off_runtime(move || {
                let close =
                    rt.block_on(async { tokio::time::timeout(DRAIN_TIMEOUT, conn.close(200, "bye".into())).await });
                drop(close);
                rt.shutdown_timeout(DRAIN_TIMEOUT);
            });
        }
        written
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

/// Declares a fresh exclusive queue, binds it to `key` and starts consuming (rule 5).
fn subscribe(rt: &Runtime, channel: &Channel, key: ShortString, url: &str) -> Result<lapin::Consumer> {
    rt.block_on(async {
        tokio::time::timeout(CONNECT_TIMEOUT, async {
            let opts = QueueDeclareOptions { exclusive: true, auto_delete: true, ..Default::default() };
            let q = channel.queue_declare("".into(), opts, FieldTable::default()).await?;
            let name = q.name().clone();
            let bind = QueueBindOptions::default();
            channel.queue_bind(name.clone(), EXCHANGE.into(), key, bind, FieldTable::default()).await?;
            let opts = BasicConsumeOptions { no_ack: true, exclusive: true, ..Default::default() };
            channel.basic_consume(name, "troupe-lab".into(), opts, FieldTable::default()).await
        })
        .await
    })
    .map_err(|_| unreachable(url, "no answer to queue set-up"))?
    .map_err(|e| Error::other(format!("cannot consume from {EXCHANGE} at {}: {e}", redact(url))))
}

/// The collector thread: appends deliveries until told to stop, then drains (rules 5, 6).
async fn consume(
    mut consumer: lapin::Consumer,
    channel: Channel,
    file: std::fs::File,
    seen: Arc<(Mutex<Seen>, Condvar)>,
    stop: Arc<Notify>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let put = |line: &[u8], out: &mut BufWriter<std::fs::File>| -> std::io::Result<()> {
        out.write_all(line)?;
        out.write_all(b"\n")?;
        let (lock, cv) = &*seen;
        if let Ok(mut s) = lock.lock() {
            s.record(line);
            cv.notify_all();
        }
        Ok(())
    };
    loop {
        tokio::select! {
            _ = stop.notified() => break,
            _ = tick.tick() => out.flush()?,
            d = consumer.next() => match d {
                Some(Ok(d)) => put(&d.data, &mut out)?,
                other => {
                    let why = match other { Some(Err(e)) => e.to_string(), _ => "consumer cancelled".into() };
                    let (lock, cv) = &*seen;
                    if let Ok(mut s) = lock.lock() {
                        s.lost = Some(why);
                    }
                    cv.notify_all();
                    out.flush()?;
                    return Ok(());
                }
            },
        }
    }
    // Take what is already on its way: stop at the first 50 ms without a delivery, bounded in
    // count and by DRAIN_TIMEOUT.
    let drain_until = tokio::time::Instant::now() + DRAIN_TIMEOUT;
    for _ in 0..1_000_000 {
        let gap = (tokio::time::Instant::now() + Duration::from_millis(50)).min(drain_until);
        match tokio::time::timeout_at(gap, consumer.next()).await {
            Ok(Some(Ok(d))) => put(&d.data, &mut out)?,
            _ => break,
        }
    }
    drop(channel);
    out.flush()
}
