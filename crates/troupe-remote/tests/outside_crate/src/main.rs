//! A user's program, built outside the Troupe workspace against the crates by path: a derived
//! remote message with an `Option<String>` reply, two nodes, an ask across them, and one call
//! that shuts everything down. Prints `ok` and exits 0 when every step behaved.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{Actor, Ctx, ReplyTo, System};
use troupe_remote::{Node, NodeConfig, RemoteMessage};

#[derive(Serialize, Deserialize, RemoteMessage)]
enum Request {
    Nickname(String, ReplyTo<Option<String>>),
}

struct Names;

impl Actor for Names {
    type Msg = Request;
    async fn handle(&mut self, msg: Request, _: &mut Ctx<Self>) {
        match msg {
            Request::Nickname(name, reply) => reply.send((name == "margaret").then(|| "maggie".to_owned())),
        }
    }
}

#[tokio::main]
async fn main() {
    let t = Duration::from_secs(10);
    let sys = System::new();
    let a = Node::start_in(&sys, NodeConfig::new("a", "outside-secret")).await.expect("node a starts");
    let b = Node::start_in(&sys, NodeConfig::new("b", "outside-secret")).await.expect("node b starts");
    a.export("names", &sys.spawn(Names)).expect("export");
    let names = b.lookup::<Request>(&a.addr(), "names").await.expect("b finds a's actor");
    let found = names.ask(|r| Request::Nickname("margaret".into(), r), t).await.expect("ask across nodes");
    assert_eq!(found.as_deref(), Some("maggie"));
    let none = names.ask(|r| Request::Nickname("ada".into(), r), t).await.expect("ask across nodes");
    assert_eq!(none, None);
    let (a_addr, b_addr) = (a.addr(), b.addr());
    drop((a, b));

    let report = sys.shutdown().await;
    assert!(report.timed_out().is_empty(), "{report:?}");
    // Both ports are free again: the nodes closed with the system.
    for addr in [a_addr, b_addr] {
        std::net::TcpListener::bind(&addr).unwrap_or_else(|e| panic!("{addr} still taken after shutdown: {e}"));
    }
    println!("ok");
}
