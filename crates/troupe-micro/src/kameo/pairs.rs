//! kameo: `chameneos` (a broker pairing requests) and `big` (every actor pinging random
//! others), the benchmarks where many actors message each other at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::kameo::actor::{ActorRef, Spawn};
use ::kameo::mailbox;
use ::kameo::message::{Context, Message};
use ::kameo::Actor;
use tokio::sync::oneshot;

use super::{Done, Sink, NAME};
use crate::bench::{check, Bench, Colour, Params, SplitMix, BIG_SEED};
use crate::util::{failed, wait};
use crate::Error;

#[derive(Actor)]
struct Mall {
    meetings_left: u64,
    waiting: Option<(ActorRef<Creature>, Colour)>,
    creatures: u64,
    faded: u64,
    meetings_sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(Actor)]
struct Creature {
    colour: Colour,
    meetings: u64,
    mall: ActorRef<Mall>,
}

struct MeetRequest {
    from: ActorRef<Creature>,
    colour: Colour,
}
struct Faded(u64);
struct Go;
struct MeetWith {
    other: ActorRef<Creature>,
    colour: Colour,
}
struct Change(Colour);
struct Exit;

impl Message<MeetRequest> for Mall {
    type Reply = ();
    async fn handle(&mut self, req: MeetRequest, _: &mut Context<Self, ()>) {
        if self.meetings_left == 0 {
            let _ = req.from.tell(Exit).await;
            return;
        }
        match self.waiting.take() {
            None => self.waiting = Some((req.from, req.colour)),
            Some((first, _)) => {
                self.meetings_left -= 1;
                let _ = first.tell(MeetWith { other: req.from, colour: req.colour }).await;
            }
        }
    }
}

impl Message<Faded> for Mall {
    type Reply = ();
    async fn handle(&mut self, Faded(m): Faded, ctx: &mut Context<Self, ()>) {
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

impl Creature {
    async fn request(&self, me: &ActorRef<Creature>) {
        let sent = self.mall.tell(MeetRequest { from: me.clone(), colour: self.colour }).await;
        assert!(sent.is_ok(), "mall stopped");
    }
}

impl Message<Go> for Creature {
    type Reply = ();
    async fn handle(&mut self, _: Go, ctx: &mut Context<Self, ()>) {
        self.request(ctx.actor_ref()).await;
    }
}

impl Message<MeetWith> for Creature {
    type Reply = ();
    async fn handle(&mut self, m: MeetWith, ctx: &mut Context<Self, ()>) {
        self.colour = self.colour.complement(m.colour);
        self.meetings += 1;
        let _ = m.other.tell(Change(self.colour)).await;
        self.request(ctx.actor_ref()).await;
    }
}

impl Message<Change> for Creature {
    type Reply = ();
    async fn handle(&mut self, Change(c): Change, ctx: &mut Context<Self, ()>) {
        self.colour = c;
        self.meetings += 1;
        self.request(ctx.actor_ref()).await;
    }
}

impl Message<Exit> for Creature {
    type Reply = ();
    async fn handle(&mut self, _: Exit, ctx: &mut Context<Self, ()>) {
        let _ = self.mall.tell(Faded(self.meetings)).await;
        ctx.stop();
    }
}

pub(super) async fn chameneos(p: &Params) -> Result<Duration, Error> {
    let (creatures, n) = (p.get("chameneos"), p.get("n"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let mall =
        Mall::spawn(Mall { meetings_left: n, waiting: None, creatures, faded: 0, meetings_sum: 0, done: Some(tx) });
    let all: Vec<ActorRef<Creature>> = (0..creatures as usize)
        .map(|i| Creature::spawn(Creature { colour: Colour::initial(i), meetings: 0, mall: mall.clone() }))
        .collect();
    for c in &all {
        c.tell(Go).await.map_err(|e| failed("kameo chameneos", e))?;
    }
    let sum = wait(rx, "kameo chameneos").await?;
    let elapsed = t0.elapsed();
    check(Bench::Chameneos, NAME, "sum of meetings (2 per meeting)", sum, 2 * n)?;
    Ok(elapsed)
}

#[derive(Actor)]
struct BigActor {
    id: usize,
    peers: Option<Arc<Vec<ActorRef<BigActor>>>>,
    rng: SplitMix,
    pings_left: u64,
    pongs: u64,
    sink: ActorRef<Sink>,
}

struct Peers(Arc<Vec<ActorRef<BigActor>>>);
struct Begin;
struct BigPing {
    from: usize,
}
struct BigPong;
struct Quit;

impl BigActor {
    async fn ping_someone(&mut self) {
        let Some(peers) = &self.peers else { return };
        let to = self.rng.other(self.id, peers.len());
        self.pings_left -= 1;
        let sent = peers[to].tell(BigPing { from: self.id }).await;
        assert!(sent.is_ok(), "big peer stopped");
    }
}

impl Message<Peers> for BigActor {
    type Reply = ();
    async fn handle(&mut self, Peers(p): Peers, _: &mut Context<Self, ()>) {
        self.peers = Some(p);
    }
}

impl Message<Begin> for BigActor {
    type Reply = ();
    async fn handle(&mut self, _: Begin, _: &mut Context<Self, ()>) {
        self.ping_someone().await;
    }
}

impl Message<BigPing> for BigActor {
    type Reply = ();
    async fn handle(&mut self, ping: BigPing, _: &mut Context<Self, ()>) {
        if let Some(peers) = &self.peers {
            let sent = peers[ping.from].tell(BigPong).await;
            assert!(sent.is_ok(), "big peer stopped");
        }
    }
}

impl Message<BigPong> for BigActor {
    type Reply = ();
    async fn handle(&mut self, _: BigPong, _: &mut Context<Self, ()>) {
        self.pongs += 1;
        if self.pings_left == 0 {
            let _ = self.sink.tell(Done(self.pongs)).await;
        } else {
            self.ping_someone().await;
        }
    }
}

impl Message<Quit> for BigActor {
    type Reply = ();
    async fn handle(&mut self, _: Quit, ctx: &mut Context<Self, ()>) {
        self.peers = None;
        ctx.stop();
    }
}

pub(super) async fn big(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.count("actors"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let sink = Sink::spawn(Sink::new(actors as u64, tx));
    let all: Arc<Vec<ActorRef<BigActor>>> = Arc::new(
        (0..actors)
            .map(|id| {
                let a = BigActor {
                    id,
                    peers: None,
                    rng: SplitMix::new(BIG_SEED + id as u64),
                    pings_left: n,
                    pongs: 0,
                    sink: sink.clone(),
                };
                BigActor::spawn_with_mailbox(a, mailbox::unbounded())
            })
            .collect(),
    );
    for a in all.iter() {
        a.tell(Peers(all.clone())).await.map_err(|e| failed("kameo big", e))?;
    }
    for a in all.iter() {
        a.tell(Begin).await.map_err(|e| failed("kameo big", e))?;
    }
    let pongs = wait(rx, "kameo big").await?;
    let elapsed = t0.elapsed();
    for a in all.iter() {
        let _ = a.tell(Quit).await;
    }
    for a in all.iter() {
        a.wait_for_shutdown().await;
    }
    check(Bench::Big, NAME, "pongs received", pongs, n * actors as u64)?;
    Ok(elapsed)
}
