//! Two Troupe nodes in two OS processes. Run with
//! `cargo run -p example-two-nodes` (starts the server node as a child process itself), or in
//! two terminals: `cargo run -p example-two-nodes -- server 127.0.0.1:7100` and
//! `cargo run -p example-two-nodes -- client 127.0.0.1:7100`.
//! Add `--tls` to the one-command mode (`cargo run -p example-two-nodes -- --tls`) to run both
//! nodes under mutual TLS with development certificates made for the run.
//!
//! The server exports a `greeter` actor. The client looks it up (the message type is checked),
//! asks it, hands it a ref to one of its own actors inside a message (the greeter answers
//! there), monitors it, and, in the one-command mode, kills the server process and watches
//! the monitor report `noconnection`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorRef, Ctx, Down, ReplyTo};
use troupe_remote::{Node, NodeConfig, RemoteMessage, TlsConfig};

const SECRET: &str = "example-secret"; // every node of a cluster shares it

/// What the greeter accepts. The derive finds the reply type (`String`) and the type of the
/// refs sent inside (`Note`) from the fields; the tag stays `example.greet.v1`.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "example.greet")]
enum Greet {
    /// Answer through the reply handle.
    Hello(String, ReplyTo<String>),
    /// Answer later, to this ref.
    Subscribe(ActorRef<Note>),
}

/// What subscribers receive.
#[derive(Serialize, Deserialize, Debug, RemoteMessage)]
#[remote(tag = "example.note")]
struct Note(String);

struct Greeter;

impl Actor for Greeter {
    type Msg = Greet;
    async fn handle(&mut self, m: Greet, _: &mut Ctx<Self>) {
        match m {
            Greet::Hello(name, reply) => reply.send(format!("hello, {name}, from the server node")),
            Greet::Subscribe(r) => {
                let _ = r.send(Note("you are subscribed".into()));
            }
        }
    }
}

/// Prints notes and the `Down` of what it monitors.
struct Listener(tokio::sync::mpsc::UnboundedSender<String>);

impl Actor for Listener {
    type Msg = Note;
    async fn handle(&mut self, n: Note, _: &mut Ctx<Self>) {
        let _ = self.0.send(format!("note: {}", n.0));
    }
    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        let _ = self.0.send(format!("down: {} stopped: {}", d.actor, d.reason));
    }
}

struct Watch(troupe::AnyRef, ActorRef<Note>);
impl Actor for Watch {
    type Msg = ();
    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), troupe::ActorError> {
        ctx.monitor(&self.0);
        Ok(())
    }
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        let _ = self.1.send(Note(format!("monitor fired: {} stopped: {}", d.actor, d.reason)));
    }
}

/// The `[tls]` settings of `name` in a folder made by `troupe_remote::dev_certs`.
fn tls_in(dir: &str, name: &str) -> TlsConfig {
    let f = |file: String| format!("{dir}/{file}");
    TlsConfig {
        cert: f(format!("{name}.crt")),
        key: f(format!("{name}.key")),
        ca: f("ca.crt".into()),
        server_name: None,
    }
}

async fn server(listen: &str, tls: Option<TlsConfig>) {
    let cfg = NodeConfig { listen: listen.into(), tls, ..NodeConfig::new("server", SECRET) };
    let node = Node::start(cfg).await.expect("start the server node");
    node.export("greeter", &troupe::spawn(Greeter)).unwrap();
    println!("listening on {}", node.addr());
    std::future::pending::<()>().await;
}

async fn client(addr: &str, mut child: Option<std::process::Child>, tls: Option<TlsConfig>) {
    let node =
        Node::start(NodeConfig { tls, ..NodeConfig::new("client", SECRET) }).await.expect("start the client node");
    let greeter = node.lookup::<Greet>(addr, "greeter").await.expect("look up the greeter");
    let answer = greeter.ask(|r| Greet::Hello("new user".into(), r), Duration::from_secs(5)).await.unwrap();
    println!("ask -> {answer}");

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let me = troupe::spawn(Listener(tx));
    greeter.send(Greet::Subscribe(me.clone())).unwrap();
    println!("{}", rx.recv().await.unwrap());

    troupe::spawn(Watch(greeter.any(), me));
    if let Some(c) = child.as_mut() {
        greeter.ask(|r| Greet::Hello("again".into(), r), Duration::from_secs(5)).await.unwrap();
        println!("killing the server process (pid {})", c.id());
        c.kill().unwrap();
        println!("{}", tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap());
        let _ = c.wait();
    } else {
        println!("now stop the server (Ctrl-C in its terminal) and watch the monitor fire");
        println!("{}", rx.recv().await.unwrap());
    }
    node.shutdown();
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("server") => {
            let tls = args.get(3).map(|dir| tls_in(dir, "server"));
            server(args.get(2).map_or("127.0.0.1:7100", String::as_str), tls).await;
        }
        Some("client") => client(args.get(2).map_or("127.0.0.1:7100", String::as_str), None, None).await,
        other => {
            use std::io::BufRead;
            let tls_dir = (other == Some("--tls")).then(|| {
                let dir = std::env::temp_dir().join(format!("troupe-example-certs-{}", std::process::id()));
                troupe_remote::dev_certs(&dir, &["server", "client"], &["127.0.0.1"]).expect("make certificates");
                println!("mutual TLS with development certificates in {}", dir.display());
                dir.display().to_string()
            });
            let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
            cmd.args(["server", "127.0.0.1:0"]).args(tls_dir.iter());
            let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().expect("start the server process");
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let addr = line.trim().trim_start_matches("listening on ").to_owned();
            println!("server node runs in process {} at {addr}", child.id());
            client(&addr, Some(child), tls_dir.as_deref().map(|d| tls_in(d, "client"))).await;
            if let Some(d) = tls_dir {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}
