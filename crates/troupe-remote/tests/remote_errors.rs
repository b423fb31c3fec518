//! The distribution layer's errors (`error.rs` rules): an I/O failure keeps the `io::Error` as
//! its source (rule 1), a remote ask nobody answers is a timeout and an ask to a stopped remote
//! actor is not (rule 2 and the core's rule 1), and an actor's `?` on a node error keeps it.
//! Also compile-time checks that the node's handles, errors and futures are `Send`.

#![allow(dead_code)]

mod common;

use std::error::Error as _;
use std::future::Future;
use std::time::Duration;

use common::cfg;
use troupe::{Actor, ActorError, AskError, Ctx};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, Error, ErrorKind, Node, NodeConfig};

const LONG: Duration = Duration::from_secs(10);

#[tokio::test]
async fn rule_1_a_node_that_cannot_bind_keeps_the_addr_in_use_io_error_as_its_source() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let mut c = cfg("a");
    c.listen = addr.clone();
    let Err(e) = Node::start(c).await else { panic!("the node bound a taken address") };
    assert!(matches!(&e.kind, ErrorKind::Io(what) if what.contains(&addr)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains(&format!("cannot listen on {addr}")) && text.contains("pick another `listen`"), "{text}");
    let io = e.source().expect("a source").downcast_ref::<std::io::Error>().expect("the io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);
    // One line with the cause, the OS error said once.
    let chain = troupe::error_chain(&e);
    assert!(chain.starts_with(&text) && chain.ends_with(&io.to_string()), "{chain}");
    assert_eq!(chain.matches("os error").count(), 1, "{chain}");

    // Across the actor boundary: `?` in an actor keeps the node error, and its io::Error below.
    let actor: ActorError = e.clone().into();
    let node_err = actor.source().unwrap().downcast_ref::<Error>().expect("the node error");
    assert!(matches!(node_err.kind, ErrorKind::Io(_)));
    assert!(node_err.source().unwrap().is::<std::io::Error>());
}

#[tokio::test]
async fn rule_1_a_refused_connection_is_unreachable_with_the_io_error_as_its_source() {
    let a = Node::start(cfg("a")).await.unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let e = a.connect(&free).await.unwrap_err();
    assert!(matches!(&e.kind, ErrorKind::Unreachable(at) if *at == free), "{e:?}");
    assert!(e.to_string().contains("check it runs and the address is right"), "{e}");
    let io = e.source().expect("a source").downcast_ref::<std::io::Error>().expect("the io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
    a.shutdown();
}

#[test]
fn a_configuration_file_that_cannot_be_read_names_it_and_keeps_the_io_error() {
    let missing = std::env::temp_dir().join(format!("troupe-errors-missing-{}.toml", std::process::id()));
    let e = NodeConfig::from_file(&missing).unwrap_err();
    assert!(e.to_string().contains(&missing.display().to_string()), "{e}");
    let io = e.source().unwrap().downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}

/// Takes echo requests and never answers them.
struct Mute(Vec<Echo>);
impl Actor for Mute {
    type Msg = Echo;
    async fn handle(&mut self, m: Echo, _: &mut Ctx<Self>) {
        self.0.push(m);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_ask_nobody_answers_is_a_timeout_and_one_to_a_stopped_actor_is_not() {
    let b = Node::start(cfg("b")).await.unwrap();
    let mute = troupe::spawn(Mute(vec![]));
    b.export("mute", &mute).unwrap();
    let a = Node::start(cfg("a")).await.unwrap();
    let r = tokio::time::timeout(LONG, a.lookup::<Echo>(&b.addr(), "mute")).await.unwrap().unwrap();
    let t = Duration::from_millis(200);
    assert_eq!(r.ask(|reply| Echo(Blob(vec![1]), reply), t).await.unwrap_err(), AskError::Timeout(t));

    mute.stop();
    mute.terminated().await;
    let e = r.ask(|reply| Echo(Blob(vec![2]), reply), LONG).await.unwrap_err();
    assert!(matches!(e, AskError::Gone | AskError::NoReply), "a stopped actor is not a timeout: {e:?}");
    a.shutdown();
    b.shutdown();
}

fn require_handle<T: Send + Sync + Clone + 'static>() {}
fn require_error<E: std::error::Error + Send + Sync + 'static>() {}
fn require_send_future<F: Future + Send>(_: &F) {}

#[test]
fn node_and_its_error_are_send_sync() {
    require_handle::<Node>();
    require_error::<Error>();
    require_handle::<ErrorKind>();
    require_handle::<NodeConfig>();
}

/// Never called: it only has to compile, which proves each future is `Send`.
async fn node_futures_are_send(n: Node) {
    require_send_future(&Node::start(cfg("x")));
    require_send_future(&n.connect("127.0.0.1:1"));
    require_send_future(&n.lookup::<Echo>("127.0.0.1:1", "echo"));
}
