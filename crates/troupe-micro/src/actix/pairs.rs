//! actix: `chameneos` (a broker pairing requests) and `big` (every actor pinging random
//! others), the benchmarks where many actors message each other at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::actix::prelude::*;
use tokio::sync::oneshot;

use super::{Done, Sink, Stop, NAME};
use crate::bench::{check, Bench, Colour, Params, SplitMix, BIG_SEED};
use crate::util::wait;
use crate::Error;

struct Mall {
    meetings_left: u64,
    waiting: Option<Addr<Creature>>,
    creatures: u64,
    faded: u64,
    meetings_sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Mall {
    type Context = Context<Self>;
}

struct Creature {
    colour: Colour,
    meetings: u64,
    mall: Addr<Mall>,
}

impl Actor for Creature {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct MeetRequest(Addr<Creature>, Colour);

#[derive(Message)]
#[rtype(result = "()")]
struct Faded(u64);

#[derive(Message)]
#[rtype(result = "()")]
struct Go;

#[derive(Message)]
#[rtype(result = "()")]
struct MeetWith(Addr<Creature>, Colour);

#[derive(Message)]
#[rtype(result = "()")]
struct Change(Colour);

#[derive(Message)]
#[rtype(result = "()")]
struct Exit;

impl Handler<MeetRequest> for Mall {
    type Result = ();
    fn handle(&mut self, MeetRequest(from, colour): MeetRequest, _: &mut Context<Self>) {
        if self.meetings_left == 0 {
            from.do_send(Exit);
            return;
        }
        match self.waiting.take() {
            None => self.waiting = Some(from),
            Some(first) => {
                self.meetings_left -= 1;
                first.do_send(MeetWith(from, colour));
            }
        }
    }
}

impl Handler<Faded> for Mall {
    type Result = ();
    fn handle(&mut self, Faded(m): Faded, ctx: &mut Context<Self>) {
        self.faded += 1;
        self.meetings_sum += m;
        if self.faded == self.creatures {
            if let Some(tx) = self.done.take() {
                let _ = tx.send(self.meetings_sum);
            }
            ctx.stop();
        }
    }
}

impl Handler<Go> for Creature {
    type Result = ();
    fn handle(&mut self, _: Go, ctx: &mut Context<Self>) {
        self.mall.do_send(MeetRequest(ctx.address(), self.colour));
    }
}

impl Handler<MeetWith> for Creature {
    type Result = ();
    fn handle(&mut self, MeetWith(other, colour): MeetWith, ctx: &mut Context<Self>) {
        self.colour = self.colour.complement(colour);
        self.meetings += 1;
        other.do_send(Change(self.colour));
        self.mall.do_send(MeetRequest(ctx.address(), self.colour));
    }
}

impl Handler<Change> for Creature {
    type Result = ();
    fn handle(&mut self, Change(c): Change, ctx: &mut Context<Self>) {
        self.colour = c;
        self.meetings += 1;
        self.mall.do_send(MeetRequest(ctx.address(), self.colour));
    }
}

impl Handler<Exit> for Creature {
    type Result = ();
    fn handle(&mut self, _: Exit, ctx: &mut Context<Self>) {
        self.mall.do_send(Faded(self.meetings));
        ctx.stop();
    }
}

pub(super) async fn chameneos(p: &Params) -> Result<Duration, Error> {
    let (creatures, n) = (p.get("chameneos"), p.get("n"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let mall = Mall { meetings_left: n, waiting: None, creatures, faded: 0, meetings_sum: 0, done: Some(tx) }.start();
    for i in 0..creatures as usize {
        Creature { colour: Colour::initial(i), meetings: 0, mall: mall.clone() }.start().do_send(Go);
    }
    drop(mall);
    let sum = wait(rx, "actix chameneos").await?;
    let elapsed = t0.elapsed();
    check(Bench::Chameneos, NAME, "sum of meetings (2 per meeting)", sum, 2 * n)?;
    Ok(elapsed)
}

struct BigActor {
    id: usize,
    peers: Option<Arc<Vec<Addr<BigActor>>>>,
    rng: SplitMix,
    pings_left: u64,
    pongs: u64,
    sink: Addr<Sink>,
}

impl Actor for BigActor {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Peers(Arc<Vec<Addr<BigActor>>>);

#[derive(Message)]
#[rtype(result = "()")]
struct Begin;

#[derive(Message)]
#[rtype(result = "()")]
struct BigPing(usize);

#[derive(Message)]
#[rtype(result = "()")]
struct BigPong;

impl BigActor {
    fn ping_someone(&mut self) {
        let Some(peers) = &self.peers else { return };
        let to = self.rng.other(self.id, peers.len());
        self.pings_left -= 1;
        peers[to].do_send(BigPing(self.id));
    }
}

impl Handler<Peers> for BigActor {
    type Result = ();
    fn handle(&mut self, Peers(p): Peers, _: &mut Context<Self>) {
        self.peers = Some(p);
    }
}

impl Handler<Begin> for BigActor {
    type Result = ();
    fn handle(&mut self, _: Begin, _: &mut Context<Self>) {
        self.ping_someone();
    }
}

impl Handler<BigPing> for BigActor {
    type Result = ();
    fn handle(&mut self, BigPing(from): BigPing, _: &mut Context<Self>) {
        if let Some(peers) = &self.peers {
            peers[from].do_send(BigPong);
        }
    }
}

impl Handler<BigPong> for BigActor {
    type Result = ();
    fn handle(&mut self, _: BigPong, _: &mut Context<Self>) {
        self.pongs += 1;
        if self.pings_left == 0 {
            self.sink.do_send(Done(self.pongs));
        } else {
            self.ping_someone();
        }
    }
}

impl Handler<Stop> for BigActor {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        self.peers = None;
        ctx.stop();
    }
}

pub(super) async fn big(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.count("actors"));
    let t0 = Instant::now();
    let (sink, rx) = Sink::start_new(actors as u64);
    let all: Arc<Vec<Addr<BigActor>>> = Arc::new(
        (0..actors)
            .map(|id| {
                BigActor {
                    id,
                    peers: None,
                    rng: SplitMix::new(BIG_SEED + id as u64),
                    pings_left: n,
                    pongs: 0,
                    sink: sink.clone(),
                }
                .start()
            })
            .collect(),
    );
    for a in all.iter() {
        a.do_send(Peers(all.clone()));
    }
    for a in all.iter() {
        a.do_send(Begin);
    }
    let pongs = wait(rx, "actix big").await?;
    let elapsed = t0.elapsed();
    for a in all.iter() {
        a.do_send(Stop);
    }
    check(Bench::Big, NAME, "pongs received", pongs, n * actors as u64)?;
    Ok(elapsed)
}
