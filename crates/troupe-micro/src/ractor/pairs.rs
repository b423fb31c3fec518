//! ractor: `chameneos` (a broker pairing requests) and `big` (every actor pinging random
//! others), the benchmarks where many actors message each other at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use super::{sink, spawn, NAME};
use crate::bench::{check, Bench, Colour, Params, SplitMix, BIG_SEED};
use crate::util::{failed, wait};
use crate::Error;

struct Mall;

enum MallMsg {
    Meet(ActorRef<CreatureMsg>, Colour),
    Faded(u64),
}

struct MallState {
    meetings_left: u64,
    waiting: Option<ActorRef<CreatureMsg>>,
    creatures: u64,
    faded: u64,
    meetings_sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Mall {
    type Msg = MallMsg;
    type State = MallState;
    type Arguments = MallState;

    async fn pre_start(&self, _: ActorRef<MallMsg>, st: MallState) -> Result<MallState, ActorProcessingErr> {
        Ok(st)
    }

    async fn handle(
        &self,
        myself: ActorRef<MallMsg>,
        msg: MallMsg,
        st: &mut MallState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            MallMsg::Meet(from, _) if st.meetings_left == 0 => from.cast(CreatureMsg::Exit)?,
            MallMsg::Meet(from, colour) => match st.waiting.take() {
                None => st.waiting = Some(from),
                Some(first) => {
                    st.meetings_left -= 1;
                    first.cast(CreatureMsg::MeetWith(from, colour))?;
                }
            },
            MallMsg::Faded(m) => {
                st.faded += 1;
                st.meetings_sum += m;
                if st.faded == st.creatures {
                    if let Some(tx) = st.done.take() {
                        let _ = tx.send(st.meetings_sum);
                    }
                    myself.stop(None);
                }
            }
        }
        Ok(())
    }
}

struct Creature;

enum CreatureMsg {
    Go,
    MeetWith(ActorRef<CreatureMsg>, Colour),
    Change(Colour),
    Exit,
}

struct CreatureState {
    colour: Colour,
    meetings: u64,
    mall: ActorRef<MallMsg>,
}

impl Actor for Creature {
    type Msg = CreatureMsg;
    type State = CreatureState;
    type Arguments = CreatureState;

    async fn pre_start(
        &self,
        _: ActorRef<CreatureMsg>,
        st: CreatureState,
    ) -> Result<CreatureState, ActorProcessingErr> {
        Ok(st)
    }

    async fn handle(
        &self,
        myself: ActorRef<CreatureMsg>,
        msg: CreatureMsg,
        st: &mut CreatureState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CreatureMsg::Go => {}
            CreatureMsg::MeetWith(other, colour) => {
                st.colour = st.colour.complement(colour);
                st.meetings += 1;
                other.cast(CreatureMsg::Change(st.colour))?;
            }
            CreatureMsg::Change(c) => {
                st.colour = c;
                st.meetings += 1;
            }
            CreatureMsg::Exit => {
                st.mall.cast(MallMsg::Faded(st.meetings))?;
                myself.stop(None);
                return Ok(());
            }
        }
        st.mall.cast(MallMsg::Meet(myself, st.colour))?;
        Ok(())
    }
}

pub(super) async fn chameneos(p: &Params) -> Result<Duration, Error> {
    let (creatures, n) = (p.get("chameneos"), p.get("n"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let st = MallState { meetings_left: n, waiting: None, creatures, faded: 0, meetings_sum: 0, done: Some(tx) };
    let (mall, _) = spawn(Mall, st).await?;
    let mut all = Vec::with_capacity(creatures as usize);
    for i in 0..creatures as usize {
        let st = CreatureState { colour: Colour::initial(i), meetings: 0, mall: mall.clone() };
        all.push(spawn(Creature, st).await?.0);
    }
    for c in &all {
        c.cast(CreatureMsg::Go).map_err(|e| failed("ractor chameneos", e))?;
    }
    let sum = wait(rx, "ractor chameneos").await?;
    let elapsed = t0.elapsed();
    check(Bench::Chameneos, NAME, "sum of meetings (2 per meeting)", sum, 2 * n)?;
    Ok(elapsed)
}

struct BigActor;

enum BigMsg {
    Peers(Arc<Vec<ActorRef<BigMsg>>>),
    Begin,
    Ping(usize),
    Pong,
}

struct BigState {
    id: usize,
    peers: Arc<Vec<ActorRef<BigMsg>>>,
    rng: SplitMix,
    pings_left: u64,
    pongs: u64,
    sink: ActorRef<u64>,
}

impl BigState {
    fn ping_someone(&mut self) -> Result<(), ActorProcessingErr> {
        let to = self.rng.other(self.id, self.peers.len());
        self.pings_left -= 1;
        self.peers[to].cast(BigMsg::Ping(self.id))?;
        Ok(())
    }
}

impl Actor for BigActor {
    type Msg = BigMsg;
    type State = BigState;
    type Arguments = (usize, u64, ActorRef<u64>);

    async fn pre_start(
        &self,
        _: ActorRef<BigMsg>,
        (id, n, sink): Self::Arguments,
    ) -> Result<BigState, ActorProcessingErr> {
        let rng = SplitMix::new(BIG_SEED + id as u64);
        Ok(BigState { id, peers: Arc::new(Vec::new()), rng, pings_left: n, pongs: 0, sink })
    }

    async fn handle(&self, _: ActorRef<BigMsg>, msg: BigMsg, st: &mut BigState) -> Result<(), ActorProcessingErr> {
        match msg {
            BigMsg::Peers(p) => st.peers = p,
            BigMsg::Begin => st.ping_someone()?,
            BigMsg::Ping(from) => st.peers[from].cast(BigMsg::Pong)?,
            BigMsg::Pong => {
                st.pongs += 1;
                if st.pings_left == 0 {
                    st.sink.cast(st.pongs)?;
                } else {
                    st.ping_someone()?;
                }
            }
        }
        Ok(())
    }
}

pub(super) async fn big(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.count("actors"));
    let t0 = Instant::now();
    let (sink, rx) = sink(actors as u64).await?;
    let mut refs = Vec::with_capacity(actors);
    let mut handles = Vec::with_capacity(actors);
    for id in 0..actors {
        let (r, h) = spawn(BigActor, (id, n, sink.clone())).await?;
        refs.push(r);
        handles.push(h);
    }
    let all = Arc::new(refs);
    for a in all.iter() {
        a.cast(BigMsg::Peers(all.clone())).map_err(|e| failed("ractor big", e))?;
    }
    for a in all.iter() {
        a.cast(BigMsg::Begin).map_err(|e| failed("ractor big", e))?;
    }
    let pongs = wait(rx, "ractor big").await?;
    let elapsed = t0.elapsed();
    for a in all.iter() {
        a.stop(None);
    }
    for h in handles {
        let _ = h.await;
    }
    check(Bench::Big, NAME, "pongs received", pongs, n * actors as u64)?;
    Ok(elapsed)
}
