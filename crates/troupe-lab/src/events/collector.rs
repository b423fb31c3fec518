//! The lab side of the `tcp://HOST:PORT` event transport: accepts connections on a loopback
//! listener and appends every received line to a file, for workloads whose nodes do not share
//! the lab's file system.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// A running collector.
pub struct Collector {
    addr: SocketAddr,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: Option<JoinHandle<()>>,
    stopping: Arc<AtomicBool>,
    path: PathBuf,
}

impl Collector {
    /// Listens on `bind` (e.g. `127.0.0.1:0`) and appends lines to `path`.
    pub fn start(bind: &str, path: &Path) -> Result<Collector> {
        let listener = TcpListener::bind(bind).map_err(|e| Error::other(format!("cannot listen on {bind}: {e}")))?;
        let addr = listener.local_addr().map_err(|e| Error::other(e.to_string()))?;
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::io(path, e))?;
        let file = Arc::new(Mutex::new(file));
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let conns2 = Arc::clone(&conns);
        let stopping = Arc::new(AtomicBool::new(false));
        let stopping2 = Arc::clone(&stopping);
        let acceptor = std::thread::spawn(move || {
            let serve = |stream: std::net::TcpStream| {
                let _ = stream.set_nonblocking(false);
                let file = Arc::clone(&file);
                let h = std::thread::spawn(move || {
                    let mut batch = Vec::new();
                    for line in BufReader::new(stream).lines() {
                        let Ok(line) = line else { break };
                        batch.clear();
                        batch.extend_from_slice(line.as_bytes());
                        batch.push(b'\n');
                        if let Ok(mut f) = file.lock() {
                            let _ = f.write_all(&batch);
                        }
                    }
                });
                if let Ok(mut c) = conns2.lock() {
                    c.push(h);
                }
            };
            for stream in listener.incoming() {
                if let Ok(stream) = stream {
                    serve(stream);
                }
                // Once `finish` has set the flag (and connected to wake us), serve whatever is
                // still queued in the backlog, then stop.
                if stopping2.load(Ordering::SeqCst) {
                    if listener.set_nonblocking(true).is_ok() {
                        while let Ok((stream, _)) = listener.accept() {
                            serve(stream);
                        }
                    }
                    break;
                }
            }
        });
        Ok(Collector { addr, conns, acceptor: Some(acceptor), stopping, path: path.to_path_buf() })
    }

    /// The address to put in `TROUPE_EVENTS` as `tcp://{addr}`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The file lines go to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, then waits until every connection made before has been closed by its
    /// sender and everything it sent is written. Call it once the senders have finished.
    pub fn finish(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the acceptor with one last connection, which it reads as the stop signal.
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let handles: Vec<_> = self.conns.lock().map(|mut c| c.drain(..).collect()).unwrap_or_default();
        for h in handles {
            let _ = h.join();
        }
    }
}
