//! `System` (`system.rs` rules 1-5): actors belong to the system they are spawned in, with its
//! own registry; `shutdown` stops them all (top-level ones in reverse start order) and waits;
//! dropping the system kills what is left; nothing outlives its runtime.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use troupe::{Actor, ActorRef, Ctx, ExitReason, ReplyTo, System};

const T: Duration = Duration::from_secs(10);

type Log = Arc<Mutex<Vec<String>>>;

/// Logs its stop; on `Spawn` spawns a linked child that traps exits; on `Lookup` looks a name
/// up with the free function; hangs in `stopped` when `hang`.
struct Node {
    name: String,
    log: Log,
    hang: bool,
}

enum Msg {
    SpawnChild(ReplyTo<ActorRef<Msg>>),
    Lookup(&'static str, ReplyTo<bool>),
    Trap,
}

impl Actor for Node {
    type Msg = Msg;
    async fn handle(&mut self, msg: Msg, ctx: &mut Ctx<Self>) {
        match msg {
            Msg::SpawnChild(r) => {
                let child = ctx.spawn_link(node(&format!("{}.child", self.name), &self.log));
                let _ = child.send(Msg::Trap);
                r.send(child);
            }
            Msg::Lookup(name, r) => r.send(troupe::whereis::<Msg>(name).is_ok()),
            Msg::Trap => ctx.trap_exit(true),
        }
    }
    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        if self.hang {
            std::future::pending::<()>().await;
        }
        self.log.lock().push(format!("{}:{reason}", self.name));
    }
}

fn node(name: &str, log: &Log) -> Node {
    Node { name: name.into(), log: log.clone(), hang: false }
}

#[tokio::test]
async fn systems_have_their_own_names_and_actors_see_their_systems() {
    let log = Log::default();
    let (a, b) = (System::new(), System::new());
    let in_a = a.spawn(node("a", &log));
    let in_b = b.spawn(node("b", &log));
    a.register("db", &in_a).unwrap();
    b.register("db", &in_b).unwrap();
    assert_eq!(a.whereis::<Msg>("db").unwrap().id(), in_a.id());
    assert_eq!(b.whereis::<Msg>("db").unwrap().id(), in_b.id());
    assert!(troupe::whereis::<Msg>("db").is_err(), "the process-wide registry has neither");
    // Inside an actor, the free functions use its system's registry.
    assert!(in_a.ask(|r| Msg::Lookup("db", r), T).await.unwrap());
    a.unregister("db");
    assert!(!in_a.ask(|r| Msg::Lookup("db", r), T).await.unwrap());
    assert!(in_b.ask(|r| Msg::Lookup("db", r), T).await.unwrap());
    // So does code run in the system.
    assert!(b.run(async { troupe::whereis::<Msg>("db").is_ok() }).await);
    a.shutdown().await;
    b.shutdown().await;
}

/// Two tests registering the same name, run in parallel by `cargo test`, each in its system.
#[tokio::test]
async fn parallel_tests_with_their_own_systems_share_no_names_1() {
    let sys = System::new();
    let me = sys.spawn(node("one", &Log::default()));
    sys.register("the-name", &me).unwrap();
    tokio::task::yield_now().await;
    assert_eq!(sys.whereis::<Msg>("the-name").unwrap().id(), me.id());
    sys.shutdown().await;
}

#[tokio::test]
async fn parallel_tests_with_their_own_systems_share_no_names_2() {
    let sys = System::new();
    let me = sys.spawn(node("two", &Log::default()));
    sys.register("the-name", &me).unwrap();
    tokio::task::yield_now().await;
    assert_eq!(sys.whereis::<Msg>("the-name").unwrap().id(), me.id());
    sys.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_everything_top_level_in_reverse_start_order_and_waits() {
    let log = Log::default();
    let sys = System::new();
    let first = sys.spawn(node("first", &log));
    let (lw, lw2) = (log.clone(), log.clone());
    let sup = sys
        .run(async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::worker("w1", move || node("sup.w1", &lw)))
                .child(ChildSpec::worker("w2", move || node("sup.w2", &lw2)));
            supervisor::start(spec).await.unwrap()
        })
        .await;
    let last = sys.spawn(node("last", &log));
    // A linked child that traps exits survives its parent's stop: the second phase, after every
    // top-level actor, stops it.
    let child = last.ask(Msg::SpawnChild, T).await.unwrap();
    sys.register("last", &last).unwrap();
    assert_eq!(sys.alive(), 6);

    sys.shutdown().await;
    assert_eq!(sys.alive(), 0);
    for a in [first.any(), sup.any(), last.any(), child.any()] {
        assert!(!a.is_alive(), "{a:?} is dead when shutdown returns");
    }
    assert_eq!(
        *log.lock(),
        vec!["last:shutdown", "sup.w2:shutdown", "sup.w1:shutdown", "first:shutdown", "last.child:shutdown"],
    );
    assert!(sys.whereis::<Msg>("last").is_err(), "names are forgotten");
}

#[tokio::test(start_paused = true)]
async fn an_actor_that_does_not_stop_is_killed_at_the_shutdown_timeout() {
    let log = Log::default();
    let sys = System::new().with_shutdown_timeout(Duration::from_secs(2));
    let stuck = sys.spawn(Node { name: "stuck".into(), log: log.clone(), hang: true });
    let start = tokio::time::Instant::now();
    sys.shutdown().await;
    assert_eq!(stuck.terminated().await, ExitReason::Killed);
    assert!(start.elapsed() >= Duration::from_secs(2));
}

#[tokio::test]
async fn an_actor_spawned_in_a_system_shutting_down_is_killed_at_once() {
    let sys = System::new();
    sys.shutdown().await;
    let late = sys.spawn(node("late", &Log::default()));
    assert_eq!(late.terminated().await, ExitReason::Killed);
}

#[tokio::test]
async fn dropping_a_system_kills_what_it_started() {
    let log = Log::default();
    let sys = System::new();
    let a = sys.spawn(node("a", &log));
    let child = a.ask(Msg::SpawnChild, T).await.unwrap();
    drop(sys);
    assert_eq!(a.terminated().await, ExitReason::Killed);
    assert_eq!(child.terminated().await, ExitReason::Killed);
    assert!(log.lock().is_empty(), "a kill runs no stopped hook");
}

#[test]
fn nothing_outlives_its_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let log = Log::default();
    let sys = System::new();
    let (busy, idle) = rt.block_on(async {
        let busy = sys.spawn(node("busy", &log));
        let idle = sys.spawn(node("idle", &log));
        // `busy` has a task (it just handled a message); `idle` never had one.
        busy.ask(|r| Msg::Lookup("x", r), T).await.unwrap();
        (busy, idle)
    });
    drop(rt);
    assert!(!busy.is_alive(), "an actor with a task dies with its runtime");
    drop(sys);
    assert!(!idle.is_alive(), "an idle one dies with its system");
}
