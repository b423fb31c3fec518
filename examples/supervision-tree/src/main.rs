//! A small supervision tree recovering from crashes: a root supervisor (one_for_one) over a
//! counter cache and a worker pool (a rest_for_one supervisor of a dispatcher and two workers).
//! The program crashes and kills things and shows the tree healing itself.
//!
//! Run with `cargo run -p example-supervision-tree`.

use std::time::Duration;

use troupe::supervisor::{self, ChildRef, ChildSpec, Restart, Strategy, SupervisorSpec};
use troupe::{Actor, Ctx, ExitReason, ReplyTo};

/// Work a worker can be given.
enum Job {
    Square(u64, ReplyTo<u64>),
    Crash,
}

struct Worker {
    name: &'static str,
}

impl Actor for Worker {
    type Msg = Job;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), troupe::ActorError> {
        println!("  {} started as {}", self.name, ctx.id());
        Ok(())
    }

    async fn handle(&mut self, job: Job, _: &mut Ctx<Self>) {
        match job {
            Job::Square(n, reply) => reply.send(n * n),
            Job::Crash => panic!("{} was asked to crash", self.name),
        }
    }
}

fn worker(name: &'static str) -> (ChildSpec, ChildRef<Job>) {
    let spec = ChildSpec::worker(name, move || Worker { name }).restart(Restart::Permanent);
    let handle = spec.handle();
    (spec.into(), handle)
}

/// The child's live incarnation, waiting (up to 5 s) while its supervisor restarts it.
async fn current(handle: &ChildRef<Job>) -> troupe::ActorRef<Job> {
    handle.current(Duration::from_secs(5)).await.expect("the child was not restarted within 5 s")
}

#[tokio::main]
async fn main() {
    let (cache, cache_h) = worker("cache");
    let (dispatcher, dispatcher_h) = worker("dispatcher");
    let (w1, w1_h) = worker("worker-1");
    let (w2, w2_h) = worker("worker-2");
    let pool = SupervisorSpec::new(Strategy::RestForOne)
        .intensity(10, Duration::from_secs(5))
        .child(dispatcher)
        .child(w1)
        .child(w2);
    let root = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(5))
        .child(cache)
        .child(ChildSpec::supervisor("pool", pool));

    println!("starting the tree:");
    let sup = supervisor::start(root).await.expect("the tree starts");
    let t = Duration::from_secs(1);

    println!("worker-2 panics (rest_for_one: worker-2 is the last child, so only it restarts):");
    let old = current(&w2_h).await;
    old.send(Job::Crash).ok();
    println!("  worker-2 exited: {}", old.terminated().await);
    println!("  square(7) = {}", current(&w2_h).await.ask(|r| Job::Square(7, r), t).await.unwrap());

    println!("the dispatcher is killed (rest_for_one: the workers after it restart too):");
    let old = current(&dispatcher_h).await;
    old.kill();
    println!("  dispatcher exited: {}", old.terminated().await);
    println!("  square(9) = {}", current(&w1_h).await.ask(|r| Job::Square(9, r), t).await.unwrap());

    println!("the cache crashes (the pool is untouched):");
    let old = current(&cache_h).await;
    old.send(Job::Crash).ok();
    assert!(matches!(old.terminated().await, ExitReason::Panicked(_)));
    current(&cache_h).await;

    println!("shutting the tree down (children stop in reverse order):");
    println!("  root exited: {}", sup.stop().await);
}
