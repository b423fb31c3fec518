//! ractor: `pingpong`, `count` and `threadring`, the benchmarks where one message is in flight
//! at a time (or one producer streams to one consumer).

use std::time::{Duration, Instant};

use ::ractor::{call, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;

use super::{sink, spawn, NAME};
use crate::bench::{check, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

struct Pinger;

enum PingMsg {
    Start,
    Pong,
}

struct PingState {
    pong: ActorRef<PongMsg>,
    left: u64,
    pongs: u64,
    done: Option<oneshot::Sender<u64>>,
}

struct Ponger;

enum PongMsg {
    Ping(ActorRef<PingMsg>),
    Seen(RpcReplyPort<u64>),
}

impl Actor for Pinger {
    type Msg = PingMsg;
    type State = PingState;
    type Arguments = PingState;

    async fn pre_start(&self, _: ActorRef<PingMsg>, st: PingState) -> Result<PingState, ActorProcessingErr> {
        Ok(st)
    }

    async fn handle(
        &self,
        myself: ActorRef<PingMsg>,
        msg: PingMsg,
        st: &mut PingState,
    ) -> Result<(), ActorProcessingErr> {
        if let PingMsg::Pong = msg {
            st.pongs += 1;
            if st.left == 0 {
                if let Some(tx) = st.done.take() {
                    let _ = tx.send(st.pongs);
                }
                myself.stop(None);
                return Ok(());
            }
        }
        st.left -= 1;
        st.pong.cast(PongMsg::Ping(myself))?;
        Ok(())
    }
}

impl Actor for Ponger {
    type Msg = PongMsg;
    type State = u64;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<PongMsg>, _: ()) -> Result<u64, ActorProcessingErr> {
        Ok(0)
    }

    async fn handle(&self, _: ActorRef<PongMsg>, msg: PongMsg, pings: &mut u64) -> Result<(), ActorProcessingErr> {
        match msg {
            PongMsg::Ping(from) => {
                *pings += 1;
                from.cast(PingMsg::Pong)?;
            }
            PongMsg::Seen(port) => {
                let _ = port.send(*pings);
            }
        }
        Ok(())
    }
}

pub(super) async fn pingpong(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (pong, pong_handle) = spawn(Ponger, ()).await?;
    let (tx, rx) = oneshot::channel();
    let st = PingState { pong: pong.clone(), left: n, pongs: 0, done: Some(tx) };
    let (ping, _) = spawn(Pinger, st).await?;
    ping.cast(PingMsg::Start).map_err(|e| failed("ractor pingpong", e))?;
    let pongs = wait(rx, "ractor pingpong").await?;
    let elapsed = t0.elapsed();
    let pings = call!(pong, PongMsg::Seen).map_err(|e| failed("ractor pingpong", e))?;
    pong.stop(None);
    let _ = pong_handle.await;
    check(Bench::PingPong, NAME, "pongs received", pongs, n)?;
    check(Bench::PingPong, NAME, "pings answered", pings, n)?;
    Ok(elapsed)
}

struct Counter;

enum CounterMsg {
    Increment,
    Total(RpcReplyPort<u64>),
}

impl Actor for Counter {
    type Msg = CounterMsg;
    type State = u64;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<CounterMsg>, _: ()) -> Result<u64, ActorProcessingErr> {
        Ok(0)
    }

    async fn handle(
        &self,
        _: ActorRef<CounterMsg>,
        msg: CounterMsg,
        total: &mut u64,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CounterMsg::Increment => *total += 1,
            CounterMsg::Total(port) => {
                let _ = port.send(*total);
            }
        }
        Ok(())
    }
}

pub(super) async fn count(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (counter, handle) = spawn(Counter, ()).await?;
    for _ in 0..n {
        counter.cast(CounterMsg::Increment).map_err(|e| failed("ractor count", e))?;
    }
    let total = call!(counter, CounterMsg::Total).map_err(|e| failed("ractor count", e))?;
    let elapsed = t0.elapsed();
    counter.stop(None);
    let _ = handle.await;
    check(Bench::Count, NAME, "total", total, n)?;
    Ok(elapsed)
}

struct RingNode;

enum RingMsg {
    SetNext(ActorRef<RingMsg>),
    /// Hops still to make, hops made so far.
    Token(u64, u64),
}

struct RingState {
    next: Option<ActorRef<RingMsg>>,
    sink: ActorRef<u64>,
}

impl Actor for RingNode {
    type Msg = RingMsg;
    type State = RingState;
    type Arguments = ActorRef<u64>;

    async fn pre_start(&self, _: ActorRef<RingMsg>, sink: ActorRef<u64>) -> Result<RingState, ActorProcessingErr> {
        Ok(RingState { next: None, sink })
    }

    async fn handle(&self, _: ActorRef<RingMsg>, msg: RingMsg, st: &mut RingState) -> Result<(), ActorProcessingErr> {
        match msg {
            RingMsg::SetNext(next) => st.next = Some(next),
            RingMsg::Token(0, hops) => st.sink.cast(hops)?,
            RingMsg::Token(left, hops) => {
                if let Some(next) = &st.next {
                    next.cast(RingMsg::Token(left - 1, hops + 1))?;
                }
            }
        }
        Ok(())
    }
}

pub(super) async fn threadring(p: &Params) -> Result<Duration, Error> {
    let (actors, n) = (p.count("actors"), p.get("n"));
    let t0 = Instant::now();
    let (sink, rx) = sink(1).await?;
    let mut ring = Vec::with_capacity(actors);
    for _ in 0..actors {
        ring.push(spawn(RingNode, sink.clone()).await?);
    }
    for (i, (node, _)) in ring.iter().enumerate() {
        let next = ring[(i + 1) % actors].0.clone();
        node.cast(RingMsg::SetNext(next)).map_err(|e| failed("ractor threadring", e))?;
    }
    ring[0].0.cast(RingMsg::Token(n, 0)).map_err(|e| failed("ractor threadring", e))?;
    let hops = wait(rx, "ractor threadring").await?;
    let elapsed = t0.elapsed();
    for (node, _) in &ring {
        node.stop(None);
    }
    for (_, handle) in ring {
        let _ = handle.await;
    }
    check(Bench::ThreadRing, NAME, "hops", hops, n)?;
    Ok(elapsed)
}
