//! Worker pools (`pool.rs` rules 1-4): round-robin, least-loaded and consistent-hash routing
//! over supervised workers, routing on to a restarted worker's new incarnation.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::T;
use tokio::sync::{oneshot, Notify};
use troupe::pool::{self, Pool, PoolSpec, Routing};
use troupe::{Actor, Ctx, ExitReason, ReplyTo};

enum Msg {
    /// Answers with the worker's index.
    Who(ReplyTo<usize>),
    /// Answers with the worker's index; routed by `key` under consistent hashing.
    Keyed(u64, ReplyTo<usize>),
    /// Signals `entered`, then waits for `release`.
    Hold(oneshot::Sender<()>, Arc<Notify>),
    Nothing,
    Crash,
}

struct Worker(usize);

impl Actor for Worker {
    type Msg = Msg;
    async fn handle(&mut self, msg: Msg, _: &mut Ctx<Self>) {
        match msg {
            Msg::Who(r) | Msg::Keyed(_, r) => r.send(self.0),
            Msg::Hold(entered, release) => {
                let _ = entered.send(());
                release.notified().await;
            }
            Msg::Nothing => {}
            Msg::Crash => panic!("worker {} asked to crash", self.0),
        }
    }
}

async fn pool_of(n: usize, routing: Routing<Msg>) -> Pool<Msg> {
    pool::start(PoolSpec::new(n, Worker).routing(routing).intensity(10, Duration::from_secs(5))).await.unwrap()
}

#[tokio::test]
async fn round_robin_takes_the_workers_in_turn() {
    let p = pool_of(4, Routing::RoundRobin).await;
    let mut counts = [0; 4];
    for _ in 0..40 {
        counts[p.ask(Msg::Who, T).await.unwrap()] += 1;
    }
    assert_eq!(counts, [10; 4]);
    assert_eq!(p.stop().await, ExitReason::Shutdown);
    assert!(p.workers().iter().all(Option::is_none), "workers stop with the pool");
}

#[tokio::test]
async fn least_loaded_avoids_a_worker_with_a_backlog() {
    let p = pool_of(3, Routing::LeastLoaded).await;
    let busy = p.workers()[0].clone().unwrap();
    let (entered, inside) = oneshot::channel();
    let release = Arc::new(Notify::new());
    busy.send(Msg::Hold(entered, release.clone())).unwrap();
    inside.await.unwrap();
    for _ in 0..3 {
        busy.send(Msg::Nothing).unwrap();
    }
    assert_eq!(busy.mailbox_len(), 3);
    for _ in 0..12 {
        assert_ne!(p.ask(Msg::Who, T).await.unwrap(), 0, "the backlogged worker is skipped");
    }
    release.notify_one();
    p.stop().await;
}

#[tokio::test]
async fn consistent_hash_keeps_a_key_on_one_worker_across_its_restart() {
    let p = pool_of(4, Routing::consistent_hash(|m: &Msg| if let Msg::Keyed(k, _) = m { *k } else { 0 })).await;
    let mut owners = Vec::new();
    for key in 0..32u64 {
        let owner = p.ask(|r| Msg::Keyed(key, r), T).await.unwrap();
        for _ in 0..3 {
            assert_eq!(p.ask(|r| Msg::Keyed(key, r), T).await.unwrap(), owner, "key {key} stays put");
        }
        owners.push(owner);
    }
    let used: std::collections::BTreeSet<_> = owners.iter().copied().collect();
    assert!(used.len() >= 3, "32 keys spread over the workers: {owners:?}");

    // Kill the owner of key 5: the key waits for that worker's next incarnation.
    let owner = owners[5];
    let before = p.worker(owner).unwrap().current(T).await.unwrap();
    before.kill();
    before.terminated().await;
    assert_eq!(p.ask(|r| Msg::Keyed(5, r), T).await.unwrap(), owner);
    assert_ne!(p.worker(owner).unwrap().current(T).await.unwrap().id(), before.id());
    p.stop().await;
}

#[tokio::test]
async fn a_crashed_worker_is_restarted_and_routed_to_again() {
    let p = pool_of(2, Routing::RoundRobin).await;
    let first = p.worker(1).unwrap().current(T).await.unwrap();
    first.send(Msg::Crash).unwrap();
    assert!(matches!(first.terminated().await, ExitReason::Panicked(_)));
    let second = p.worker(1).unwrap().current_after(first.id(), T).await.unwrap();
    let mut seen = [0; 2];
    for _ in 0..10 {
        seen[p.ask(Msg::Who, T).await.unwrap()] += 1;
    }
    assert_eq!(seen, [5, 5], "both workers serve again");
    assert_eq!(p.workers()[1].as_ref().unwrap().id(), second.id());
    p.stop().await;
}

#[tokio::test]
async fn a_pool_is_usable_as_an_actor_ref_and_broadcasts() {
    let p = pool_of(3, Routing::RoundRobin).await;
    let r = p.actor_ref();
    assert_eq!(r.id(), p.supervisor().any().id());
    let mut got: Vec<usize> = Vec::new();
    for _ in 0..3 {
        got.push(r.ask(Msg::Who, T).await.unwrap());
    }
    got.sort();
    assert_eq!(got, vec![0, 1, 2]);
    p.stop().await;
    assert!(r.send(Msg::Nothing).is_err());
}

#[derive(Clone)]
struct Bump;

struct Counter(Arc<AtomicUsize>);

impl Actor for Counter {
    type Msg = Bump;
    async fn handle(&mut self, _: Bump, _: &mut Ctx<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn broadcast_reaches_every_worker() {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let p = pool::start(PoolSpec::new(3, move |_| Counter(h.clone()))).await.unwrap();
    assert_eq!(p.broadcast(Bump), 3);
    common::wait_until("three hits", T, || hits.load(Ordering::SeqCst) == 3).await;
    p.stop().await;
}

#[tokio::test]
async fn an_empty_pool_is_refused() {
    let err = pool::start(PoolSpec::new(0, Worker)).await.unwrap_err();
    assert!(err.to_string().contains("pool.size"), "{err}");
}
