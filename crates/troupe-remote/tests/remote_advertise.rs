//! `advertise`: a node listening on one address but known by a DNS name (`localhost:PORT`
//! here, a headless Service's pod name in Kubernetes) is dialled, looked up and asked by that
//! name, and refs to its actors carry it; the environment overrides of `NodeConfig::from_file`
//! (`TROUPE_NODE_NAME`, `TROUPE_LISTEN`, `TROUPE_ADVERTISE`, `TROUPE_SECRET[_FILE]`) apply to a
//! real `troupe-node` process; bad `advertise` values are refused naming the key. Also what
//! Kubernetes brings with it: a node that dials its own address (a seed DNS name includes
//! every pod) does not become its own peer, and TCP health probes are not warned about.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use common::{cfg, free_port, SECRET};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, ErrorKind, Node, NodeConfig};

const T: Duration = Duration::from_secs(10);

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(std::path::PathBuf);
impl TempDir {
    fn new() -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("troupe-advertise-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Echoer;
impl troupe::Actor for Echoer {
    type Msg = Echo;
    async fn handle(&mut self, Echo(b, r): Echo, _: &mut troupe::Ctx<Self>) {
        r.send(b);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_advertising_a_dns_name_is_reached_by_that_name() {
    let port = free_port();
    let name = format!("localhost:{port}");
    let b = Node::start(NodeConfig { listen: format!("127.0.0.1:{port}"), advertise: Some(name.clone()), ..cfg("b") })
        .await
        .unwrap();
    assert_eq!(b.addr(), name, "Node::addr is the advertised address");
    b.export("echo", &troupe::spawn(Echoer)).unwrap();
    b.register_global("b-echo", &troupe::spawn(Echoer)).unwrap();

    let a = Node::start(cfg("a")).await.unwrap();
    let info = a.connect(&name).await.unwrap();
    assert_eq!((info.name.as_str(), info.addr.as_str()), ("b", name.as_str()));
    // A lookup by the DNS name, and an ask whose reply ref travels to b and back.
    let echo = a.lookup::<Echo>(&name, "echo").await.unwrap();
    assert_eq!(echo.ask(|r| Echo(Blob(b"by name".to_vec()), r), T).await.unwrap().0, b"by name");
    // A ref made by b (a global name) names b by its advertised address: asking it reuses the
    // same peer instead of opening a second one under another spelling.
    let global = {
        let end = std::time::Instant::now() + T;
        loop {
            if let Some(r) = a.whereis_global::<Echo>("b-echo").unwrap() {
                break r;
            }
            assert!(std::time::Instant::now() < end, "b's global name never reached a");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    assert_eq!(global.ask(|r| Echo(Blob(vec![7]), r), T).await.unwrap().0, vec![7]);
    let peers = a.peers();
    assert_eq!(peers.len(), 1, "one peer for b: {peers:?}");
    assert_eq!(peers[0].addr, name);
    // The other direction: b sees a under a's own (bound) address and reaches its actors.
    a.export("echo", &troupe::spawn(Echoer)).unwrap();
    let back = b.lookup::<Echo>(&a.addr(), "echo").await.unwrap();
    assert_eq!(back.ask(|r| Echo(Blob(vec![1, 2]), r), T).await.unwrap().0, vec![1, 2]);
    assert!(b.peers().iter().any(|p| p.addr == a.addr() && p.name == "a"));
    a.shutdown();
    b.shutdown();
}

/// Starts this build's `troupe-node` with `config` and the environment `env`; returns the child
/// and a receiver of its stdout lines.
fn spawn_node(config: &str, env: &[(&str, String)]) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let dir = TempDir::new();
    let path = dir.path().join("node.toml");
    std::fs::write(&path, config).unwrap();
    let bin = std::env::var("TROUPE_NODE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_troupe-node").into());
    let mut cmd = Command::new(bin);
    cmd.arg("--config").arg(&path).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for k in troupe_remote::ENV_VARS {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn troupe-node");
    // The config file is read at start; the folder may go once the first line or exit is seen,
    // so it is kept until the child's stdout closes.
    let out = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _dir = dir;
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// Waits (bounded) for the child to exit; returns its exit code and stderr.
fn exit_of(mut child: std::process::Child) -> (Option<i32>, String) {
    let end = std::time::Instant::now() + T;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > end {
            let _ = child.kill();
            panic!("troupe-node did not exit within {T:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_overrides_name_listen_advertise_and_secret() {
    let port = free_port();
    let secret_dir = TempDir::new();
    let secret_file = secret_dir.path().join("secret");
    std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    // The file's name, address and secret are all wrong for this test: only the environment
    // makes the node reachable at localhost:PORT, named from-env, with the test secret.
    let config =
        "name = \"from-file\"\nlisten = \"127.0.0.1:0\"\nsecret = \"not the test secret\"\nservices = [\"echo\"]\n";
    let (mut child, lines) = spawn_node(
        config,
        &[
            ("TROUPE_NODE_NAME", "from-env".into()),
            ("TROUPE_LISTEN", format!("127.0.0.1:{port}")),
            ("TROUPE_ADVERTISE", format!("localhost:{port}")),
            ("TROUPE_SECRET_FILE", secret_file.display().to_string()),
        ],
    );
    let first = lines.recv_timeout(T).expect("troupe-node printed nothing");
    assert_eq!(first, format!("listening on localhost:{port}"));
    let a = Node::start(cfg("a")).await.unwrap();
    let info = a.connect(&format!("localhost:{port}")).await.unwrap();
    assert_eq!(info.name, "from-env");
    let echo = a.lookup::<Echo>(&format!("localhost:{port}"), "echo").await.unwrap();
    assert_eq!(echo.ask(|r| Echo(Blob(b"env".to_vec()), r), T).await.unwrap().0, b"env");
    a.shutdown();
    let _ = child.kill();
    let _ = child.wait();

    // TROUPE_SECRET alone (the file has none at all); TROUPE_LISTEN unset keeps the file's.
    let (mut child, lines) = spawn_node(
        "name = \"n\"\nlisten = \"127.0.0.1:0\"\n",
        &[("TROUPE_SECRET", SECRET.into()), ("TROUPE_NODE_NAME", "from-env-2".into())],
    );
    let first = lines.recv_timeout(T).expect("troupe-node printed nothing");
    let addr = first.strip_prefix("listening on 127.0.0.1:").map(|p| format!("127.0.0.1:{p}"));
    let addr = addr.unwrap_or_else(|| panic!("unexpected first line {first:?}"));
    let a = Node::start(cfg("a2")).await.unwrap();
    assert_eq!(a.connect(&addr).await.unwrap().name, "from-env-2");
    a.shutdown();
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn bad_environment_values_stop_the_node_with_exit_code_2() {
    let config = "name = \"n\"\nlisten = \"127.0.0.1:0\"\nsecret = \"s\"\n";
    type Case<'a> = (&'a [(&'a str, String)], &'a [&'a str]);
    let cases: [Case<'_>; 3] = [
        (&[("TROUPE_ADVERTISE", "no-port-here".into())], &["advertise", "TROUPE_ADVERTISE", "host:port"]),
        (&[("TROUPE_SECRET", "x".into()), ("TROUPE_SECRET_FILE", "/nonexistent".into())], &["TROUPE_SECRET_FILE"]),
        (&[("TROUPE_NODE_NAME", String::new())], &["TROUPE_NODE_NAME", "empty"]),
    ];
    for (env, words) in cases {
        let (child, _lines) = spawn_node(config, env);
        let (code, err) = exit_of(child);
        assert_eq!(code, Some(2), "{env:?}: stderr {err}");
        for w in words {
            assert!(err.contains(w), "{env:?}: stderr {err:?} lacks {w:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_advertise_value_is_refused_naming_the_key() {
    for bad in ["troupe-0", "troupe-0:", "troupe-0:0", "troupe 0:7000", ":7000", "::1:7000", "host:99999"] {
        let e = Node::start(NodeConfig { advertise: Some(bad.into()), ..cfg("x") }).await.err();
        let e = e.unwrap_or_else(|| panic!("advertise {bad:?} was accepted"));
        assert!(matches!(e.kind, ErrorKind::Config(_)), "{bad:?}: {e}");
        assert!(e.to_string().contains("advertise"), "{bad:?}: {e}");
    }
    // The same from a file, with the file named for the other errors it could have.
    let dir = TempDir::new();
    let path = dir.path().join("node.toml");
    std::fs::write(&path, "name = \"n\"\nsecret = \"s\"\nadvertise = \"troupe-0.troupe\"\n").unwrap();
    let e = NodeConfig::from_file(&path).unwrap_err();
    assert!(e.to_string().contains("advertise = \"troupe-0.troupe\""), "{e}");
    // Good forms pass, and the defaults advertise nothing.
    for good in ["localhost:7000", "troupe-0.troupe.default.svc.cluster.local:7000", "10.1.2.3:7000", "[::1]:7000"] {
        assert!(NodeConfig { advertise: Some(good.into()), ..cfg("x") }.validate().is_ok(), "{good}");
    }
    assert_eq!(cfg("x").advertise, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_dials_itself_by_another_address_is_refused() {
    // In Kubernetes a node's seeds (the Service's DNS name) resolve to every pod's IP address,
    // its own among them: dialling it must not make the node a peer of itself.
    let port = free_port();
    let b = Node::start(NodeConfig {
        listen: format!("127.0.0.1:{port}"),
        advertise: Some(format!("localhost:{port}")),
        ..cfg("b")
    })
    .await
    .unwrap();
    let mut events = b.subscribe();
    let e = b.connect(&format!("127.0.0.1:{port}")).await.unwrap_err();
    assert!(e.to_string().contains("this node itself"), "{e}");
    assert!(b.peers().iter().all(|p| p.addr != b.addr() && p.name != "b"), "{:?}", b.peers());
    // Asked again, it is refused again (the address is not remembered as a peer that is up).
    assert!(b.connect(&format!("127.0.0.1:{port}")).await.unwrap_err().to_string().contains("this node itself"));
    // Still reachable by others, and no node-up of itself was announced.
    let a = Node::start(cfg("a")).await.unwrap();
    assert_eq!(a.connect(&b.addr()).await.unwrap().name, "b");
    let up = common::wait_event(&mut events, T, |ev| matches!(ev, troupe_remote::NodeEvent::NodeUp { .. })).await;
    assert!(matches!(&up, troupe_remote::NodeEvent::NodeUp { name, .. } if name == "a"), "{up:?}");
    a.shutdown();
    b.shutdown();
}

#[test]
fn a_tcp_health_probe_is_counted_but_not_warned_about() {
    // Kubernetes' tcpSocket probes connect and close without a byte, every few seconds.
    let dir = TempDir::new();
    let path = dir.path().join("node.toml");
    std::fs::write(&path, format!("name = \"n\"\nlisten = \"127.0.0.1:0\"\nsecret = \"{SECRET}\"\n")).unwrap();
    let bin = std::env::var("TROUPE_NODE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_troupe-node").into());
    let mut child = Command::new(bin)
        .arg("--config")
        .arg(&path)
        .env_remove("TROUPE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = out.next().unwrap().unwrap();
    let addr = first.strip_prefix("listening on ").unwrap().to_owned();
    for _ in 0..3 {
        drop(std::net::TcpStream::connect(&addr).unwrap());
    }
    // A connection that sends garbage is still warned about.
    let mut bad = std::net::TcpStream::connect(&addr).unwrap();
    std::io::Write::write_all(&mut bad, &[0, 0, 0, 3, 9, 9, 9]).unwrap();
    // All four are counted as failed handshakes (bounded wait on the node's own stats).
    let end = std::time::Instant::now() + T;
    loop {
        std::io::Write::write_all(&mut stdin, b"stats\n").unwrap();
        let line = out.by_ref().map(Result::unwrap).find(|l| l.starts_with("stats ")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line["stats ".len()..]).unwrap();
        if v["handshake_failures"].as_u64() == Some(4) {
            break;
        }
        assert!(std::time::Instant::now() < end, "handshake_failures never reached 4: {v}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // `quit` stops the node cleanly, writing out its queued log lines.
    std::io::Write::write_all(&mut stdin, b"quit\n").unwrap();
    drop(stdin);
    let (code, err) = exit_of(child);
    assert_eq!(code, Some(0), "{err}");
    let warnings = err.lines().filter(|l| l.contains("closing connection from")).count();
    assert_eq!(warnings, 1, "only the garbage connection is warned about:\n{err}");
}
