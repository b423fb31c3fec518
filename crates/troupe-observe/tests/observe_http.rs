//! Rules 1-6 and 8 of `troupe_observe` against a real endpoint on loopback.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use troupe_observe::Endpoint;

const T: Duration = Duration::from_secs(20);

/// Sends `raw` and reads the whole answer (the endpoint closes every connection).
async fn exchange(addr: std::net::SocketAddr, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(raw).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(T, s.read_to_end(&mut out)).await.expect("answered in time").unwrap();
    String::from_utf8(out).unwrap()
}

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    exchange(addr, format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes()).await
}

fn status(answer: &str) -> u16 {
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_1_to_4_metrics_health_and_routing() {
    let ready = Arc::new(AtomicBool::new(false));
    let refreshed = Arc::new(AtomicU64::new(0));
    let (r, f) = (ready.clone(), refreshed.clone());
    let ep = Endpoint::builder("127.0.0.1:0")
        .ready(move || if r.load(Ordering::SeqCst) { Ok(()) } else { Err("node not up yet\nsecond line".into()) })
        .refresh(move || {
            let n = f.fetch_add(1, Ordering::SeqCst) + 1;
            metrics::gauge!("troupe_test_refreshes").set(n as f64);
        })
        .start()
        .await
        .unwrap();
    let addr = ep.addr();
    metrics::counter!("troupe_test_things_total", "kind" => "a").increment(3);

    // Rule 1: the refresh hook runs before the render, whose text has the recorded series.
    let a = get(addr, "/metrics?x=1").await;
    assert_eq!(status(&a), 200, "{a}");
    assert!(a.contains("Content-Type: text/plain; version=0.0.4"), "{a}");
    assert!(body(&a).contains("troupe_test_things_total{kind=\"a\"} 3"), "{a}");
    assert!(body(&a).contains("troupe_test_refreshes 1"), "{a}");
    assert!(body(&get(addr, "/metrics").await).contains("troupe_test_refreshes 2"));

    // Rules 2-3.
    let a = get(addr, "/health/live").await;
    assert_eq!((status(&a), body(&a)), (200, "live\n"));
    let a = get(addr, "/health/ready").await;
    assert_eq!(status(&a), 503, "{a}");
    assert_eq!(body(&a), "not ready: node not up yet second line\n", "one line: {a}");
    ready.store(true, Ordering::SeqCst);
    let a = get(addr, "/health/ready").await;
    assert_eq!((status(&a), body(&a)), (200, "ready\n"));

    // Rule 4.
    let a = exchange(addr, b"HEAD /health/live HTTP/1.1\r\n\r\n").await;
    assert_eq!((status(&a), body(&a)), (200, ""), "{a}");
    assert!(a.contains("Content-Length: 5"), "{a}");
    let a = exchange(addr, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").await;
    assert_eq!(status(&a), 405, "{a}");
    assert!(a.contains("Allow: GET, HEAD"), "{a}");
    let a = get(addr, "/admin").await;
    assert_eq!(status(&a), 404, "{a}");
    assert!(body(&a).contains("/metrics"), "names what is served: {a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_5_malformed_oversized_and_slow_requests_get_their_own_answers() {
    let ep = Endpoint::builder("127.0.0.1:0").start().await.unwrap();
    let addr = ep.addr();
    let a = exchange(addr, b"HELLO\r\n\r\n").await;
    assert_eq!(status(&a), 400, "{a}");
    assert!(body(&a).contains("METHOD PATH HTTP/1.x"), "{a}");
    let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 10_000));
    let a = exchange(addr, &big).await;
    assert_eq!(status(&a), 431, "{a}");
    // A client that never finishes its head is answered 408 after 5 s, not held forever.
    let t0 = Instant::now();
    let a = exchange(addr, b"GET /metrics HTTP/1.1\r\n").await;
    assert_eq!(status(&a), 408, "{a}");
    assert!(t0.elapsed() >= Duration::from_secs(4), "{:?}", t0.elapsed());
    // The endpoint still serves.
    assert_eq!(status(&get(addr, "/health/live").await), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_6_connections_past_64_are_closed_unanswered_and_counted() {
    let ep = Endpoint::builder("127.0.0.1:0").start().await.unwrap();
    let addr = ep.addr();
    // 64 clients that send nothing hold every slot until their 5 s head deadline.
    let mut idle = Vec::new();
    for _ in 0..64 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(b"GET /health/live HTTP/1.1\r\n\r\n").await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(T, s.read_to_end(&mut out)).await.expect("closed in time");
    assert!(out.is_empty(), "the 65th was answered: {}", String::from_utf8_lossy(&out));
    drop(idle);
    // Once the slots are free again it serves, and the refusal was counted.
    let end = Instant::now() + T;
    loop {
        let a = get(addr, "/metrics").await;
        if status(&a) == 200 {
            assert!(body(&a).contains("troupe_observe_connections_refused_total"), "{a}");
            break;
        }
        assert!(Instant::now() < end, "never served again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_7_and_8_bad_listen_and_a_second_endpoint() {
    let e = Endpoint::builder("9464").start().await.err().unwrap();
    assert!(e.to_string().contains("[observe] listen = \"9464\""), "{e}");
    let first = Endpoint::builder("127.0.0.1:0").start().await.unwrap();
    let e = Endpoint::builder(&first.addr().to_string()).start().await.err().unwrap();
    assert!(e.to_string().contains("cannot be bound"), "{e}");
    // Rule 8: a second endpoint in the same process shares the one recorder.
    let second = Endpoint::builder("127.0.0.1:0").start().await.unwrap();
    metrics::counter!("troupe_test_shared_total").increment(1);
    for ep in [&first, &second] {
        assert!(body(&get(ep.addr(), "/metrics").await).contains("troupe_test_shared_total 1"));
    }
}
