//! The live view of a run (`troupe lab run WORKLOAD --watch`): a small HTTP server beside the
//! run that serves one self-contained page plotting throughput per second with the faults
//! shaded, and the JSON it polls, read from the run's event files as they grow ([`data`]).
//!
//! Rules:
//! 1. The address is loopback unless the user names another: [`parse_addr`] reads `--watch`'s
//!    value (`IP:PORT`, or a bare `PORT` on 127.0.0.1); [`DEFAULT_ADDR`] is `127.0.0.1:0`, a
//!    port the kernel picks. An address that does not parse or cannot be bound is refused
//!    with an error naming `--watch` (`ErrorKind::Unsupported`: a usage error).
//! 2. `GET /` is [`PAGE`]: HTML with its script and style inline, nothing fetched from
//!    elsewhere; it polls `GET /data` every 500 ms, draws a line plot on a canvas with fault
//!    intervals shaded, and sets `document.title` to `troupe watch: N points` after each draw.
//!    Any other path is 404, any other method 405; every answer closes its connection.
//! 3. `/data` is [`data::Series::to_json`] plus `title`, after reading what the event files
//!    gained since the last request.
//! 4. Bounded: a request is read for at most 2 s and 8 KiB; at most [`MAX_CONNECTIONS`] are
//!    served at once (more are closed unanswered); the accept loop looks at its stop flag every
//!    20 ms.
//! 5. [`Watch::finish`] (the run has ended) stops the server: the listener is closed within
//!    the accept loop's 20 ms, and the call waits at most 3 s for requests in flight.

pub mod data;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};
use crate::events::writer::now_us;

/// The page served at `/` (rule 2).
pub const PAGE: &str = include_str!("page.html");

/// Where the view listens when `--watch` has no value (rule 1).
pub const DEFAULT_ADDR: &str = "127.0.0.1:0";

/// The most requests served at once (rule 4).
pub const MAX_CONNECTIONS: usize = 16;

/// The event files the view reads, in the run folder (rule 1 of [`data`]).
pub const SOURCES: [&str; 2] = ["events.raw.jsonl", "events.net.jsonl"];

/// Reads `--watch`'s value (rule 1): `IP:PORT`, `[IPv6]:PORT`, or a bare `PORT` on 127.0.0.1.
///
/// ```
/// use troupe_lab::watch::parse_addr;
/// assert_eq!(parse_addr("8080").unwrap().to_string(), "127.0.0.1:8080");
/// assert_eq!(parse_addr("127.0.0.1:0").unwrap().port(), 0);
/// assert!(parse_addr("localhost:x").unwrap_err().to_string().contains("--watch"));
/// ```
pub fn parse_addr(s: &str) -> Result<SocketAddr> {
    let t = s.trim();
    if let Ok(port) = t.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    t.parse::<SocketAddr>().map_err(|_| {
        usage(format!(
            "--watch {s:?} is not an address: give IP:PORT (127.0.0.1:8080), a port (8080), or no value for a free port on 127.0.0.1"
        ))
    })
}

/// A refused `--watch` value: a usage error (exit 2 in the CLI).
fn usage(msg: String) -> Error {
    Error::new(ErrorKind::Unsupported(msg))
}

struct Shared {
    title: String,
    t0_us: i64,
    tails: Vec<data::Tail>,
    series: data::Series,
}

/// A running view; [`Watch::finish`] stops it.
#[must_use = "the view serves until finish() is called"]
pub struct Watch {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    live: Arc<AtomicUsize>,
    thread: JoinHandle<()>,
}

impl Watch {
    /// Binds `addr` and starts serving the view of the run folder `dir` (which may not exist
    /// yet) under `title`; times count from now.
    pub fn start(addr: SocketAddr, dir: &Path, title: &str) -> Result<Watch> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| usage(format!("--watch {addr}: cannot listen there: {e}; give another address or port")))?;
        listener.set_nonblocking(true).map_err(|e| Error::other(format!("--watch {addr}: {e}")))?;
        let addr = listener.local_addr().map_err(|e| Error::other(format!("--watch {addr}: {e}")))?;
        let t0_us = now_us();
        let shared = Arc::new(Mutex::new(Shared {
            title: title.to_string(),
            t0_us,
            tails: SOURCES.iter().map(|f| data::Tail::new(dir.join(f))).collect::<Vec<_>>(),
            series: data::Series::new(t0_us),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let (flag, count) = (Arc::clone(&stop), Arc::clone(&live));
        let thread = std::thread::Builder::new()
            .name("lab-watch".into())
            .spawn(move || accept_loop(listener, shared, flag, count))
            .map_err(|e| Error::other(format!("cannot start the --watch server: {e}")))?;
        Ok(Watch { addr, stop, live, thread })
    }

    /// The address it listens on (the port the kernel picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/`, the page's address.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stops serving (rule 5).
    pub fn finish(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
        let deadline = Instant::now() + Duration::from_secs(3);
        while self.live.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Mutex<Shared>>, stop: Arc<AtomicBool>, live: Arc<AtomicUsize>) {
    // Bounded by the stop flag, looked at every 20 ms (rule 4).
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((conn, _)) => {
                if live.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    drop(conn);
                    continue;
                }
                live.fetch_add(1, Ordering::SeqCst);
                let (shared, live2) = (Arc::clone(&shared), Arc::clone(&live));
                let spawned = std::thread::Builder::new().name("lab-watch-conn".into()).spawn(move || {
                    serve(conn, &shared);
                    live2.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    live.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Reads one request (rule 4) and answers it (rules 2, 3).
fn serve(mut conn: TcpStream, shared: &Mutex<Shared>) {
    if conn.set_nonblocking(false).is_err() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    let mut req = Vec::new();
    let mut chunk = [0u8; 2048];
    // Bounded by the 2 s deadline and the 8 KiB cap.
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || req.len() > 8192 || conn.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&chunk[..n]),
        }
    }
    let line = String::from_utf8_lossy(&req).lines().next().unwrap_or("").to_string();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET", "/") | ("GET", "/index.html") => ("200 OK", "text/html; charset=utf-8", PAGE.to_string()),
        ("GET", "/data") => ("200 OK", "application/json", data_json(shared)),
        ("GET", _) => ("404 Not Found", "text/plain; charset=utf-8", format!("no page at {path}; the view is at /\n")),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET is served\n".to_string()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(body.as_bytes()));
}

fn data_json(shared: &Mutex<Shared>) -> String {
    let Ok(mut g) = shared.lock() else { return "{}".into() };
    let g = &mut *g;
    for t in &mut g.tails {
        for l in t.read() {
            g.series.feed_line(&l);
        }
    }
    let mut v = g.series.to_json(now_us());
    v["title"] = serde_json::Value::String(g.title.clone());
    v["t0_us"] = serde_json::json!(g.t0_us);
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn rules_2_and_3_the_page_the_data_and_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let w = Watch::start(parse_addr(DEFAULT_ADDR).unwrap(), t.path(), "scp on troupe").unwrap();
        assert!(w.local_addr().ip().is_loopback() && w.local_addr().port() != 0);
        assert_eq!(w.url(), format!("http://{}/", w.local_addr()));
        let page = get(w.local_addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(page.starts_with("HTTP/1.1 200 OK") && page.contains("text/html"), "{page}");
        assert!(page.contains("<canvas") && page.contains("document.title"));
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http"), "nothing fetched from elsewhere");
        let ts = now_us();
        std::fs::write(
            t.path().join(SOURCES[0]),
            format!("{{\"ts_us\":{ts},\"run\":\"r\",\"rt\":\"troupe\",\"node\":\"a\",\"ev\":\"throughput\",\"second\":0,\"count\":9}}\n"),
        )
        .unwrap();
        let d = get(w.local_addr(), "GET /data?x=1 HTTP/1.1\r\n\r\n");
        let body: serde_json::Value = serde_json::from_str(d.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["points"][0][1], 9);
        assert_eq!(body["title"], "scp on troupe");
        assert!(get(w.local_addr(), "GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(w.local_addr(), "POST /data HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        w.finish();
    }

    #[test]
    fn rule_5_finish_stops_the_server() {
        let t = tempfile::tempdir().unwrap();
        let w = Watch::start(parse_addr(DEFAULT_ADDR).unwrap(), t.path(), "x").unwrap();
        let addr = w.local_addr();
        let t0 = Instant::now();
        w.finish();
        assert!(t0.elapsed() < Duration::from_secs(4));
        assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(), "still listening at {addr}");
    }

    #[test]
    fn rule_1_bad_addresses_name_the_flag() {
        for bad in ["", "nohost", "127.0.0.1", "1.2.3.4:99999", "::1:80"] {
            let e = parse_addr(bad).unwrap_err().to_string();
            assert!(e.contains("--watch") && e.contains("IP:PORT"), "{bad:?}: {e}");
        }
        assert_eq!(parse_addr("[::1]:8080").unwrap().to_string(), "[::1]:8080");
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let t = tempfile::tempdir().unwrap();
        let e = Watch::start(taken.local_addr().unwrap(), t.path(), "x").err().unwrap().to_string();
        assert!(e.contains("--watch") && e.contains("cannot listen"), "{e}");
    }
}
