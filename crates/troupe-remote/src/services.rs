//! Built-in services a node can host by name (`services = [...]` in its configuration): the
//! actors the multi-process tests, the benchmarks and the two-node example talk to. Each is
//! exported under its name; `global:NAME` also registers an echo under a global name.
//!
//! - `echo` ([`Echo`]): answers every [`Echo`] with its payload.
//! - `counter` ([`Counter`]): counts `Add`s, answers `Get` (checks exactly-once delivery).
//! - `pong` ([`Pong`]): after `Hello(ref)`, answers every `Ping(n)` with `Pong(n)` to that ref.
//! - `ack` ([`Put`]): acknowledges every payload (the contention benchmark's receiver).

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorRef, Ctx, ReplyTo};

use crate::error::{Error, ErrorKind};
use crate::{Blob, Node, RemoteMessage};

/// Ask the echo service: the answer is the payload.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "troupe.svc.echo")]
pub struct Echo(pub Blob, pub ReplyTo<Blob>);

struct EchoActor;

impl Actor for EchoActor {
    type Msg = Echo;
    async fn handle(&mut self, Echo(b, r): Echo, _: &mut Ctx<Self>) {
        r.send(b);
    }
}

/// The counter service's messages.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "troupe.svc.counter")]
pub enum Counter {
    /// Adds to the count.
    Add(u64),
    /// Answers the count.
    Get(ReplyTo<u64>),
}

struct CounterActor(u64);

impl Actor for CounterActor {
    type Msg = Counter;
    async fn handle(&mut self, m: Counter, _: &mut Ctx<Self>) {
        match m {
            Counter::Add(n) => self.0 += n,
            Counter::Get(r) => r.send(self.0),
        }
    }
}

/// The pong service's messages.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "troupe.svc.pong")]
pub enum Pong {
    /// From now on answer to this ref.
    Hello(ActorRef<PongReply>),
    /// Answer `PongReply(n)`.
    Ping(u64),
}

/// What the pong service answers.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, RemoteMessage)]
#[remote(tag = "troupe.svc.pong-reply")]
pub struct PongReply(pub u64);

struct PongActor(Option<ActorRef<PongReply>>);

impl Actor for PongActor {
    type Msg = Pong;
    async fn handle(&mut self, m: Pong, _: &mut Ctx<Self>) {
        match m {
            Pong::Hello(r) => self.0 = Some(r),
            Pong::Ping(n) => {
                if let Some(r) = &self.0 {
                    let _ = r.send(PongReply(n));
                }
            }
        }
    }
}

/// The ack service: store nothing, answer `()`.
#[derive(Serialize, Deserialize, RemoteMessage)]
#[remote(tag = "troupe.svc.put")]
pub struct Put(pub Blob, pub ReplyTo<()>);

struct AckActor;

impl Actor for AckActor {
    type Msg = Put;
    async fn handle(&mut self, Put(_, r): Put, _: &mut Ctx<Self>) {
        r.send(());
    }
}

/// Starts the named services on `node` (must run inside its tokio runtime).
pub fn start(node: &Node, names: &[String]) -> Result<(), Error> {
    for name in names {
        match name.as_str() {
            "echo" => node.export("echo", &troupe::spawn(EchoActor))?,
            "counter" => node.export("counter", &troupe::spawn(CounterActor(0)))?,
            "pong" => node.export("pong", &troupe::spawn(PongActor(None)))?,
            "ack" => node.export("ack", &troupe::spawn(AckActor))?,
            g if g.starts_with("global:") => node.register_global(&g["global:".len()..], &troupe::spawn(EchoActor))?,
            other => {
                return Err(ErrorKind::Config(format!(
                    "unknown service {other:?}; known: echo, counter, pong, ack, global:NAME"
                ))
                .into())
            }
        }
    }
    Ok(())
}
