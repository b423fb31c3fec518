//! The runtime's own metrics, as the sampler reads them: a minimal HTTP/1.1 GET over a
//! `std::net::TcpStream` (loopback only, one deadline, a size cap), a parser of the Prometheus
//! text format, and [`scrape`], which keeps the `troupe_*` series of one reading.
//!
//! The lab gives each run's child `TROUPE_OBSERVE_LISTEN=127.0.0.1:PORT` ([`ENV_LISTEN`], a
//! port it found free); a Troupe program that got it serves Prometheus text at
//! `http://127.0.0.1:PORT/metrics`, and every sample of `resources.jsonl` carries what it read
//! there under `runtime` (rule 5 of [`super::sampler`]).
//!
//! Rules:
//! 1. Only loopback addresses are scraped: [`http_get`] refuses any other before connecting.
//! 2. One GET takes at most its deadline ([`TIMEOUT`] in the sampler) from connect to the last
//!    byte, and reads at most its cap ([`MAX_BYTES`]); past either it fails, naming which.
//! 3. A refused connection is [`ScrapeError::NotServing`]: nothing listens (a peer runtime
//!    without an exporter, a program not yet serving or already gone). It is not a failure.
//!    Every other problem (timeout, a status other than 200, a malformed response or
//!    exposition line, a body over the cap) is [`ScrapeError::Failed`] with the reason.
//! 4. The parser follows the text format: `#` lines (HELP, TYPE, comments) and blank lines are
//!    skipped; a sample is `name`, optional `{label="value",...}` (values escape `\\`, `\"`,
//!    `\n`), a value (a float, `NaN`, `+Inf`, `-Inf`) and an optional timestamp (ignored).
//!    A line that is none of these fails the whole reading, naming its line number.
//! 5. [`scrape`] keeps the series whose name starts with `troupe_`, the first [`MAX_SERIES`] in
//!    the order served; how many it dropped past the cap is reported beside them.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The variable that tells a run's child where to serve its metrics: `127.0.0.1:PORT`.
pub const ENV_LISTEN: &str = "TROUPE_OBSERVE_LISTEN";

/// Set to `off` (or `0`) in the lab's own environment, the lab gives no run's child
/// [`ENV_LISTEN`]: no runtime serves or records metrics and `resources.jsonl` has no `runtime`
/// key (to measure what the recording costs, or to run a runtime exactly as it runs unobserved).
pub const ENV_SWITCH: &str = "TROUPE_LAB_RUNTIME_METRICS";

/// Whether [`ENV_SWITCH`] leaves the runtime's metrics on (anything but `off` or `0`).
pub fn wanted() -> bool {
    !matches!(std::env::var(ENV_SWITCH).as_deref(), Ok("off" | "0"))
}

/// How long one scrape may take, connect to last byte (rule 2).
pub const TIMEOUT: Duration = Duration::from_millis(200);

/// The most bytes one scrape reads, headers included (rule 2).
pub const MAX_BYTES: usize = 1 << 20;

/// The most `troupe_*` series kept from one scrape (rule 5).
pub const MAX_SERIES: usize = 200;

/// Why a GET or a scrape gave nothing (rule 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeError {
    /// Nothing listens at the address: not counted as a failure.
    #[error("nothing listens at {0}")]
    NotServing(SocketAddr),
    /// Something answered, or did not in time, and what came back is not usable.
    #[error("{0}")]
    Failed(String),
}

fn failed(what: impl Into<String>) -> ScrapeError {
    ScrapeError::Failed(what.into())
}

/// `GET path` from `addr` (rules 1-3): the body of a 200 answer as text.
///
/// Sends `Connection: close` and reads to the end, a `Content-Length` body, or a chunked one.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration, cap: usize) -> Result<String, ScrapeError> {
    if !addr.ip().is_loopback() {
        return Err(failed(format!("{addr} is not a loopback address; the lab scrapes only 127.0.0.1 or ::1")));
    }
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => ScrapeError::NotServing(addr),
        _ => failed(format!("cannot connect to {addr}: {e}")),
    })?;
    let left = |what: &str| {
        deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()).ok_or_else(|| {
            failed(format!("GET http://{addr}{path}: no complete answer within {} ms ({what})", timeout.as_millis()))
        })
    };
    s.set_write_timeout(Some(left("sending")?)).map_err(|e| failed(e.to_string()))?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| failed(format!("GET http://{addr}{path}: cannot send: {e}")))?;
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    // Bounded by the deadline (each read's timeout is what is left of it) and by the cap.
    loop {
        s.set_read_timeout(Some(left("reading")?)).map_err(|e| failed(e.to_string()))?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > cap {
                    return Err(failed(format!("GET http://{addr}{path}: the answer is over {cap} bytes")));
                }
                if complete(&buf) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                left("reading")?;
            }
            Err(e) => return Err(failed(format!("GET http://{addr}{path}: {e}"))),
        }
    }
    let (status, headers, body) = split_response(&buf).map_err(|e| failed(format!("GET http://{addr}{path}: {e}")))?;
    if status != 200 {
        return Err(failed(format!("GET http://{addr}{path}: status {status}")));
    }
    let body = match header(&headers, "transfer-encoding") {
        Some(te) if te.eq_ignore_ascii_case("chunked") => {
            dechunk(body).map_err(|e| failed(format!("GET http://{addr}{path}: {e}")))?
        }
        _ => match header(&headers, "content-length").map(|v| v.trim().parse::<usize>()) {
            Some(Ok(n)) if body.len() >= n => body[..n].to_vec(),
            Some(Ok(n)) => {
                return Err(failed(format!(
                    "GET http://{addr}{path}: the body ended after {} of {n} bytes",
                    body.len()
                )))
            }
            Some(Err(_)) => return Err(failed(format!("GET http://{addr}{path}: a malformed Content-Length"))),
            None => body.to_vec(),
        },
    };
    String::from_utf8(body).map_err(|_| failed(format!("GET http://{addr}{path}: the body is not UTF-8")))
}

/// Whether `buf` holds a whole answer whose length is known (Content-Length or the last chunk),
/// so the read need not wait for the server to close.
fn complete(buf: &[u8]) -> bool {
    let Ok((_, headers, body)) = split_response(buf) else { return false };
    if header(&headers, "transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        return dechunk(body).is_ok();
    }
    header(&headers, "content-length").and_then(|v| v.trim().parse::<usize>().ok()).is_some_and(|n| body.len() >= n)
}

type Head = Vec<(String, String)>;

fn split_response(buf: &[u8]) -> Result<(u16, Head, &[u8]), String> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no end of headers")?;
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| "headers are not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let (proto, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !proto.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x status line: {status_line:?}"));
    }
    let status = code.parse::<u16>().map_err(|_| format!("a malformed status line: {status_line:?}"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok((status, headers, &buf[end + 4..]))
}

fn header<'a>(h: &'a Head, name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Decodes a chunked body; an error until the last (zero-size) chunk has arrived.
fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    // Each round consumes at least the size line, so it ends within b.len() rounds.
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").ok_or("a chunk size line is incomplete")?;
        let line = std::str::from_utf8(&b[..eol]).map_err(|_| "a chunk size is not text")?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| format!("a malformed chunk size {size_text:?}"))?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err("a chunk is incomplete".into());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// One sample line of the text format: the series (`name{labels}` as the lab writes it) and
/// its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The metric name.
    pub name: String,
    /// The labels in the order served, values unescaped.
    pub labels: Vec<(String, String)>,
    /// The value (`NaN` and the infinities included).
    pub value: f64,
}

impl Series {
    /// `name{k="v",...}` with the values escaped again as the format does; `name` alone
    /// without labels. The key of the series in a sample's `runtime` object.
    pub fn key(&self) -> String {
        if self.labels.is_empty() {
            return self.name.clone();
        }
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")))
            .collect();
        format!("{}{{{}}}", self.name, labels.join(","))
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}

fn parse_value(t: &str) -> Option<f64> {
    match t {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => t.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

/// Parses one sample line (rule 4).
fn parse_sample(line: &str) -> Result<Series, String> {
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    if !name.starts_with(is_name_start) {
        return Err("a line that starts with no metric name".into());
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        // Each round consumes one label (or the closing brace), so it ends within the line.
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let k_end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
            let key = &rest[..k_end];
            if key.is_empty() {
                return Err(format!("a malformed label list after {name}"));
            }
            rest = rest[k_end..].trim_start();
            rest = rest.strip_prefix('=').ok_or_else(|| format!("label {key} of {name} has no '='"))?;
            rest = rest.trim_start().strip_prefix('"').ok_or_else(|| format!("label {key} of {name} is not quoted"))?;
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let close = loop {
                match chars.next() {
                    None => return Err(format!("label {key} of {name} has no closing quote")),
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => return Err(format!("label {key} of {name} has an unknown escape \\{c}")),
                        None => return Err(format!("label {key} of {name} has no closing quote")),
                    },
                    Some((_, c)) => value.push(c),
                }
            };
            labels.push((key.to_string(), value));
            rest = rest[close + 1..].trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if !rest.starts_with('}') {
                return Err(format!("labels of {name} are not separated by ','"));
            }
        }
    }
    let mut fields = rest.split_whitespace();
    let v = fields.next().ok_or_else(|| format!("{name} has no value"))?;
    let value = parse_value(v).ok_or_else(|| format!("{name} has a value that is not a number: {v:?}"))?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().map_err(|_| format!("{name} has a malformed timestamp {ts:?}"))?;
    }
    if let Some(extra) = fields.next() {
        return Err(format!("{name} has more after its value and timestamp: {extra:?}"));
    }
    Ok(Series { name: name.to_string(), labels, value })
}

/// Parses a text-format exposition (rule 4); the error names the line.
///
/// ```
/// use troupe_lab::meter::prom::parse;
/// let text = "# TYPE troupe_up gauge\ntroupe_up{node=\"a \\\"b\\\"\"} 1\ntroupe_lag NaN\n";
/// let s = parse(text).unwrap();
/// assert_eq!(s[0].key(), "troupe_up{node=\"a \\\"b\\\"\"}");
/// assert_eq!(s[0].labels[0].1, "a \"b\"");
/// assert!(s[1].value.is_nan());
/// ```
pub fn parse(text: &str) -> Result<Vec<Series>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| parse_sample(l.trim()).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// A value as a sample writes it: a JSON number, or `"NaN"`, `"+Inf"`, `"-Inf"` (JSON has no
/// such numbers).
pub fn json_value(v: f64) -> Value {
    match serde_json::Number::from_f64(v) {
        Some(n) => Value::Number(n),
        None if v.is_nan() => Value::String("NaN".into()),
        None if v > 0.0 => Value::String("+Inf".into()),
        None => Value::String("-Inf".into()),
    }
}

/// One reading of the runtime's series (rule 5).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reading {
    /// `troupe_*` series by key ([`Series::key`]), at most [`MAX_SERIES`].
    pub series: BTreeMap<String, Value>,
    /// How many `troupe_*` series were left out past the cap.
    pub dropped: u64,
}

/// GETs `/metrics` from `addr` (rules 1-3) and keeps its `troupe_*` series (rule 5).
pub fn scrape(addr: SocketAddr, timeout: Duration) -> Result<Reading, ScrapeError> {
    let text = http_get(addr, "/metrics", timeout, MAX_BYTES)?;
    let all = parse(&text).map_err(|e| failed(format!("http://{addr}/metrics: {e}")))?;
    let mut r = Reading::default();
    for s in all.into_iter().filter(|s| s.name.starts_with("troupe_")) {
        if r.series.len() < MAX_SERIES {
            r.series.insert(s.key(), json_value(s.value));
        } else {
            r.dropped += 1;
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves `answers` in turn, one per connection, on a loopback port; returns its address.
    fn serve(answers: Vec<Vec<u8>>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for a in answers {
                let Ok((mut s, _)) = l.accept() else { return };
                let mut req = [0u8; 1024];
                let _ = s.read(&mut req);
                let _ = s.write_all(&a);
            }
        });
        addr
    }

    fn ok(body: &str) -> Vec<u8> {
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into()
    }

    #[test]
    fn rule_4_comments_labels_escapes_nan_and_inf() {
        let text = "# HELP troupe_x a help line\n# TYPE troupe_x counter\n\ntroupe_x 3\n\
                    troupe_y{a=\"1\",b=\"q\\\"x\\\\y\\nz\"} 2.5 1700000000000\n\
                    troupe_z{} NaN\ntroupe_w +Inf\ntroupe_v -Inf\ntroupe_u{le=\"0.5\",} 1e3\n";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 6);
        assert_eq!(s[0], Series { name: "troupe_x".into(), labels: vec![], value: 3.0 });
        assert_eq!(s[1].labels, vec![("a".into(), "1".into()), ("b".into(), "q\"x\\y\nz".into())]);
        assert_eq!(s[1].key(), "troupe_y{a=\"1\",b=\"q\\\"x\\\\y\\nz\"}");
        assert!(s[2].value.is_nan() && s[2].labels.is_empty());
        assert_eq!(s[3].value, f64::INFINITY);
        assert_eq!(s[4].value, f64::NEG_INFINITY);
        assert_eq!((s[5].value, s[5].key()), (1000.0, "troupe_u{le=\"0.5\"}".to_string()));
        assert_eq!(json_value(f64::NAN), Value::String("NaN".into()));
        assert_eq!(json_value(f64::INFINITY), Value::String("+Inf".into()));
        assert_eq!(json_value(2.5), serde_json::json!(2.5));
    }

    #[test]
    fn rule_4_a_malformed_line_names_its_number() {
        for (text, needle) in [
            ("troupe_a 1\ntroupe_b{x=\"1\" 2\n", "line 2"),
            ("troupe_a one\n", "not a number"),
            ("{x=\"1\"} 1\n", "no metric name"),
            ("troupe_a{x=1} 1\n", "not quoted"),
            ("troupe_a{x=\"\\t\"} 1\n", "unknown escape"),
            ("troupe_a 1 2 3\n", "more after"),
            ("troupe_a\n", "no value"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn rule_5_keeps_troupe_series_up_to_the_cap() {
        let mut body = String::from("process_cpu_seconds_total 4\n");
        for i in 0..MAX_SERIES + 7 {
            body.push_str(&format!("troupe_s{{i=\"{i}\"}} {i}\n"));
        }
        let r = scrape(serve(vec![ok(&body)]), Duration::from_secs(5)).unwrap();
        assert_eq!(r.series.len(), MAX_SERIES);
        assert_eq!(r.dropped, 7);
        assert!(!r.series.keys().any(|k| k.starts_with("process_")));
        assert_eq!(r.series["troupe_s{i=\"0\"}"], serde_json::json!(0.0));
    }

    #[test]
    fn rule_2_chunked_and_close_delimited_bodies() {
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\ntroupe_\r\n4\r\na 1\n\r\n0\r\n\r\n".to_vec();
        let close = b"HTTP/1.0 200 OK\r\n\r\ntroupe_b 2\n".to_vec();
        let addr = serve(vec![chunked, close]);
        assert_eq!(http_get(addr, "/metrics", Duration::from_secs(5), MAX_BYTES).unwrap(), "troupe_a 1\n");
        assert_eq!(http_get(addr, "/metrics", Duration::from_secs(5), MAX_BYTES).unwrap(), "troupe_b 2\n");
    }

    #[test]
    fn rule_3_refused_is_not_serving_and_other_problems_fail() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let free = l.local_addr().unwrap();
        drop(l);
        assert_eq!(scrape(free, TIMEOUT), Err(ScrapeError::NotServing(free)));
        let big = ok(&"troupe_x 1\n".repeat(MAX_BYTES / 8));
        let addr = serve(vec![b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(), big, ok("troupe_x{\n")]);
        let e = |r: Result<Reading, ScrapeError>| match r {
            Err(ScrapeError::Failed(m)) => m,
            other => panic!("expected a failure, got {other:?}"),
        };
        assert!(e(scrape(addr, Duration::from_secs(5))).contains("status 404"));
        assert!(e(scrape(addr, Duration::from_secs(5))).contains("over"));
        assert!(e(scrape(addr, Duration::from_secs(5))).contains("line 1"));
    }

    #[test]
    fn rule_2_a_server_that_never_answers_fails_within_the_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        // Accepted by the kernel's backlog, never answered.
        let t0 = Instant::now();
        let r = scrape(addr, Duration::from_millis(200));
        assert!(matches!(&r, Err(ScrapeError::Failed(m)) if m.contains("within 200 ms")), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        drop(l);
    }

    #[test]
    fn rule_1_refuses_a_non_loopback_address() {
        let r = http_get("192.0.2.1:9".parse().unwrap(), "/metrics", TIMEOUT, MAX_BYTES);
        assert!(matches!(&r, Err(ScrapeError::Failed(m)) if m.contains("not a loopback")), "{r:?}");
    }
}
