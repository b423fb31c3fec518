//! Troupe: `chameneos` (a broker pairing requests) and `big` (every actor pinging random
//! others), the benchmarks where many actors message each other at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx, ExitReason};

use super::{Sink, NAME};
use crate::bench::{check, Bench, Colour, Params, SplitMix, BIG_SEED};
use crate::util::{failed, wait};
use crate::Error;

struct Mall {
    meetings_left: u64,
    waiting: Option<ActorRef<CreatureMsg>>,
    creatures: u64,
    faded: u64,
    meetings_sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

enum MallMsg {
    Meet(ActorRef<CreatureMsg>, Colour),
    Faded(u64),
}

impl Actor for Mall {
    type Msg = MallMsg;

    async fn handle(&mut self, msg: MallMsg, ctx: &mut Ctx<Self>) {
        match msg {
            MallMsg::Meet(from, _) if self.meetings_left == 0 => {
                let _ = from.send(CreatureMsg::Exit);
            }
            MallMsg::Meet(from, colour) => match self.waiting.take() {
                None => self.waiting = Some(from),
                Some(first) => {
                    self.meetings_left -= 1;
                    let _ = first.send(CreatureMsg::MeetWith(from, colour));
                }
            },
            MallMsg::Faded(m) => {
                self.faded += 1;
                self.meetings_sum += m;
                if self.faded == self.creatures {
                    if let Some(tx) = self.done.take() {
                        let _ = tx.send(self.meetings_sum);
                    }
                    ctx.stop(ExitReason::Normal);
                }
            }
        }
    }
}

struct Creature {
    colour: Colour,
    meetings: u64,
    mall: ActorRef<MallMsg>,
}

enum CreatureMsg {
    Go,
    MeetWith(ActorRef<CreatureMsg>, Colour),
    Change(Colour),
    Exit,
}

impl Actor for Creature {
    type Msg = CreatureMsg;

    async fn handle(&mut self, msg: CreatureMsg, ctx: &mut Ctx<Self>) {
        match msg {
            CreatureMsg::Go => {}
            CreatureMsg::MeetWith(other, colour) => {
                self.colour = self.colour.complement(colour);
                self.meetings += 1;
                let _ = other.send(CreatureMsg::Change(self.colour));
            }
            CreatureMsg::Change(c) => {
                self.colour = c;
                self.meetings += 1;
            }
            CreatureMsg::Exit => {
                let _ = self.mall.send(MallMsg::Faded(self.meetings));
                ctx.stop(ExitReason::Normal);
                return;
            }
        }
        self.mall.send(MallMsg::Meet(ctx.myself(), self.colour)).expect("mall stopped");
    }
}

pub(super) async fn chameneos(p: &Params) -> Result<Duration, Error> {
    let (creatures, n) = (p.get("chameneos"), p.get("n"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let mall =
        troupe::spawn(Mall { meetings_left: n, waiting: None, creatures, faded: 0, meetings_sum: 0, done: Some(tx) });
    let all: Vec<ActorRef<CreatureMsg>> = (0..creatures as usize)
        .map(|i| troupe::spawn(Creature { colour: Colour::initial(i), meetings: 0, mall: mall.clone() }))
        .collect();
    for c in &all {
        c.send(CreatureMsg::Go).map_err(|e| failed("troupe chameneos", e))?;
    }
    let sum = wait(rx, "troupe chameneos").await?;
    let elapsed = t0.elapsed();
    check(Bench::Chameneos, NAME, "sum of meetings (2 per meeting)", sum, 2 * n)?;
    Ok(elapsed)
}

struct BigActor {
    id: usize,
    peers: Arc<Vec<ActorRef<BigMsg>>>,
    rng: SplitMix,
    pings_left: u64,
    pongs: u64,
    sink: ActorRef<u64>,
}

enum BigMsg {
    Peers(Arc<Vec<ActorRef<BigMsg>>>),
    Begin,
    Ping(usize),
    Pong,
}

impl BigActor {
    fn ping_someone(&mut self) {
        let to = self.rng.other(self.id, self.peers.len());
        self.pings_left -= 1;
        self.peers[to].send(BigMsg::Ping(self.id)).expect("big peer stopped");
    }
}

impl Actor for BigActor {
    type Msg = BigMsg;

    async fn handle(&mut self, msg: BigMsg, _: &mut Ctx<Self>) {
        match msg {
            BigMsg::Peers(p) => self.peers = p,
            BigMsg::Begin => self.ping_someone(),
            BigMsg::Ping(from) => self.peers[from].send(BigMsg::Pong).expect("big peer stopped"),
            BigMsg::Pong => {
                self.pongs += 1;
                if self.pings_left == 0 {
                    let _ = self.sink.send(self.pongs);
                } else {
                    self.ping_someone();
                }
            }
        }
    }

    async fn stopped(&mut self, _: &ExitReason, _: &mut Ctx<Self>) {
        self.peers = Arc::new(Vec::new());
    }
}

pub(super) async fn big(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.count("actors"));
    let t0 = Instant::now();
    let (sink, rx) = Sink::spawn(actors as u64);
    let all: Arc<Vec<ActorRef<BigMsg>>> = Arc::new(
        (0..actors)
            .map(|id| {
                troupe::spawn(BigActor {
                    id,
                    peers: Arc::new(Vec::new()),
                    rng: SplitMix::new(BIG_SEED + id as u64),
                    pings_left: n,
                    pongs: 0,
                    sink: sink.clone(),
                })
            })
            .collect(),
    );
    for a in all.iter() {
        a.send(BigMsg::Peers(all.clone())).map_err(|e| failed("troupe big", e))?;
    }
    for a in all.iter() {
        a.send(BigMsg::Begin).map_err(|e| failed("troupe big", e))?;
    }
    let pongs = wait(rx, "troupe big").await?;
    let elapsed = t0.elapsed();
    for a in all.iter() {
        a.stop();
    }
    for a in all.iter() {
        a.terminated().await;
    }
    check(Bench::Big, NAME, "pongs received", pongs, n * actors as u64)?;
    Ok(elapsed)
}
