//! Feature `otel` (`src/otel.rs`) across nodes: an ask from this process (node `a`, with an
//! OpenTelemetry SDK tracer collecting its spans in memory) to a `troupe-node` OS process (node
//! `b`, reporting its receive spans on stdout) is one trace on both sides; bad trace context is
//! ignored and counted; frames without it, as a build without the feature sends them, are
//! delivered; and a node sends none to a peer whose handshake did not advertise it.
//!
//! Run: `cargo test -p troupe-remote --features otel --test remote_otel`.

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{cfg, NodeProc, SECRET};
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanProcessor};
use serde::{Deserialize, Serialize};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use troupe::{Actor, Ctx};
use troupe_remote::frame::{ext, kind, write_frame, DataHeader, FrameBuf, HeaderExt, Target, EXT_TARGET_FLAG};
use troupe_remote::handshake::{self, Identity};
use troupe_remote::otel::{OpenTelemetrySpanExt, RECEIVE_SPAN};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, Nested, Node, RemoteMessage};

const T: Duration = Duration::from_secs(20);

/// Every span this process ended, kept by an in-memory span processor.
#[derive(Debug, Default, Clone)]
struct Collected(Arc<Mutex<Vec<SpanData>>>);

impl SpanProcessor for Collected {
    fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &Context) {}
    fn on_end(&self, span: SpanData) {
        self.0.lock().unwrap().push(span);
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

fn attr(s: &SpanData, k: &str) -> String {
    s.attributes.iter().find(|kv| kv.key.as_str() == k).map(|kv| kv.value.to_string()).unwrap_or_default()
}

impl Collected {
    /// Waits (bounded) for an ended span matching `pred`.
    async fn wait_for(&self, limit: Duration, pred: impl Fn(&SpanData) -> bool) -> SpanData {
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = self.0.lock().unwrap().iter().find(|s| pred(s)) {
                return s.clone();
            }
            assert!(Instant::now() < end, "no matching span within {limit:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn receive_spans(&self, pred: impl Fn(&SpanData) -> bool) -> Vec<SpanData> {
        self.0.lock().unwrap().iter().filter(|s| s.name == RECEIVE_SPAN && pred(s)).cloned().collect()
    }
}

/// The process-wide subscriber: OpenTelemetry spans through an SDK tracer into [`Collected`].
fn collected() -> &'static Collected {
    static C: OnceLock<Collected> = OnceLock::new();
    C.get_or_init(|| {
        let c = Collected::default();
        let provider = SdkTracerProvider::builder().with_span_processor(c.clone()).build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("remote_otel"));
        tracing_subscriber::registry().with(layer).init();
        std::mem::forget(provider); // lives as long as the process
        c
    })
}

/// A span context as a caller's service would have it: a known trace id, sampled.
fn remote_parent(trace: u128, span: u64) -> Context {
    let sc = SpanContext::new(TraceId::from(trace), SpanId::from(span), TraceFlags::SAMPLED, true, TraceState::NONE);
    Context::new().with_remote_span_context(sc)
}

/// `key value` pairs of a `trace ...` report line of `troupe-node`.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let mut words = line.split(' ');
    while let Some(w) = words.next() {
        if w == key {
            return words.next().unwrap_or("");
        }
    }
    ""
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_across_two_node_processes_is_one_trace_on_both_sides() {
    let spans = collected();
    let mut b = NodeProc::start_with("b", "services = [\"echo\"]", SECRET, &["env", "TROUPE_NODE_OTEL_REPORT=1"]);
    let a = Node::start(cfg("a")).await.unwrap();
    let echo = a.lookup::<Echo>(&b.addr, "echo").await.unwrap();

    let trace = 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736_u128;
    let span = tracing::info_span!("test.ask");
    span.set_parent(remote_parent(trace, 0x00f0_67aa_0ba9_02b7)).unwrap();
    let ask_span = span.context().span().span_context().span_id();
    let answer = echo.ask(|r| Echo(Blob(b"traced".to_vec()), r), T).instrument(span.clone()).await.unwrap();
    assert_eq!(answer.0, b"traced");
    drop(span);

    // Node b: its receive span is in the caller's trace, a child of the span that asked.
    let want = format!("{:032x}", trace);
    let line = b.wait_line(|l| l.starts_with("trace ") && l.contains("kind data"), T);
    assert_eq!(field(&line, "trace"), want, "{line}");
    assert_eq!(field(&line, "parent"), ask_span.to_string(), "{line}");
    assert!(field(&line, "actor").starts_with("id:"), "the looked-up echo, by number: {line}");
    let b_span = field(&line, "span").to_owned();
    assert_ne!(b_span, ask_span.to_string());

    // Node a: the reply is handled in a span of the same trace, a child of b's receive span.
    let reply = spans.wait_for(T, |s| s.name == RECEIVE_SPAN && attr(s, "kind") == "reply").await;
    assert_eq!(reply.span_context.trace_id(), TraceId::from(trace));
    assert_eq!(reply.parent_span_id.to_string(), b_span, "the reply continues b's span");
    assert!(reply.parent_span_is_remote);
    assert_eq!(attr(&reply, "from"), b.addr);

    // A message sent outside any span carries no context: b reports no span for it.
    let before = b.stats()["trace_context_dropped"].as_u64();
    assert_eq!(echo.ask(|r| Echo(Blob(b"plain".to_vec()), r), T).await.unwrap().0, b"plain");
    b.cmd("stats");
    let next = b.wait_line(|l| l.starts_with("trace ") || l.starts_with("stats "), T);
    assert!(next.starts_with("stats "), "an untraced message got a span: {next}");
    assert_eq!(before, Some(0));
    a.shutdown();
}

/// What the sink actor of the next tests receives.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
struct Note(u64);

impl RemoteMessage for Note {
    const TAG: &'static str = "test.otel.note.v1";
    fn nested(_: &mut Nested) {}
}

struct Sink(tokio::sync::mpsc::UnboundedSender<u64>);

impl Actor for Sink {
    type Msg = Note;
    async fn handle(&mut self, Note(n): Note, _: &mut Ctx<Self>) {
        let _ = self.0.send(n);
    }
}

/// A data frame to `target` carrying `Note(n)` with the header extensions `ext`.
fn note_frame(out: &mut Vec<u8>, target: &str, n: u64, ext: &HeaderExt<'_>) {
    let h = DataHeader { target: Target::Name(target.into()), tag: troupe_remote::tag_hash(Note::TAG), ack_seq: 0 };
    write_frame(out, kind::DATA, |b| {
        h.write_ext(ext, b)?;
        troupe_remote::codec::encode_into(&Note(n), b)?;
        b.push(0);
        Ok(())
    })
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_trace_context_is_ignored_and_counted_and_frames_without_it_are_delivered() {
    let spans = collected();
    let b = Node::start(cfg("b")).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    b.export("sink", &troupe::spawn(Sink(tx))).unwrap();

    // A raw session, as a build without the feature dials: it ignores the Welcome's features.
    let mut sock = tokio::net::TcpStream::connect(b.addr()).await.unwrap();
    let me = Identity { name: "raw".into(), listen: "127.0.0.1:9".into(), incarnation: 5 };
    handshake::dial(&mut sock, &me, "default", 0, SECRET.as_bytes(), T).await.unwrap();
    let good = b"00-0000000000000000000000000000abcd-00000000000000e1-01";
    let oversized = vec![b'0'; 300];
    let mut out = Vec::new();
    note_frame(&mut out, "sink", 1, &HeaderExt::default()); // as a no-otel encoder writes it
    note_frame(&mut out, "sink", 2, &HeaderExt { traceparent: Some(b"00-not-a-trace-context"), tracestate: None });
    note_frame(&mut out, "sink", 3, &HeaderExt { traceparent: Some(&oversized), tracestate: None });
    note_frame(&mut out, "sink", 4, &HeaderExt { traceparent: Some(good), tracestate: Some(b"k=v") });
    // An unknown extension key alone: skipped, no context, nothing counted.
    let mut unknown = Vec::new();
    note_frame(&mut unknown, "sink", 5, &HeaderExt { traceparent: Some(good), tracestate: None });
    // After the frame header (5), target kind and name (1 + 2 + 4), tag, ack (8 + 8), count.
    let at = 5 + 7 + 16 + 1;
    assert_eq!(unknown[5] & EXT_TARGET_FLAG, EXT_TARGET_FLAG);
    assert_eq!(unknown[at], ext::TRACEPARENT);
    unknown[at] = 99;
    out.extend_from_slice(&unknown);
    tokio::io::AsyncWriteExt::write_all(&mut sock, &out).await.unwrap();

    let mut got = Vec::new();
    while got.len() < 5 {
        match tokio::time::timeout(T, rx.recv()).await {
            Ok(Some(n)) => got.push(n),
            other => panic!("delivered so far {got:?}, then {other:?}"),
        }
    }
    got.sort_unstable();
    assert_eq!(got, [1, 2, 3, 4, 5], "every message is delivered, whatever its trace context");
    assert_eq!(b.stats().trace_context_dropped, 2, "the malformed and the oversized traceparent");

    // The raw session's spans are those from its stated address.
    let raw = |s: &SpanData| s.name == RECEIVE_SPAN && attr(s, "from") == "127.0.0.1:9";
    let traced = spans.wait_for(T, raw).await;
    assert_eq!(traced.span_context.trace_id(), TraceId::from(0xabcd_u128));
    assert_eq!(traced.parent_span_id, SpanId::from(0xe1_u64));
    assert_eq!(traced.span_context.trace_state().get("k"), Some("v"));
    assert_eq!((attr(&traced, "tag").as_str(), attr(&traced, "actor").as_str()), (Note::TAG, "name:sink"));
    assert_eq!(spans.receive_spans(raw).len(), 1, "only the valid context got a span");
    drop(sock);
    b.shutdown();
}

/// Bytes from one side of a proxied connection, cut into frames (kind, body).
fn frames(fb: &mut FrameBuf) -> Vec<(u8, Vec<u8>)> {
    let mut v = Vec::new();
    while let Ok(Some((k, body))) = fb.next_frame(1 << 24) {
        v.push((k, body.to_vec()));
    }
    v
}

/// A proxy to `to` that passes every connection through, empties the body of each `Welcome`
/// (so the dialler sees an acceptor without the feature, as a build without `otel` answers)
/// and records the data frames the dialler sends.
async fn stripping_proxy(to: String) -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        // Bounded: the node dials its control lane and one default lane per session.
        for _ in 0..64 {
            let Ok((down, _)) = listener.accept().await else { return };
            let up = tokio::net::TcpStream::connect(&to).await.unwrap();
            let (mut dr, mut dw) = down.into_split();
            let (mut ur, mut uw) = up.into_split();
            let seen = seen2.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut fb = FrameBuf::new();
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = dr.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    fb.extend(&buf[..n]);
                    for (k, body) in frames(&mut fb) {
                        if k == kind::DATA {
                            seen.lock().unwrap().push(body.clone());
                        }
                        let mut out = Vec::new();
                        write_frame(&mut out, k, |b| {
                            b.extend_from_slice(&body);
                            Ok(())
                        })
                        .unwrap();
                        if uw.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                }
            });
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut fb = FrameBuf::new();
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = ur.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    fb.extend(&buf[..n]);
                    for (k, body) in frames(&mut fb) {
                        let body = if k == kind::WELCOME { Vec::new() } else { body };
                        let mut out = Vec::new();
                        write_frame(&mut out, k, |b| {
                            b.extend_from_slice(&body);
                            Ok(())
                        })
                        .unwrap();
                        if dw.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_does_not_advertise_trace_context_never_receives_it() {
    let spans = collected();
    let b = Node::start(cfg("b")).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    b.export("sink", &troupe::spawn(Sink(tx))).unwrap();
    let (proxy, seen) = stripping_proxy(b.addr()).await;
    let a = Node::start(cfg("a")).await.unwrap();
    // Up first: frames queued while no session is up carry no context anyway (rule 2).
    a.connect(&proxy).await.unwrap();
    let sink = a.remote_ref::<Note>(&proxy, "sink");
    let span = tracing::info_span!("test.tell");
    span.set_parent(remote_parent(0x99, 0x88)).unwrap();
    async {
        for n in 0..3 {
            sink.send(Note(n)).unwrap();
        }
    }
    .instrument(span)
    .await;
    for _ in 0..3 {
        tokio::time::timeout(T, rx.recv()).await.expect("delivered through the proxy").unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "the three tells went through the proxy");
    for body in &seen {
        let (_, ext, _, _) = DataHeader::read_ext(body).unwrap();
        assert_eq!(ext, HeaderExt::default(), "no extension to a peer that did not advertise it");
        assert_eq!(body[0] & EXT_TARGET_FLAG, 0);
    }
    // The same sends straight to b, which advertises it, do carry it (b's span shows it).
    a.connect(&b.addr()).await.unwrap();
    let direct = a.remote_ref::<Note>(&b.addr(), "sink");
    let span = tracing::info_span!("test.tell.direct");
    span.set_parent(remote_parent(0x77, 0x88)).unwrap();
    span.in_scope(|| direct.send(Note(9)).unwrap());
    assert_eq!(tokio::time::timeout(T, rx.recv()).await.unwrap(), Some(9));
    spans.wait_for(T, |s| s.name == RECEIVE_SPAN && s.span_context.trace_id() == TraceId::from(0x77_u128)).await;
    assert!(spans.receive_spans(|s| s.span_context.trace_id() == TraceId::from(0x99_u128)).is_empty());
    a.shutdown();
    b.shutdown();
}
