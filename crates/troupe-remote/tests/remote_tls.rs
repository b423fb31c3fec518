//! Mutual TLS between real node processes on loopback, with certificates generated at run time
//! by `troupe_remote::dev_certs` (a cluster CA and node certificates it signs, and a stranger CA): TLS nodes do remote
//! send/ask; a node whose certificate comes from another CA, and a plaintext node, are refused
//! with an error (not a hang) while the TLS node keeps serving its good peer; a node stating
//! a name that is not its certificate's is refused; bad TLS settings are configuration errors
//! naming the key and the path.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{cfg, NodeProc};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, ErrorKind, Node, NodeConfig, TlsConfig};

const T: Duration = Duration::from_secs(20);

fn dir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("troupe-tls-{}-{n}", std::process::id()))
}

/// A fresh CA in its own folder, and a certificate it signs for each name (127.0.0.1, localhost).
fn cluster(names: &[&str]) -> (PathBuf, Vec<TlsConfig>) {
    let d = dir();
    let certs = troupe_remote::dev_certs(&d, names, &["127.0.0.1", "localhost"]).unwrap();
    (d, certs)
}

async fn echo_once(node: &Node, addr: &str) -> Result<Vec<u8>, String> {
    let echo = node.lookup::<Echo>(addr, "echo").await.map_err(|e| e.to_string())?;
    let r = echo.ask(|r| Echo(Blob(b"over tls".to_vec()), r), T).await.map_err(|e| e.to_string())?;
    Ok(r.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_nodes_talk_and_strangers_and_plaintext_nodes_are_refused() {
    let (d, mut ours) = cluster(&["a", "b"]);
    let (d2, mut theirs) = cluster(&["c"]);
    let b_tls = ours.pop().unwrap();
    assert!(b_tls.key.ends_with("b.key"));
    let mut b = NodeProc::start("b", &format!("services = [\"echo\"]\n{}", troupe_remote::toml_section(&b_tls)));
    let a = Node::start(NodeConfig { tls: ours.pop(), ..cfg("a") }).await.unwrap();
    assert_eq!(echo_once(&a, &b.addr).await.unwrap(), b"over tls");

    // A certificate from another CA: refused on both sides, an error and no hang.
    let c = Node::start(NodeConfig { tls: theirs.pop(), handshake_timeout_ms: 3000, ..cfg("c") }).await.unwrap();
    let err = tokio::time::timeout(T, echo_once(&c, &b.addr)).await.expect("refused, not hung").unwrap_err();
    assert!(err.contains("TLS"), "{err}");
    assert!(c.stats().tls_failures >= 1, "{:?}", c.stats());

    // A plaintext node: refused too, and told why (regression, issue 18: it was told to
    // "raise max_frame_bytes").
    let p = Node::start(NodeConfig { handshake_timeout_ms: 3000, ..cfg("p") }).await.unwrap();
    let err = tokio::time::timeout(T, echo_once(&p, &b.addr)).await.expect("refused, not hung").unwrap_err();
    assert!(err.contains("speaks TLS") && !err.contains("max_frame_bytes"), "{err}");

    // The TLS node counted both (the dialler may know before the node has counted: wait,
    // bounded) and still serves its good peer.
    let end = std::time::Instant::now() + T;
    let stats = loop {
        let s = b.stats();
        if s["tls_failures"].as_u64().unwrap() >= 2 || std::time::Instant::now() > end {
            break s;
        }
    };
    assert!(stats["tls_failures"].as_u64().unwrap() >= 2, "{stats}");
    assert_eq!(echo_once(&a, &b.addr).await.unwrap(), b"over tls");
    for n in [&a, &c, &p] {
        n.shutdown();
    }
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_settings_are_configuration_errors_naming_key_and_path() {
    let (d, mut certs) = cluster(&["a"]);
    let good = certs.pop().unwrap();
    let garbage = d.join("garbage.pem");
    std::fs::write(&garbage, "not a pem file\n").unwrap();
    let garbage = garbage.display().to_string();
    let cases = [
        (TlsConfig { key: "/nonexistent/a.key".into(), ..good.clone() }, "tls.key", "/nonexistent/a.key"),
        (TlsConfig { cert: garbage.clone(), ..good.clone() }, "tls.cert", garbage.as_str()),
        (TlsConfig { ca: garbage.clone(), ..good.clone() }, "tls.ca", garbage.as_str()),
        (TlsConfig { key: good.cert.clone(), ..good.clone() }, "tls.key", good.cert.as_str()),
    ];
    for (tls, key, path) in cases {
        let e = Node::start(NodeConfig { tls: Some(tls), ..cfg("a") }).await.err().expect("refused");
        assert!(matches!(e.kind, ErrorKind::Config(_)), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(key) && msg.contains(path), "{msg}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Regression (issue 36) and `handshake.rs` rule 8: node "c" was accepted presenting node b's
/// certificate. Now a stated name that is not the certificate's CN is refused by the acceptor
/// (a dialler with another node's certificate) and by the dialler (an acceptor with one), and
/// both say which names disagree; the node keeps serving its good peers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_8_a_node_presenting_another_nodes_certificate_is_refused() {
    let (d, mut certs) = cluster(&["a", "b"]);
    let (b_tls, a_tls) = (certs.pop().unwrap(), certs.pop().unwrap());
    let mut b = NodeProc::start("b", &format!("services = [\"echo\"]\n{}", troupe_remote::toml_section(&b_tls)));
    // A dialler named c with a's certificate: refused by b.
    let c = Node::start(NodeConfig { tls: Some(a_tls.clone()), handshake_timeout_ms: 3000, ..cfg("c") }).await.unwrap();
    let err = tokio::time::timeout(T, echo_once(&c, &b.addr)).await.expect("refused, not hung").unwrap_err();
    assert!(err.contains("does not match its TLS certificate"), "{err}");
    let end = std::time::Instant::now() + T;
    let s = loop {
        let s = b.stats();
        if s["tls_failures"].as_u64().unwrap() >= 1 || std::time::Instant::now() > end {
            break s;
        }
    };
    assert!(s["tls_failures"].as_u64().unwrap() >= 1, "{s}");
    // An acceptor named impostor with b's certificate: refused by the dialler a.
    let imp = NodeProc::start("impostor", &format!("services = [\"echo\"]\n{}", troupe_remote::toml_section(&b_tls)));
    let a = Node::start(NodeConfig { tls: Some(a_tls), handshake_timeout_ms: 3000, ..cfg("a") }).await.unwrap();
    let err = tokio::time::timeout(T, echo_once(&a, &imp.addr)).await.expect("refused, not hung").unwrap_err();
    assert!(err.contains("impostor") && err.contains("TLS certificate of"), "{err}");
    // The rightful holders still talk.
    assert_eq!(echo_once(&a, &b.addr).await.unwrap(), b"over tls");
    for n in [&a, &c] {
        n.shutdown();
    }
    let _ = std::fs::remove_dir_all(&d);
}
