//! The lab's delaying TCP relay: how a workload injects a simulated round-trip time into the
//! transport of any runtime (tc netem is not available on every kernel the lab runs on). A node
//! dials the relay instead of its peer; the relay forwards every byte to the real address and
//! back, each chunk late by the one-way delay (rtt / 2). The `latency` workload puts it between
//! Troupe's nodes and between Distributed Erlang's nodes alike (docs/latency.md).
//!
//! Rules:
//! 1. A relay listens on 127.0.0.1 (a port the OS picks). Each accepted connection gets one
//!    new connection to the relay's target, made when it is accepted; until
//!    [`Relay::forward_to`] has named the target an accepted connection waits (at most
//!    [`TARGET_WAIT`], then it is closed).
//! 2. Every chunk read from either side is timestamped when the read returns and written to
//!    the other side no earlier than that instant plus the one-way delay, in arrival order.
//!    Chunks are neither merged nor reordered, so order and bandwidth are kept: the relay adds
//!    latency, not a rate limit.
//! 3. Buffers are bounded: per direction of a connection at most [`MAX_QUEUED_CHUNKS`] chunks
//!    of at most [`CHUNK`] bytes wait; a full queue stops reading that side (TCP back-pressure
//!    reaches the sender).
//! 4. Bytes are counted per direction: `up` is client to target, `down` target to client;
//!    `in` when read, `out` when written. A drained connection has in = out both ways.
//! 5. End of stream from one side is passed on, after the delay, as a write shutdown of the
//!    other; an error on either side closes both sockets of that connection.
//! 6. Process form (`troupe lab exec latency-relay`, [`serve_lines`]): one command per line
//!    on stdin, one answer line on stdout: `listen` -> `listening ADDR`; `forward LISTEN
//!    TARGET` -> `ok`; `stats` -> `stats {json}` (totals over its relays); `quit` or end of
//!    input ends it. A bad line is answered `error ...` naming what was wrong.
//! 7. Chunk buffers are reused: the writer hands each written buffer back to its reader, so
//!    the relay does not allocate and zero a fresh buffer per read. It is the same code for
//!    every runtime it carries; before this, allocating the buffers took about a tenth of a
//!    many-pair 8 MiB `latency` run's CPU time (`perf`), taken from both runtimes alike.
//! 8. Where the kernel can splice (Linux), a chunk is held in a pipe instead of a buffer
//!    (`pipes.rs`): spliced from the source socket into an empty pipe, and from the pipe into
//!    the destination when due, so the relay never copies the bytes it carries. At most
//!    [`MAX_PIPES`] pipes per direction (of up to [`pipes::PIPE_BYTES`] each) hold chunks; when
//!    all are in flight the reader waits for one to come back (rule 3's back-pressure). Where
//!    splicing is refused, the direction copies as in rule 7, from its next chunk on. Chunks
//!    are counted by how they went (`chunks_piped`, `chunks_copied`). Same code for every
//!    runtime; before it, the relay's threads took over half of the CPU samples of a
//!    128-pair 8 MiB `latency` run, most of it the kernel copying into and out of its buffers.
//!
//! ```
//! use std::io::{Read, Write};
//! use std::time::Duration;
//! use troupe_lab::relay::Relay;
//!
//! let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
//! let target = echo.local_addr().unwrap();
//! std::thread::spawn(move || {
//!     let (mut s, _) = echo.accept().unwrap();
//!     let mut b = [0u8; 4];
//!     s.read_exact(&mut b).unwrap();
//!     s.write_all(&b).unwrap();
//! });
//! let relay = Relay::bind(Duration::from_millis(1)).unwrap();
//! relay.forward_to(target);
//! let mut c = std::net::TcpStream::connect(relay.addr()).unwrap();
//! let t0 = std::time::Instant::now();
//! c.write_all(b"ping").unwrap();
//! let mut b = [0u8; 4];
//! c.read_exact(&mut b).unwrap();
//! assert_eq!(&b, b"ping");
//! assert!(t0.elapsed() >= Duration::from_millis(2)); // 1 ms each way
//! ```

use std::io::{BufRead, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

pub mod pipes;

use pipes::Pipe;

/// Largest chunk read at once (rule 3).
pub const CHUNK: usize = 64 * 1024;
/// Chunks that may wait per direction of a connection (rule 3): 64 MiB at most.
pub const MAX_QUEUED_CHUNKS: usize = 1024;
/// Pipes that may hold chunks per direction of a connection (rule 8): 64 MiB at most, as
/// rule 3 allows buffers.
pub const MAX_PIPES: usize = 64;
/// How long an accepted connection waits for the target to be named (rule 1).
pub const TARGET_WAIT: Duration = Duration::from_secs(30);

/// What can go wrong starting a relay.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The listening socket could not be made.
    #[error("the relay cannot listen on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    /// The accept thread could not be started.
    #[error("the relay cannot start its thread: {0}")]
    Thread(std::io::Error),
}

/// Byte and connection counts of a relay (rule 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RelayStats {
    /// Connections accepted and paired with the target.
    pub connections: u64,
    /// Bytes read from clients.
    pub bytes_up_in: u64,
    /// Bytes written to the target.
    pub bytes_up_out: u64,
    /// Bytes read from the target.
    pub bytes_down_in: u64,
    /// Bytes written to clients.
    pub bytes_down_out: u64,
    /// Chunks carried in pipes, both directions (rule 8).
    pub chunks_piped: u64,
    /// Chunks carried in buffers, both directions (rules 7 and 8).
    pub chunks_copied: u64,
}

impl RelayStats {
    fn add(&mut self, o: &RelayStats) {
        self.connections += o.connections;
        self.bytes_up_in += o.bytes_up_in;
        self.bytes_up_out += o.bytes_up_out;
        self.bytes_down_in += o.bytes_down_in;
        self.bytes_down_out += o.bytes_down_out;
        self.chunks_piped += o.chunks_piped;
        self.chunks_copied += o.chunks_copied;
    }
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    up_in: AtomicU64,
    up_out: AtomicU64,
    down_in: AtomicU64,
    down_out: AtomicU64,
    piped: AtomicU64,
    copied: AtomicU64,
}

struct Shared {
    target: Mutex<Option<SocketAddr>>,
    target_set: Condvar,
    counters: Counters,
    closed: AtomicBool,
}

/// A delaying relay on 127.0.0.1 (rules 1-5). Dropping it stops accepting; connections
/// already paired run until one side closes.
pub struct Relay {
    addr: SocketAddr,
    one_way: Duration,
    shared: Arc<Shared>,
}

impl Relay {
    /// Listens on a free loopback port, delaying each direction by `one_way`.
    pub fn bind(one_way: Duration) -> Result<Relay, RelayError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(RelayError::Bind)?;
        let addr = listener.local_addr().map_err(RelayError::Bind)?;
        let shared = Arc::new(Shared {
            target: Mutex::new(None),
            target_set: Condvar::new(),
            counters: Counters::default(),
            closed: AtomicBool::new(false),
        });
        let sh = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("relay-accept".into())
            .spawn(move || accept_loop(listener, sh, one_way))
            .map_err(RelayError::Thread)?;
        Ok(Relay { addr, one_way, shared })
    }

    /// The address clients dial.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The delay added to each direction.
    pub fn one_way(&self) -> Duration {
        self.one_way
    }

    /// Names the real address every connection is forwarded to (rule 1); waiting connections
    /// go on at once.
    pub fn forward_to(&self, target: SocketAddr) {
        if let Ok(mut t) = self.shared.target.lock() {
            *t = Some(target);
        }
        self.shared.target_set.notify_all();
    }

    /// The counts so far (rule 4).
    pub fn stats(&self) -> RelayStats {
        let c = &self.shared.counters;
        RelayStats {
            connections: c.connections.load(Ordering::Acquire),
            bytes_up_in: c.up_in.load(Ordering::Acquire),
            bytes_up_out: c.up_out.load(Ordering::Acquire),
            bytes_down_in: c.down_in.load(Ordering::Acquire),
            bytes_down_out: c.down_out.load(Ordering::Acquire),
            chunks_piped: c.piped.load(Ordering::Acquire),
            chunks_copied: c.copied.load(Ordering::Acquire),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.target_set.notify_all();
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn accept_loop(listener: TcpListener, sh: Arc<Shared>, one_way: Duration) {
    for conn in listener.incoming() {
        if sh.closed.load(Ordering::Acquire) {
            return;
        }
        let Ok(client) = conn else { continue };
        let sh = Arc::clone(&sh);
        let _ = std::thread::Builder::new().name("relay-conn".into()).spawn(move || pair(client, sh, one_way));
    }
}

/// Waits for the target (rule 1) and starts both directions.
fn pair(client: TcpStream, sh: Arc<Shared>, one_way: Duration) {
    let deadline = Instant::now() + TARGET_WAIT;
    let target = {
        let Ok(mut t) = sh.target.lock() else { return };
        loop {
            if let Some(a) = *t {
                break a;
            }
            let now = Instant::now();
            if now >= deadline || sh.closed.load(Ordering::Acquire) {
                return;
            }
            t = match sh.target_set.wait_timeout(t, deadline - now) {
                Ok((g, _)) => g,
                Err(_) => return,
            };
        }
    };
    let Ok(server) = TcpStream::connect(target) else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    sh.counters.connections.fetch_add(1, Ordering::AcqRel);
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else { return };
    pump(client, server, one_way, Arc::clone(&sh), |c: &Counters| (&c.up_in, &c.up_out));
    pump(s2, c2, one_way, Arc::clone(&sh), |c: &Counters| (&c.down_in, &c.down_out));
}

type Pick = fn(&Counters) -> (&AtomicU64, &AtomicU64);

/// Where a chunk's bytes wait: a reused buffer (rule 7, always [`CHUNK`] long) or a pipe
/// (rule 8).
enum Body {
    Copied(Vec<u8>),
    Piped(Pipe),
}

/// A chunk in flight: when it was read, where its bytes are, how many.
type Chunk = (Instant, Body, usize);

/// One direction: a reader thread timestamps chunks into a bounded queue, a writer thread
/// releases each at its arrival plus `one_way` (rules 2-5) and hands the buffer or pipe back
/// for the next read (rules 7-8).
fn pump(src: TcpStream, dst: TcpStream, one_way: Duration, sh: Arc<Shared>, pick: Pick) {
    let (tx, rx) = sync_channel::<Option<Chunk>>(MAX_QUEUED_CHUNKS);
    let (back_tx, back_rx) = sync_channel::<Body>(MAX_QUEUED_CHUNKS + 1);
    let (Ok(src_w), Ok(dst_r)) = (src.try_clone(), dst.try_clone()) else { return };
    let sh2 = Arc::clone(&sh);
    let _ = std::thread::Builder::new()
        .name("relay-read".into())
        .spawn(move || read_side(src, tx, &back_rx, &sh, pick, dst_r));
    let _ = std::thread::Builder::new()
        .name("relay-write".into())
        .spawn(move || write_side(dst, rx, &back_tx, one_way, &sh2, pick, src_w));
}

/// The reader's source of empty bodies: handed back by the writer, else new (rules 7-8).
struct Bodies<'a> {
    back: &'a Receiver<Body>,
    /// Pipes made so far; `None` once this direction copies (rule 8).
    pipes: Option<usize>,
}

impl Bodies<'_> {
    /// An empty body; `None` when the writer is gone.
    fn next(&mut self) -> Option<Body> {
        // Bounded: a turn that continues either turned this direction to copying (once) or
        // dropped a pipe handed back after it (at most the pipes made).
        loop {
            let body = match (self.back.try_recv(), self.pipes) {
                // A pipe handed back after this direction turned to copying is dropped.
                (Ok(Body::Piped(_)), None) => continue,
                (Ok(b), _) => b,
                (Err(_), None) => Body::Copied(vec![0u8; CHUNK]),
                (Err(_), Some(made)) if made < MAX_PIPES => match Pipe::new() {
                    Ok(p) => {
                        self.pipes = Some(made + 1);
                        Body::Piped(p)
                    }
                    Err(pipes::Unsupported) => {
                        self.pipes = None;
                        continue;
                    }
                },
                // Rule 8: every pipe is in flight; wait for the writer to hand one back.
                (Err(_), Some(_)) => self.back.recv().ok()?,
            };
            return Some(body);
        }
    }
}

fn read_side(
    mut src: TcpStream,
    tx: SyncSender<Option<Chunk>>,
    back: &Receiver<Body>,
    sh: &Shared,
    pick: Pick,
    dst: TcpStream,
) {
    let mut bodies = Bodies { back, pipes: Some(0) };
    loop {
        let Some(mut body) = bodies.next() else { return };
        let read = match &mut body {
            Body::Copied(buf) => src.read(buf),
            Body::Piped(p) => match p.fill(&src) {
                Ok(r) => r,
                Err(pipes::Unsupported) => {
                    // Rule 8: refused before any byte moved; copy from now on.
                    bodies.pipes = None;
                    continue;
                }
            },
        };
        match read {
            Ok(0) => {
                let _ = tx.send(None);
                return;
            }
            Ok(n) => {
                let at = Instant::now();
                pick(&sh.counters).0.fetch_add(n as u64, Ordering::AcqRel);
                let how = if matches!(body, Body::Piped(_)) { &sh.counters.piped } else { &sh.counters.copied };
                how.fetch_add(1, Ordering::AcqRel);
                if tx.send(Some((at, body, n))).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                // Rule 5: an error closes both sockets of the connection.
                let _ = dst.shutdown(Shutdown::Both);
                let _ = src.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

fn write_side(
    mut dst: TcpStream,
    rx: Receiver<Option<Chunk>>,
    back: &SyncSender<Body>,
    one_way: Duration,
    sh: &Shared,
    pick: Pick,
    src: TcpStream,
) {
    while let Ok(item) = rx.recv() {
        let Some((at, body, n)) = item else {
            let _ = dst.shutdown(Shutdown::Write);
            return;
        };
        let due = at + one_way;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let wrote = match &body {
            Body::Copied(buf) => dst.write_all(&buf[..n]),
            Body::Piped(p) => p.drain_to(&dst, n),
        };
        if wrote.is_err() {
            let _ = dst.shutdown(Shutdown::Both);
            let _ = src.shutdown(Shutdown::Both);
            return;
        }
        pick(&sh.counters).1.fetch_add(n as u64, Ordering::AcqRel);
        let _ = back.try_send(body); // rules 7-8; a full return queue just frees it
    }
}

/// The process form (rule 6): serves commands from `input` until `quit` or its end, creating
/// relays that delay each direction by `one_way`.
pub fn serve_lines(one_way: Duration, input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut relays: Vec<Relay> = Vec::new();
    for line in input.lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            [] => continue,
            ["quit"] => break,
            ["listen"] => match Relay::bind(one_way) {
                Ok(r) => {
                    let a = format!("listening {}", r.addr());
                    relays.push(r);
                    a
                }
                Err(e) => format!("error {e}"),
            },
            ["forward", listen, target] => {
                match (relays.iter().find(|r| r.addr().to_string() == *listen), target.parse::<SocketAddr>()) {
                    (Some(r), Ok(t)) => {
                        r.forward_to(t);
                        "ok".to_string()
                    }
                    (None, _) => {
                        format!("error forward: no relay listens on {listen:?} (use an address `listen` gave)")
                    }
                    (_, Err(_)) => format!("error forward: target {target:?} is not an address like 127.0.0.1:7000"),
                }
            }
            ["stats"] => {
                let mut total = RelayStats::default();
                for r in &relays {
                    total.add(&r.stats());
                }
                format!("stats {}", serde_json::to_string(&total).unwrap_or_default())
            }
            _ => format!("error unknown command {line:?}; commands: listen, forward LISTEN TARGET, stats, quit"),
        };
        writeln!(output, "{answer}")?;
        output.flush()?;
    }
    Ok(())
}
