//! The endpoint's HTTP/1.1 server: just enough HTTP for a scrape and a probe (rules 1-6 of the
//! crate), one request per connection, every wait bounded.

use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::{ReadyCheck, Refresh, HOOK_DEADLINE};

/// Rule 5: the largest request head read.
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// Rule 5: how long a client has to send its request head.
pub(crate) const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// Rule 6: connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long writing an answer may take.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);

pub(crate) struct State {
    pub(crate) handle: PrometheusHandle,
    pub(crate) ready: ReadyCheck,
    pub(crate) refresh: Option<Refresh>,
}

pub(crate) async fn serve(listener: TcpListener, state: Arc<State>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let sock = match listener.accept().await {
            Ok((sock, _)) => sock,
            Err(e) => {
                // Out of descriptors and the like: wait a little rather than spin.
                tracing::warn!(target: "troupe_observe", error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                let state = state.clone();
                tokio::spawn(async move {
                    answer(sock, &state).await;
                    drop(permit);
                });
            }
            Err(_) => {
                metrics::counter!("troupe_observe_connections_refused_total").increment(1);
                drop(sock);
            }
        }
    }
}

/// An answer: status, extra header lines, body.
struct Answer {
    status: u16,
    headers: &'static str,
    body: String,
}

impl Answer {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Answer { status, headers: "Content-Type: text/plain; charset=utf-8\r\n", body: body.into() }
    }
}

enum Head {
    Request { method: String, path: String },
    Malformed(&'static str),
    TooLarge,
    Closed,
}

async fn answer(mut sock: TcpStream, state: &State) {
    let head = match tokio::time::timeout(HEAD_DEADLINE, read_head(&mut sock)).await {
        Ok(h) => h,
        Err(_) => {
            let a = Answer::text(408, "the request head was not complete within 5 s\n");
            return write(sock, a, false).await;
        }
    };
    let (a, with_body) = match head {
        Head::Closed => return,
        Head::TooLarge => (Answer::text(431, "the request head is over 8 KiB\n"), true),
        Head::Malformed(why) => (Answer::text(400, format!("bad request: {why}\n")), true),
        Head::Request { method, path } => match method.as_str() {
            "GET" => (route(&path, state).await, true),
            "HEAD" => (route(&path, state).await, false),
            _ => (
                Answer {
                    status: 405,
                    headers: "Allow: GET, HEAD\r\nContent-Type: text/plain; charset=utf-8\r\n",
                    body: format!("method {method} is not served here: use GET\n"),
                },
                true,
            ),
        },
    };
    write(sock, a, with_body).await;
}

async fn route(path: &str, state: &State) -> Answer {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    match path {
        "/metrics" => {
            if let Some(refresh) = &state.refresh {
                let _ = tokio::time::timeout(HOOK_DEADLINE, refresh()).await;
            }
            state.handle.run_upkeep();
            Answer {
                status: 200,
                headers: "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n",
                body: state.handle.render(),
            }
        }
        "/health/live" => Answer::text(200, "live\n"),
        "/health/ready" => match tokio::time::timeout(HOOK_DEADLINE, (state.ready)()).await {
            Ok(Ok(())) => Answer::text(200, "ready\n"),
            Ok(Err(why)) => Answer::text(503, format!("not ready: {}\n", one_line(&why))),
            Err(_) => Answer::text(503, "not ready: the readiness check did not answer within 2 s\n"),
        },
        _ => Answer::text(404, "not found: this endpoint serves /metrics, /health/live and /health/ready\n"),
    }
}

fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

async fn read_head(sock: &mut TcpStream) -> Head {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                return if buf.is_empty() { Head::Closed } else { Head::Malformed("the head ended early") }
            }
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find_end(&buf) {
            return parse(&buf[..end]);
        }
        if buf.len() > MAX_HEAD {
            return Head::TooLarge;
        }
    }
}

/// The end of the head: the first empty line (CRLF or bare LF).
fn find_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = buf.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn parse(head: &[u8]) -> Head {
    let Ok(text) = std::str::from_utf8(head) else {
        return Head::Malformed("the head is not UTF-8");
    };
    let line = text.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(path), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Head::Malformed("the request line is not METHOD PATH HTTP/1.x");
    };
    if !version.starts_with("HTTP/1.") || !path.starts_with('/') || method.is_empty() {
        return Head::Malformed("the request line is not METHOD PATH HTTP/1.x");
    }
    Head::Request { method: method.to_owned(), path: path.to_owned() }
}

async fn write(mut sock: TcpStream, a: Answer, with_body: bool) {
    let reason = match a.status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    };
    let mut out = format!(
        "HTTP/1.1 {} {reason}\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n",
        a.status,
        a.headers,
        a.body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(a.body.as_bytes());
    }
    let _ = tokio::time::timeout(WRITE_DEADLINE, async {
        let _ = sock.write_all(&out).await;
        let _ = sock.shutdown().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_5_request_lines_are_parsed_or_refused() {
        assert!(
            matches!(parse(b"GET /metrics HTTP/1.1\r\nHost: x"), Head::Request { ref method, ref path } if method == "GET" && path == "/metrics")
        );
        for bad in [
            &b"GET /metrics"[..],
            b"GET /metrics HTTP/2",
            b"GET metrics HTTP/1.1",
            b"GET / HTTP/1.1 extra",
            b"\xff\xfe / HTTP/1.1",
        ] {
            assert!(matches!(parse(bad), Head::Malformed(_)), "{bad:?}");
        }
        assert_eq!(find_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(14));
        assert_eq!(find_end(b"GET / HTTP/1.1\n\n"), Some(14));
        assert_eq!(find_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
