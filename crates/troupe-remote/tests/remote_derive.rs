//! `#[derive(RemoteMessage)]` in real use (`types.rs` rules, `troupe-macros` rules): tags of
//! structs, enums and generic types; nested types registered from the fields (`ActorRef`,
//! `ReplyTo`, inside containers and other messages); std types as replies across two nodes;
//! and the typed `AskError::UnknownType` when the receiving node does not know a type
//! (`inbound.rs` rule 8), against a `troupe-node` child process whose registry lacks it.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{cfg, NodeProc};
use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorRef, AskError, Ctx, ReplyTo};
use troupe_remote::{tag_of, Blob, Node, NodeConfig, RemoteField, RemoteMessage};

const T: Duration = Duration::from_secs(10);

/// A unit struct: the tag is the module path and name, version 1.
#[derive(Serialize, Deserialize, RemoteMessage)]
struct Ping;

/// A tuple struct with an explicit tag base and version.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "test.derive.moved", version = 3)]
struct Moved(u32);

/// Plain serde data of the user's own, only ever a field: opts in with an empty impl (rule 2
/// of the macros).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Hint {
    exact: bool,
}
impl RemoteField for Hint {}

/// Data that is also a reply (inside `Result<Vec<_>, _>`): a message of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, RemoteMessage)]
struct Point {
    x: i64,
    y: i64,
}

/// Reached only through `Lookup`'s fields (a reply inside an `Option` inside a `Vec` of tuples).
#[derive(Debug, PartialEq, Serialize, Deserialize, RemoteMessage)]
struct Found {
    at: Point,
}

/// Reached only as the message type of an `ActorRef` inside a derived field struct.
#[derive(Debug, Serialize, Deserialize, RemoteMessage)]
struct Note(String);

/// A derived message used as a field of another.
#[derive(Serialize, Deserialize, RemoteMessage)]
struct Subscriber {
    to: ActorRef<Note>,
}

/// An enum with named, tuple and unit variants, carrying refs and reply handles.
#[derive(Serialize, Deserialize, RemoteMessage)]
enum Lookup {
    Find { key: String, hint: Hint, reply: ReplyTo<Option<String>> },
    Many(Vec<(u8, Option<ReplyTo<Found>>)>),
    Subscribe(Subscriber),
    Count(ReplyTo<usize>),
    Table(HashMap<String, Point>, ReplyTo<Result<Vec<Point>, String>>),
    Stop,
}

/// A generic message: the parameters' tags are part of its tag. (`Send + 'static` because
/// serde's derive does not infer the bounds a `ReplyTo<B>` field needs.)
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "test.derive.envelope")]
struct Envelope<B: Send + 'static> {
    body: B,
    reply: ReplyTo<(B, u128)>,
}

#[test]
fn tags_follow_the_path_the_name_and_the_version() {
    assert_eq!(Ping::TAG, concat!(module_path!(), "::Ping.v1"));
    assert_eq!(Moved::TAG, "test.derive.moved.v3");
    assert_eq!(tag_of::<Moved>(), "test.derive.moved.v3");
    assert_eq!(tag_of::<Envelope<String>>(), "test.derive.envelope.v1<troupe.string>");
    assert_eq!(tag_of::<Envelope<Moved>>(), "test.derive.envelope.v1<test.derive.moved.v3>");
    assert_ne!(troupe_remote::register::<Envelope<String>>(), troupe_remote::register::<Envelope<u64>>());
}

#[test]
fn std_types_have_stable_tags() {
    assert_eq!(tag_of::<Option<String>>(), "troupe.option<troupe.string>");
    assert_eq!(tag_of::<Vec<u8>>(), "troupe.bytes", "Vec<u8> keeps its tag");
    assert_eq!(tag_of::<bytes::Bytes>(), "troupe.bytes");
    assert_eq!(tag_of::<Vec<i128>>(), "troupe.vec<troupe.i128>");
    assert_eq!(tag_of::<Result<usize, isize>>(), "troupe.result<troupe.usize,troupe.isize>");
    assert_eq!(tag_of::<(bool, char, f32, ())>(), "troupe.tuple<troupe.bool,troupe.char,troupe.f32,troupe.unit>");
    assert_eq!(tag_of::<ActorRef<Ping>>(), format!("troupe.ref<{}>", Ping::TAG));
}

#[test]
fn types_converted_to_the_derive_keep_their_wire_tags() {
    use troupe_remote::services::{Counter, Echo, Pong, PongReply, Put};
    assert_eq!(tag_of::<Echo>(), "troupe.svc.echo.v1");
    assert_eq!(tag_of::<Counter>(), "troupe.svc.counter.v1");
    assert_eq!(tag_of::<Pong>(), "troupe.svc.pong.v1");
    assert_eq!(tag_of::<PongReply>(), "troupe.svc.pong-reply.v1");
    assert_eq!(tag_of::<Put>(), "troupe.svc.put.v1");
}

/// docs/distribution.md, evolving a message, rule 1: the codec is not self-describing, so a
/// field added with `#[serde(default)]` does not make the old and new layouts readable by each
/// other; that is why a changed layout needs a new version.
#[test]
fn a_defaulted_new_field_does_not_make_layouts_compatible() {
    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct V1 {
        a: u32,
    }
    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct V2 {
        a: u32,
        #[serde(default)]
        b: u32,
    }
    let old = troupe_remote::codec::encode(&V1 { a: 7 }).unwrap();
    assert!(troupe_remote::codec::decode::<V2>(&old).is_err(), "a new node cannot read the old layout");
    let new = troupe_remote::codec::encode(&V2 { a: 7, b: 1 }).unwrap();
    assert!(troupe_remote::codec::decode::<V1>(&new).is_err(), "an old node cannot read the new one");
}

struct Directory {
    notes: Vec<ActorRef<Note>>,
}

impl Actor for Directory {
    type Msg = Lookup;
    async fn handle(&mut self, m: Lookup, _: &mut Ctx<Self>) {
        match m {
            Lookup::Find { key, hint, reply } => {
                reply.send((key == "joe" || !hint.exact).then(|| "armstrong".to_owned()))
            }
            Lookup::Many(items) => {
                for (i, r) in items {
                    if let Some(r) = r {
                        r.send(Found { at: Point { x: i.into(), y: 0 } });
                    }
                }
            }
            Lookup::Subscribe(s) => {
                let _ = s.to.send(Note("subscribed".into()));
                self.notes.push(s.to);
            }
            Lookup::Count(r) => r.send(self.notes.len()),
            Lookup::Table(t, r) => {
                let mut v: Vec<Point> = t.into_values().collect();
                v.sort_by_key(|p| p.x);
                r.send(if v.is_empty() { Err("empty".into()) } else { Ok(v) });
            }
            Lookup::Stop => {}
        }
    }
}

struct Inbox(tokio::sync::mpsc::UnboundedSender<String>);

impl Actor for Inbox {
    type Msg = Note;
    async fn handle(&mut self, Note(n): Note, _: &mut Ctx<Self>) {
        let _ = self.0.send(n);
    }
}

struct Echoer;

impl Actor for Echoer {
    type Msg = Envelope<String>;
    async fn handle(&mut self, e: Envelope<String>, _: &mut Ctx<Self>) {
        e.reply.send((e.body, u128::MAX));
    }
}

/// Two nodes in this process: every reply and ref type below is registered only through the
/// derived `nested` of `Lookup` (a missing one would fail the send, not answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_messages_and_std_replies_cross_nodes() {
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    b.export("dir", &troupe::spawn(Directory { notes: Vec::new() })).unwrap();
    b.export("echo", &troupe::spawn(Echoer)).unwrap();
    let dir = a.lookup::<Lookup>(&b.addr(), "dir").await.unwrap();

    let found =
        dir.ask(|reply| Lookup::Find { key: "joe".into(), hint: Hint { exact: true }, reply }, T).await.unwrap();
    assert_eq!(found, Some("armstrong".to_owned()));
    let missing =
        dir.ask(|reply| Lookup::Find { key: "mike".into(), hint: Hint { exact: true }, reply }, T).await.unwrap();
    assert_eq!(missing, None);

    let got = dir.ask(|r| Lookup::Many(vec![(7, Some(r)), (8, None)]), T).await.unwrap();
    assert_eq!(got, Found { at: Point { x: 7, y: 0 } });

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let inbox = troupe::spawn(Inbox(tx));
    dir.send(Lookup::Subscribe(Subscriber { to: inbox })).unwrap();
    assert_eq!(tokio::time::timeout(T, rx.recv()).await.unwrap().as_deref(), Some("subscribed"));
    assert_eq!(dir.ask(Lookup::Count, T).await.unwrap(), 1usize);

    let table = HashMap::from([("p".to_owned(), Point { x: 2, y: 3 }), ("q".to_owned(), Point { x: 1, y: 1 })]);
    let points = dir.ask(|r| Lookup::Table(table, r), T).await.unwrap();
    assert_eq!(points, Ok(vec![Point { x: 1, y: 1 }, Point { x: 2, y: 3 }]));
    assert_eq!(dir.ask(|r| Lookup::Table(HashMap::new(), r), T).await.unwrap(), Err("empty".to_owned()));
    dir.send(Lookup::Stop).unwrap();

    let echo = a.lookup::<Envelope<String>>(&b.addr(), "echo").await.unwrap();
    let (body, n) = echo.ask(|reply| Envelope { body: "hi".to_owned(), reply }, T).await.unwrap();
    assert_eq!((body.as_str(), n), ("hi", u128::MAX));
    // Another instance of the generic type is another type: the lookup's type check says so.
    assert!(a.lookup::<Envelope<u64>>(&b.addr(), "echo").await.is_err());
    a.shutdown();
    b.shutdown();
}

/// The child's `echo` service takes `troupe.svc.echo.v1` = `(Blob, ReplyTo<Blob>)`. This is
/// the same message from a newer build whose reply type changed: same request tag, a reply
/// type the child does not know.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "troupe.svc.echo")]
struct NewEcho(Blob, ReplyTo<NewBlob>);

#[derive(Debug, Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "test.derive.new-blob", version = 2)]
struct NewBlob(Vec<u8>);

/// The echo request itself at a version the child does not know.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "troupe.svc.echo", version = 2)]
struct EchoV2(Blob, ReplyTo<Blob>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_the_receiver_cannot_type_fails_with_the_type_named() {
    let mut child = NodeProc::start("b", "services = [\"echo\"]");
    let a = Node::start(cfg("a")).await.unwrap();
    assert_eq!(NewEcho::TAG, "troupe.svc.echo.v1", "the request is the one the child knows");

    // The reply type is unknown there: refused with it named, at once (no timeout).
    let new = a.remote_ref::<NewEcho>(&child.addr, "echo");
    let started = std::time::Instant::now();
    let r = new.ask(|reply| NewEcho(Blob(vec![1]), reply), Duration::from_secs(30)).await;
    assert_eq!(r.unwrap_err(), AskError::UnknownType { tag: "test.derive.new-blob.v2" });
    assert!(started.elapsed() < Duration::from_secs(10));

    // The request type at another version: the same typed error, naming it.
    let v2 = a.remote_ref::<EchoV2>(&child.addr, "echo");
    let err = v2.ask(|reply| EchoV2(Blob(vec![2]), reply), Duration::from_secs(30)).await.unwrap_err();
    assert_eq!(err, AskError::UnknownType { tag: "troupe.svc.echo.v2" });
    assert!(err.to_string().contains("does not know the message type \"troupe.svc.echo.v2\""), "{err}");
    assert_eq!(child.stats()["refused_in"], 2);

    // The session is intact: the known type still works.
    let echo = a.lookup::<troupe_remote::services::Echo>(&child.addr, "echo").await.unwrap();
    let got = echo.ask(|r| troupe_remote::services::Echo(Blob(vec![3]), r), T).await.unwrap();
    assert_eq!(got.0, vec![3]);
    a.shutdown();
}

struct BlobEchoer;
impl Actor for BlobEchoer {
    type Msg = troupe_remote::services::Echo;
    async fn handle(&mut self, troupe_remote::services::Echo(b, r): Self::Msg, _: &mut Ctx<Self>) {
        r.send(b);
    }
}

/// A loopback listener in front of `to` that holds every connection made to it, unforwarded,
/// until `open` is sent `true`, then forwards it (each connection for at most a minute).
async fn gate(to: String) -> (String, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = listener.local_addr().unwrap().to_string();
    let (open, opened) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        for _ in 0..64 {
            let Ok(Ok((mut inbound, _))) = tokio::time::timeout(Duration::from_secs(60), listener.accept()).await
            else {
                return;
            };
            let (to, mut opened) = (to.clone(), opened.clone());
            tokio::spawn(tokio::time::timeout(Duration::from_secs(60), async move {
                if opened.wait_for(|o| *o).await.is_err() {
                    return;
                }
                if let Ok(mut out) = tokio::net::TcpStream::connect(&to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            }));
        }
    });
    (front, open)
}

/// Regression (CI of the stop that brought the derive): each node sends on the connection it
/// dialled, so a refusal goes back over the refusing node's own session to the asker. A frame
/// can arrive before that session is up, while it is not yet known whether the asker decodes
/// typed refusals; the refusal was then sent untyped and the ask failed as `NoReply`. Here the
/// asker's advertised address is a gate that holds the refusing node's dial until the refusal
/// has been made: it waits, and goes out typed once the session is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_made_before_the_session_back_is_up_is_still_typed() {
    let b = Node::start(cfg("b")).await.unwrap();
    b.export("echo", &troupe::spawn(BlobEchoer)).unwrap();
    let port = common::free_port();
    let (front, open) = gate(format!("127.0.0.1:{port}")).await;
    let a = Node::start(NodeConfig { listen: format!("127.0.0.1:{port}"), advertise: Some(front), ..cfg("a") })
        .await
        .unwrap();

    let new = a.remote_ref::<NewEcho>(&b.addr(), "echo");
    let ask =
        tokio::spawn(async move { new.ask(|reply| NewEcho(Blob(vec![1]), reply), Duration::from_secs(30)).await });
    // A node publishes no event for a refusal it makes, so its counter is polled, bounded by T.
    let deadline = std::time::Instant::now() + T;
    while b.stats().refused_in == 0 {
        assert!(std::time::Instant::now() < deadline, "b never refused the ask");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!ask.is_finished(), "the refusal cannot have reached a: b's session to a waits at the gate");
    open.send(true).unwrap();
    let r = tokio::time::timeout(T, ask).await.expect("the refusal reaches a once the gate opens").unwrap();
    assert_eq!(r.unwrap_err(), AskError::UnknownType { tag: "test.derive.new-blob.v2" });
    a.shutdown();
    b.shutdown();
}
