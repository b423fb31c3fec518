//! Bad input: a wrong secret is refused; garbage, truncated and oversized frames close only
//! the offending connection (counted, logged) while the node keeps serving its other peers.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{cfg, NodeProc, SECRET};
use troupe_remote::handshake::{self, Identity};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, ErrorKind, Node, NodeConfig};

const T: Duration = Duration::from_secs(10);

/// Reads until the peer closes the connection (bounded); true when it did.
fn closed_by_peer(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(T)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_is_refused_and_counted() {
    let mut child = NodeProc::start("b", "services = [\"echo\"]");
    let a = Node::start(NodeConfig::new("intruder", "not-the-secret")).await.unwrap();
    let e = a.connect(&child.addr).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Auth(_)), "{e}");
    // The dialler can finish before the node has counted its side: wait (bounded) for it.
    let end = std::time::Instant::now() + T;
    let s = loop {
        let s = child.stats();
        if s["auth_failures"].as_u64().unwrap() >= 1 || std::time::Instant::now() > end {
            break s;
        }
    };
    assert!(s["auth_failures"].as_u64().unwrap() >= 1, "{s}");
    a.shutdown();
    // The right secret still gets in.
    let ok = Node::start(cfg("friend")).await.unwrap();
    assert_eq!(ok.connect(&child.addr).await.unwrap().name, "b");
    ok.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_oversized_frames_close_only_their_connection() {
    let mut child = NodeProc::start("b", "services = [\"echo\"]\nmax_frame_bytes = 65536");
    let a = Node::start(cfg("a")).await.unwrap();
    let echo = a.lookup::<Echo>(&child.addr, "echo").await.unwrap();
    let ask = |n: u8| {
        let echo = echo.clone();
        async move { echo.ask(|r| Echo(Blob(vec![n]), r), T).await.unwrap().0 }
    };
    assert_eq!(ask(1).await, vec![1]);

    // 1. Garbage before any handshake.
    let mut g = TcpStream::connect(&child.addr).unwrap();
    g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(closed_by_peer(&mut g));
    // 2. A frame declaring 1 GiB before authentication.
    let mut big = TcpStream::connect(&child.addr).unwrap();
    big.write_all(&(1u32 << 30).to_be_bytes()).unwrap();
    assert!(closed_by_peer(&mut big));
    // 3. A truncated hello, then silence: closed at the handshake deadline at the latest.
    let mut t = TcpStream::connect(&child.addr).unwrap();
    t.write_all(&[0, 0, 0, 40, 1, 2, 3]).unwrap();
    t.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(closed_by_peer(&mut t));
    assert_eq!(ask(2).await, vec![2]);

    // 4. Authenticated, then an oversized frame and then garbage frames.
    for bad in [(1u32 << 20).to_be_bytes().to_vec(), vec![0, 0, 0, 3, 99, 1, 2], vec![0, 0, 0, 0]] {
        let sock = tokio::net::TcpStream::connect(&child.addr).await.unwrap();
        let mut sock = sock;
        let me = Identity { name: "raw".into(), listen: "127.0.0.1:9".into(), incarnation: 5 };
        handshake::dial(&mut sock, &me, "default", 0, SECRET.as_bytes(), T).await.unwrap();
        let mut std_sock = sock.into_std().unwrap();
        std_sock.set_nonblocking(false).unwrap();
        std_sock.write_all(&bad).unwrap();
        assert!(closed_by_peer(&mut std_sock), "connection kept after {bad:?}");
        // The node and its other connection keep working.
        assert_eq!(ask(3).await, vec![3]);
    }
    let s = child.stats();
    assert!(s["handshake_failures"].as_u64().unwrap() >= 3, "{s}");
    assert!(s["oversized_frames"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["malformed_frames"].as_u64().unwrap() >= 2, "{s}");
    assert!(a.is_connected(&child.addr));
    a.shutdown();
}
