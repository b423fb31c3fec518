//! The hub's delaying relay (rule 9 of [`super`]): with `delay_ms` set, every TCP connection
//! between the run's namespaces is redirected (nftables `redirect` in the hub's prerouting) to
//! this relay, which listens inside the hub, finds the connection's original destination
//! (`SO_ORIGINAL_DST`), connects to it and copies both directions, holding each chunk
//! `[min, max]` ms (uniform, seeded per connection) once the delay line is due. Order is kept:
//! a chunk is never released before the one read before it.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::events::writer::now_us;

/// The port the relay listens on inside the hub.
pub const PORT: u16 = 7400;
/// How long a connection to the original destination may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);
/// How often blocked threads look at the stop flag.
const TICK: Duration = Duration::from_millis(200);
/// The most bytes read at once (one chunk).
const CHUNK: usize = 64 * 1024;

/// What the relay did.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Connections relayed.
    pub connections: AtomicU64,
    /// Chunks held for a delay.
    pub delayed_chunks: AtomicU64,
    /// Connections whose original destination could not be reached.
    pub failed_connects: AtomicU64,
}

/// The running relay; it stops accepting on drop, and its copies end with their connections.
pub struct Relay {
    stop: Arc<AtomicBool>,
    /// From this wall-clock instant (µs) on, chunks are delayed; 0 = not yet.
    delay_from_us: Arc<AtomicI64>,
    /// Its counters.
    pub stats: Arc<RelayStats>,
}

impl Relay {
    /// Starts the relay inside namespace `hub` (the acceptor thread enters it; threads it starts
    /// stay there), delays uniform in `delay_ms` = [min, max], seeded by `seed`.
    pub fn start(hub: &str, delay_ms: [u64; 2], seed: u64) -> Result<Relay, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let delay_from_us = Arc::new(AtomicI64::new(0));
        let stats = Arc::new(RelayStats::default());
        let (tx, rx) = mpsc::channel::<Result<(), String>>();
        let (s, d, st) = (Arc::clone(&stop), Arc::clone(&delay_from_us), Arc::clone(&stats));
        let path = format!("/run/netns/{hub}");
        std::thread::Builder::new()
            .name("net-relay".into())
            .spawn(move || {
                let listener = match enter(&path).and_then(|()| {
                    TcpListener::bind(("0.0.0.0", PORT)).map_err(|e| format!("the relay cannot listen in the hub: {e}"))
                }) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = listener.set_nonblocking(true);
                let _ = tx.send(Ok(()));
                accept_loop(listener, delay_ms, seed, &s, &d, &st);
            })
            .map_err(|e| format!("cannot start the relay's thread: {e}"))?;
        rx.recv_timeout(Duration::from_secs(10)).map_err(|_| "the relay did not start".to_string())??;
        Ok(Relay { stop, delay_from_us, stats })
    }

    /// Chunks read from now on are delayed (the delay line is due).
    pub fn delay_now(&self) {
        self.delay_from_us.store(now_us().max(1), Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Moves this thread into the network namespace at `path`.
fn enter(path: &str) -> Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    // SAFETY: setns takes a valid open descriptor and a namespace type; it changes only the
    // calling thread's network namespace.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(format!("cannot enter {path}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The destination a redirected connection was going to.
fn original_dst(s: &TcpStream) -> Result<SocketAddr, String> {
    // SAFETY: sockaddr_in is plain old data; getsockopt writes at most `len` bytes into it.
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_IP,
            libc::SO_ORIGINAL_DST,
            (&mut addr as *mut libc::sockaddr_in).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(format!("SO_ORIGINAL_DST: {}", std::io::Error::last_os_error()));
    }
    let ip = std::net::Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr));
    Ok(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(addr.sin_port))))
}

fn accept_loop(
    l: TcpListener,
    delay: [u64; 2],
    seed: u64,
    stop: &Arc<AtomicBool>,
    from: &Arc<AtomicI64>,
    st: &Arc<RelayStats>,
) {
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        match l.accept() {
            Ok((client, _)) => {
                n += 1;
                let (stop, from, st) = (Arc::clone(stop), Arc::clone(from), Arc::clone(st));
                let conn_seed = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let _ = std::thread::Builder::new()
                    .name("net-relay-conn".into())
                    .spawn(move || connection(client, delay, conn_seed, &stop, &from, &st));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn connection(
    client: TcpStream,
    delay: [u64; 2],
    seed: u64,
    stop: &Arc<AtomicBool>,
    from: &Arc<AtomicI64>,
    st: &Arc<RelayStats>,
) {
    let _ = client.set_nonblocking(false);
    let Ok(dst) = original_dst(&client) else {
        st.failed_connects.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let server = match TcpStream::connect_timeout(&dst, CONNECT_LIMIT) {
        Ok(s) => s,
        Err(_) => {
            st.failed_connects.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    st.connections.fetch_add(1, Ordering::Relaxed);
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else { return };
    let up = {
        let (stop, from, st) = (Arc::clone(stop), Arc::clone(from), Arc::clone(st));
        std::thread::Builder::new()
            .name("net-relay-up".into())
            .spawn(move || pump(client, s2, delay, seed, &stop, &from, &st))
    };
    pump(server, c2, delay, seed.rotate_left(17), stop, from, st);
    if let Ok(h) = up {
        let _ = h.join();
    }
}

/// Copies `from` to `to`, each chunk held until its release time; ends at `from`'s end, on an
/// error, or once stopped.
fn pump(
    mut src: TcpStream,
    dst: TcpStream,
    delay: [u64; 2],
    seed: u64,
    stop: &AtomicBool,
    from: &AtomicI64,
    st: &RelayStats,
) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::Builder::new().name("net-relay-out".into()).spawn(move || {
        let mut dst = dst;
        for (at, bytes) in rx {
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            if dst.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = dst.shutdown(Shutdown::Write);
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let _ = src.set_read_timeout(Some(TICK));
    let mut last = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let on = from.load(Ordering::SeqCst);
                let hold = if on > 0 && now_us() >= on {
                    st.delayed_chunks.fetch_add(1, Ordering::Relaxed);
                    Duration::from_millis(rng.gen_range(delay[0]..=delay[1]))
                } else {
                    Duration::ZERO
                };
                last = last.max(Instant::now() + hold);
                if tx.send((last, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    drop(tx);
    if let Ok(w) = writer {
        let _ = w.join();
    }
}
