//! The runtime's own metrics in `resources.jsonl` (rule 5 of `troupe_lab::meter::sampler`): the
//! sampler on a real child process scrapes a tiny in-test HTTP server that serves fixed
//! Prometheus text, one that answers garbage, and an address where nothing listens.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe_lab::meter::sampler::{read_samples, Sample, Sampler, SamplerOptions};

const TEXT: &str = "# HELP troupe_actors_live Live actors.\n# TYPE troupe_actors_live gauge\n\
troupe_actors_live 12\n\
troupe_mailbox_depth{actor=\"pinger\",node=\"a \\\"quoted\\\" node\"} 3\n\
troupe_restart_backoff_seconds NaN\n\
process_cpu_seconds_total 0.5\n";

/// Serves `answer` to every connection until dropped (bounded: the accept loop polls the flag
/// every 10 ms and ends with it).
struct Server {
    addr: SocketAddr,
    done: Arc<AtomicBool>,
}

impl Server {
    fn start(answer: String) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((mut s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                        let mut req = [0u8; 2048];
                        let _ = s.read(&mut req);
                        let _ = s.write_all(answer.as_bytes());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Server { addr, done }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Runs the sampler on a `sleep` child, scraping `scrape`, until `enough` holds of the samples
/// (bounded: 20 s) or the child ends; the samples after the last one.
fn sample_with(scrape: Option<SocketAddr>, enough: impl Fn(&[Sample]) -> bool) -> Vec<Sample> {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("resources.jsonl");
    let mut child = std::process::Command::new("sleep").arg("20").spawn().unwrap();
    let s = Sampler::start(SamplerOptions {
        pid: child.id(),
        interval: Duration::from_millis(20),
        proc_root: "/proc".into(),
        out: out.clone(),
        counter: None,
        spawned_us: Some(troupe_lab::events::writer::now_us()),
        scrape,
        work_events: None,
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !enough(&read_samples(&out).unwrap_or_default()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    s.finish().unwrap();
    read_samples(&out).unwrap()
}

#[test]
fn rule_5_the_runtime_series_go_into_each_sample() {
    let server = Server::start(ok(TEXT));
    let got = sample_with(Some(server.addr), |s| s.iter().filter(|x| x.runtime.is_some()).count() >= 3);
    let scraped: Vec<&Sample> = got.iter().filter(|x| x.runtime.is_some()).collect();
    assert!(scraped.len() >= 3, "{got:#?}");
    let r = scraped[0].runtime.as_ref().unwrap();
    assert_eq!(r["troupe_actors_live"], serde_json::json!(12.0));
    assert_eq!(r["troupe_mailbox_depth{actor=\"pinger\",node=\"a \\\"quoted\\\" node\"}"], serde_json::json!(3.0));
    assert_eq!(r["troupe_restart_backoff_seconds"], serde_json::json!("NaN"));
    assert_eq!(r.len(), 3, "only troupe_* series: {r:?}");
    assert!(got.iter().all(|x| x.runtime_scrape_errors == 0), "{got:#?}");
    // The zero line before the child started and the last line after it was reaped read nothing.
    assert!(got.first().unwrap().runtime.is_none() && got.last().unwrap().runtime.is_none());
    // What a line looks like on disk.
    let line = serde_json::to_string(scraped[0]).unwrap();
    assert!(line.contains("\"runtime\":{\"troupe_actors_live\":12.0"), "{line}");
}

#[test]
fn rule_5_a_failing_scrape_is_counted_and_never_fails_the_run() {
    let server = Server::start("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ntroupe_x{".into());
    let got = sample_with(Some(server.addr), |s| s.iter().any(|x| x.runtime_scrape_errors >= 2));
    let last = got.last().unwrap();
    assert!(last.last && last.runtime_scrape_errors >= 2, "{got:#?}");
    let failed = got.iter().find(|x| x.runtime_scrape_error.is_some()).unwrap();
    let why = failed.runtime_scrape_error.as_deref().unwrap();
    assert!(why.contains("/metrics") && why.contains("line 1"), "{why}");
    assert!(got.iter().all(|x| x.runtime.is_none()));
    // The sampler went on: CPU and RSS readings are still there.
    assert!(got.iter().any(|x| x.rss_bytes > 0), "{got:#?}");
}

#[test]
fn rule_5_a_runtime_that_serves_nothing_gets_no_runtime_key() {
    let free = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let got = sample_with(Some(free), |s| s.len() >= 5);
    assert!(got.len() >= 5);
    assert!(got
        .iter()
        .all(|x| x.runtime.is_none() && x.runtime_scrape_errors == 0 && x.runtime_scrape_error.is_none()));
    let text = got.iter().map(|s| serde_json::to_string(s).unwrap()).collect::<Vec<_>>().join("\n");
    assert!(!text.contains("runtime"), "{text}");
}
