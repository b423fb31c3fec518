//! Log and dialler hygiene against a real `troupe-node` (issue 36, `handshake.rs` rules 6-7,
//! `logging.rs` rule 3): a listen address that is not `host:port` is refused before it is
//! logged as a field or dialled; Unicode line separators and direction controls in what a peer
//! states are escaped in the node's log; an HTTP request sent to the node's port is named as
//! one, not as an oversized frame.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{NodeProc, StderrLog, SECRET};
use troupe_remote::handshake::{self, Identity};

const T: Duration = Duration::from_secs(20);

/// Waits until the node has logged every one of `needles` (a refusal is logged after the peer
/// hears it), stops it, and returns everything it wrote to stderr.
fn quit_after(mut b: NodeProc, log: StderrLog, needles: &[&str]) -> String {
    let seen = log.wait_for(needles, T);
    b.cmd("quit");
    assert!(b.wait_exit(T).is_some(), "the node did not stop");
    let text = log.finish();
    assert!(seen, "not logged within {T:?}: {needles:?}\n{text}");
    text
}

async fn dial_as(addr: &str, name: &str, listen: &str) -> Result<(), troupe_remote::Error> {
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let me = Identity { name: name.into(), listen: listen.into(), incarnation: 5 };
    handshake::dial(&mut sock, &me, "control", 0, SECRET.as_bytes(), T).await.map(|_| ())
}

/// Regression (issue 36): a stated listen address was not checked to be `host:port`, so it
/// could forge `key=value` fields in logs and be dialled as given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_6_a_listen_address_that_is_not_host_port_is_refused_before_it_is_logged_or_dialled() {
    let (mut b, stderr) = NodeProc::start_piped_stderr("b", "", None);
    let log = StderrLog::new(stderr);
    let e = dial_as(&b.addr, "x", "127.0.0.1:9 peer=forged.example:1").await.unwrap_err();
    assert!(e.to_string().contains("refused"), "{e}");
    let s = b.stats();
    assert_eq!(s["peers_known"].as_u64(), Some(0), "no peer was made: {s}");
    let text = quit_after(b, log, &["is not host:port"]);
    assert!(!text.lines().any(|l| l.trim_end().ends_with("peer=forged.example:1")), "a forged field:\n{text}");
}

/// Regression (issue 36): U+2028 and U+202E passed unescaped into log lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_6_unicode_line_and_direction_controls_in_a_peer_name_are_refused_and_escaped() {
    let (b, stderr) = NodeProc::start_piped_stderr("b", "", None);
    let log = StderrLog::new(stderr);
    for name in ["evil\u{2028}WARN forged", "evil\u{202e}gnp.exe"] {
        assert!(dial_as(&b.addr, name, "127.0.0.1:9").await.is_err(), "{name:?} was accepted");
    }
    let text = quit_after(b, log, &["evil\\u{2028}WARN forged", "evil\\u{202e}gnp.exe"]);
    assert!(!text.contains('\u{2028}') && !text.contains('\u{202e}'), "raw controls got out:\n{text}");
}

/// Regression (issue 36): an HTTP request before the handshake was reported as "frame of
/// 1195725856 bytes ... raise max_frame_bytes" (advice that cannot help).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_7_an_http_request_before_the_handshake_is_named_as_http() {
    let (b, stderr) = NodeProc::start_piped_stderr("b", "", None);
    let log = StderrLog::new(stderr);
    let mut s = TcpStream::connect(&b.addr).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n").unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf); // the node closes the connection
    let text = quit_after(b, log, &["HTTP request", "GET /healthz"]);
    assert!(!text.contains("max_frame_bytes"), "useless advice:\n{text}");
}

/// Rule 7 of `handshake.rs`: a first frame over the handshake's fixed limit is not answered
/// with advice to raise `max_frame_bytes`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_7_an_oversized_first_frame_is_not_answered_with_max_frame_bytes_advice() {
    let (b, stderr) = NodeProc::start_piped_stderr("b", "", None);
    let log = StderrLog::new(stderr);
    let mut s = TcpStream::connect(&b.addr).unwrap();
    s.write_all(&(1u32 << 30).to_be_bytes()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = quit_after(b, log, &["does not speak the Troupe handshake"]);
    assert!(!text.contains("max_frame_bytes"), "useless advice:\n{text}");
}
