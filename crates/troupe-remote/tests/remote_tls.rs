//! Mutual TLS between real node processes on loopback, with certificates generated here at run
//! time (a cluster CA, node certificates it signs, and a stranger CA): TLS nodes do remote
//! send/ask; a node whose certificate comes from another CA, and a plaintext node, are refused
//! with an error (not a hang) while the TLS node keeps serving its good peer; bad TLS settings
//! are configuration errors naming the key and the path.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{cfg, NodeProc};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, ErrorKind, Node, NodeConfig, TlsConfig};

const T: Duration = Duration::from_secs(20);

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
    pem: PathBuf,
}

fn dir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("troupe-tls-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ca(dir: &Path, name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    let cert = p.self_signed(&key).unwrap();
    let pem = dir.join(format!("{name}.crt"));
    std::fs::write(&pem, cert.pem()).unwrap();
    Ca { cert, key, pem }
}

/// A node certificate signed by `ca`, valid for 127.0.0.1 and localhost.
fn node_tls(dir: &Path, ca: &Ca, name: &str) -> TlsConfig {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    let cert = p.signed_by(&key, &ca.cert, &ca.key).unwrap();
    let (c, k) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    let s = |p: &Path| p.display().to_string();
    TlsConfig { cert: s(&c), key: s(&k), ca: s(&ca.pem), server_name: None }
}

fn toml_of(t: &TlsConfig) -> String {
    format!("[tls]\ncert = {:?}\nkey = {:?}\nca = {:?}\n", t.cert, t.key, t.ca)
}

async fn echo_once(node: &Node, addr: &str) -> Result<Vec<u8>, String> {
    let echo = node.lookup::<Echo>(addr, "echo").await.map_err(|e| e.to_string())?;
    let r = echo.ask(|r| Echo(Blob(b"over tls".to_vec()), r), T).await.map_err(|e| e.to_string())?;
    Ok(r.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_nodes_talk_and_strangers_and_plaintext_nodes_are_refused() {
    let d = dir();
    let cluster = ca(&d, "cluster-ca");
    let stranger = ca(&d, "stranger-ca");
    let mut b = NodeProc::start("b", &format!("services = [\"echo\"]\n{}", toml_of(&node_tls(&d, &cluster, "b"))));
    let a = Node::start(NodeConfig { tls: Some(node_tls(&d, &cluster, "a")), ..cfg("a") }).await.unwrap();
    assert_eq!(echo_once(&a, &b.addr).await.unwrap(), b"over tls");

    // A certificate from another CA: refused on both sides, an error and no hang.
    let c = Node::start(NodeConfig { tls: Some(node_tls(&d, &stranger, "c")), handshake_timeout_ms: 3000, ..cfg("c") })
        .await
        .unwrap();
    let err = tokio::time::timeout(T, echo_once(&c, &b.addr)).await.expect("refused, not hung").unwrap_err();
    assert!(err.contains("TLS"), "{err}");
    assert!(c.stats().tls_failures >= 1, "{:?}", c.stats());

    // A plaintext node: refused too.
    let p = Node::start(NodeConfig { handshake_timeout_ms: 3000, ..cfg("p") }).await.unwrap();
    let err = tokio::time::timeout(T, echo_once(&p, &b.addr)).await.expect("refused, not hung").unwrap_err();
    assert!(!err.is_empty());

    // The TLS node counted both and still serves its good peer.
    let stats = b.stats();
    assert!(stats["tls_failures"].as_u64().unwrap() >= 2, "{stats}");
    assert_eq!(echo_once(&a, &b.addr).await.unwrap(), b"over tls");
    for n in [&a, &c, &p] {
        n.shutdown();
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_settings_are_configuration_errors_naming_key_and_path() {
    let d = dir();
    let cluster = ca(&d, "cluster-ca");
    let good = node_tls(&d, &cluster, "a");
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
