//! Global names across connected nodes (registered on one OS process, resolved from others),
//! and remote kill/stop of a named actor through a forged ref (what the SCP injector uses).

mod common;

use std::time::Duration;

use common::{cfg, NodeProc};
use troupe_remote::services::Echo;
use troupe_remote::{Blob, ErrorKind, Node};

const T: Duration = Duration::from_secs(10);

async fn eventually<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let end = std::time::Instant::now() + T;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(std::time::Instant::now() < end, "condition not reached within {T:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_name_registered_on_one_node_resolves_on_the_others() {
    let server = NodeProc::start("server", "services = [\"global:discovery\"]");
    let mut client = NodeProc::start("client", "services = []");
    let a = Node::start(cfg("a")).await.unwrap();
    a.connect(&server.addr).await.unwrap();
    // The name arrives with the session.
    let r = eventually(|| a.whereis_global::<Echo>("discovery").unwrap()).await;
    assert_eq!(r.ask(|x| Echo(Blob(b"ok".to_vec()), x), T).await.unwrap().0, b"ok");
    // A wrong type is a typed error; an unknown name is None.
    assert!(matches!(
        a.whereis_global::<troupe_remote::services::Counter>("discovery").unwrap_err().kind,
        ErrorKind::TypeMismatch { .. }
    ));
    assert!(a.whereis_global::<Echo>("nobody").unwrap().is_none());
    // Registering a taken name fails; a fresh one is seen by the other node process.
    let mine = troupe::spawn(Echoer);
    assert!(matches!(a.register_global("discovery", &mine).unwrap_err().kind, ErrorKind::NameTaken(_)));
    a.register_global("from-a", &mine).unwrap();
    let c = Node::start(cfg("c")).await.unwrap();
    c.connect(&a.addr()).await.unwrap();
    let r = eventually(|| c.whereis_global::<Echo>("from-a").unwrap()).await;
    assert_eq!(r.ask(|x| Echo(Blob(vec![5]), x), T).await.unwrap().0, vec![5]);
    // The name goes with its actor.
    mine.kill();
    eventually(|| c.whereis_global::<Echo>("from-a").unwrap().is_none().then_some(())).await;
    client.cmd(&format!("connect {}", server.addr));
    client.wait_line(|l| l.starts_with("connected server"), T);
    a.shutdown();
    c.shutdown();
}

struct Echoer;
impl troupe::Actor for Echoer {
    type Msg = Echo;
    async fn handle(&mut self, Echo(b, r): Echo, _: &mut troupe::Ctx<Self>) {
        r.send(b);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_ref_kills_a_named_remote_actor() {
    let child = NodeProc::start("b", "services = [\"echo\"]");
    let a = Node::start(cfg("a")).await.unwrap();
    let echo = a.lookup::<Echo>(&child.addr, "echo").await.unwrap();
    let forged = a.remote_ref::<Echo>(&child.addr, "echo");
    // Poll `terminated()` once so its monitor request goes out before the kill.
    let mut dead = Box::pin(echo.terminated());
    std::future::poll_fn(|cx| {
        let _ = std::future::Future::poll(dead.as_mut(), cx);
        std::task::Poll::Ready(())
    })
    .await;
    forged.kill();
    assert_eq!(tokio::time::timeout(T, dead).await.unwrap(), troupe::ExitReason::Killed);
    assert!(matches!(a.lookup::<Echo>(&child.addr, "echo").await.unwrap_err().kind, ErrorKind::NoSuchName(_)));
    a.shutdown();
}
