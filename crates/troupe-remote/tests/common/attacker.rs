//! An authenticated attacker for the adversarial tests: it holds the shared secret, opens a
//! `control` connection to a node as a full peer would (so the node dials back and the session
//! comes up, and closing it takes the peer down), and writes whatever control frames it likes.
//! Its listener completes the node's dial-back handshakes and discards what arrives on them,
//! or, for a deaf attacker ([`Attacker::connect_deaf`]), never reads them.
#![allow(dead_code, unreachable_pub)]

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use troupe_remote::frame::{kind, write_frame};
use troupe_remote::handshake::{self, Identity};
use troupe_remote::proto::Control;

use super::SECRET;

const T: Duration = Duration::from_secs(20);

/// A peer whose control connection is a raw socket.
pub struct Attacker {
    /// The control connection (blocking).
    pub control: TcpStream,
    /// The listen address it states (its own listener's).
    pub listen: String,
    me: Identity,
    listener: tokio::task::JoinHandle<()>,
}

impl Attacker {
    /// Connects to `target` as node `name`; returns once the node's dial-back handshake is done
    /// (the session is up).
    pub async fn connect(target: &str, name: &str) -> Attacker {
        Self::connect_reading(target, name, true).await
    }

    /// Like [`Attacker::connect`], but the connections the node dials back are never read
    /// after their handshake (kept open until [`Attacker::leave`]): whatever the node sends
    /// this peer stays in the node's buffers once the socket buffers are full.
    pub async fn connect_deaf(target: &str, name: &str) -> Attacker {
        Self::connect_reading(target, name, false).await
    }

    async fn connect_reading(target: &str, name: &str, reads: bool) -> Attacker {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listen = l.local_addr().unwrap().to_string();
        let me = Identity { name: name.into(), listen: listen.clone(), incarnation: 5 };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let acceptor = me.clone();
        let listener = tokio::spawn(async move {
            let mut up = Some(tx);
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((mut s, _)) = l.accept().await {
                if handshake::accept(&mut s, &acceptor, SECRET.as_bytes(), T).await.is_ok() {
                    if let Some(tx) = up.take() {
                        let _ = tx.send(());
                    }
                    conns.spawn(async move {
                        use tokio::io::AsyncReadExt;
                        if !reads {
                            let _kept = s;
                            return std::future::pending::<()>().await;
                        }
                        let mut buf = vec![0u8; 64 << 10];
                        while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
                    });
                }
            }
        });
        let mut sock = tokio::net::TcpStream::connect(target).await.unwrap();
        handshake::dial(&mut sock, &me, "control", 0, SECRET.as_bytes(), T).await.unwrap();
        tokio::time::timeout(T, rx).await.expect("the node dialled back").unwrap();
        let control = sock.into_std().unwrap();
        control.set_nonblocking(false).unwrap();
        control.set_write_timeout(Some(T)).unwrap();
        Attacker { control, listen, me, listener }
    }

    /// Opens one more authenticated connection as this peer, on `channel`'s `lane`.
    pub async fn dial(&self, target: &str, channel: &str, lane: u16) -> TcpStream {
        let mut sock = tokio::net::TcpStream::connect(target).await.unwrap();
        handshake::dial(&mut sock, &self.me, channel, lane, SECRET.as_bytes(), T).await.unwrap();
        let s = sock.into_std().unwrap();
        s.set_nonblocking(false).unwrap();
        s.set_write_timeout(Some(T)).unwrap();
        s
    }

    /// Writes `frames` control frames, built by `make(i)`, in batches; false when the node closed
    /// the connection.
    pub async fn send_controls(&mut self, frames: u64, make: impl Fn(u64) -> Control + Send + 'static) -> bool {
        let mut s = self.control.try_clone().unwrap();
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(1 << 20);
            for i in 0..frames {
                write_frame(&mut out, kind::CONTROL, |b| troupe_remote::codec::encode_into(&make(i), b)).unwrap();
                if out.len() >= 1 << 20 || i + 1 == frames {
                    if s.write_all(&out).is_err() {
                        return false;
                    }
                    out.clear();
                }
            }
            true
        })
        .await
        .unwrap()
    }

    /// Writes `bytes` (whole frames) on the control connection; false when the node closed it.
    pub async fn write(&self, bytes: Vec<u8>) -> bool {
        let mut s = self.control.try_clone().unwrap();
        tokio::task::spawn_blocking(move || s.write_all(&bytes).is_ok()).await.unwrap()
    }

    /// Leaves: closes the control connection and the listener's connections.
    pub fn leave(self) {
        let _ = self.control.shutdown(std::net::Shutdown::Both);
        self.listener.abort();
    }
}

/// CPU time (user + system) the process `pid` has used so far.
pub fn cpu_time(pid: i32) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &text[text.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf reads a constant; no memory is involved.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / hz)
}
