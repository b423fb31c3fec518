//! A death with many monitors (`cell.rs` rule 13): what its links woke runs before its
//! monitors are told, `terminated()` still answers only after every `Down` (rule 7), a death
//! whose runtime is gone still signals every monitor, and so does a death outside any runtime
//! while the actor's own runtime is not being driven.

use std::time::Duration;

use troupe::{Actor, ActorError, ActorRef, AnyRef, Ctx, Down, ExitReason, ExitSignal, ReplyTo};

/// More than `cell.rs`'s `DOWN_CHUNK` (1,024), so the death takes rule 13's path.
const MONITORS: usize = 5_000;
const T: Duration = Duration::from_secs(30);

/// Monitors a target many times and counts the `Down`s; remembers how many it had seen when
/// it was marked.
#[derive(Default)]
struct Watcher {
    downs: usize,
    at_mark: Option<usize>,
}

enum WMsg {
    Monitor(AnyRef, usize, ReplyTo<()>),
    Mark,
    /// The `Down`s seen, and how many had been seen at the mark.
    Report(ReplyTo<(usize, Option<usize>)>),
}

impl Actor for Watcher {
    type Msg = WMsg;
    async fn handle(&mut self, m: WMsg, ctx: &mut Ctx<Self>) {
        match m {
            WMsg::Monitor(target, n, r) => {
                for _ in 0..n {
                    ctx.monitor(&target);
                }
                r.send(());
            }
            WMsg::Mark => self.at_mark = Some(self.downs),
            WMsg::Report(r) => r.send((self.downs, self.at_mark)),
        }
    }
    async fn on_down(&mut self, _: Down, _: &mut Ctx<Self>) {
        self.downs += 1;
    }
}

/// Trapping exits, linked to the victim: marks the watcher when the victim's exit signal
/// arrives, as a supervisor would restart it.
struct Linked {
    watcher: ActorRef<WMsg>,
}

enum LMsg {
    Link(AnyRef, ReplyTo<()>),
}

impl Actor for Linked {
    type Msg = LMsg;
    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        ctx.trap_exit(true);
        Ok(())
    }
    async fn handle(&mut self, m: LMsg, ctx: &mut Ctx<Self>) {
        let LMsg::Link(target, r) = m;
        ctx.link(&target).expect("the victim is alive");
        r.send(());
    }
    async fn on_exit(&mut self, _: ExitSignal, _: &mut Ctx<Self>) {
        self.watcher.send(WMsg::Mark).unwrap();
    }
}

/// Answers a ping.
struct Victim;
impl Actor for Victim {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
        r.send(());
    }
}

/// Rule 13 and rule 7, on one thread. Before rule 13 the dying victim pushed all 5,000 `Down`s
/// before the linked actor ran, so the watcher (system messages first, rule 5) had seen all of
/// them at the mark.
#[tokio::test]
async fn a_death_with_many_monitors_lets_what_its_links_woke_run_first() {
    let watcher = troupe::spawn(Watcher::default());
    let linked = troupe::spawn(Linked { watcher: watcher.clone() });
    let victim = troupe::spawn(Victim);
    watcher.ask(|r| WMsg::Monitor(victim.any(), MONITORS, r), T).await.unwrap();
    linked.ask(|r| LMsg::Link(victim.any(), r), T).await.unwrap();

    victim.kill();
    assert_eq!(victim.terminated().await, ExitReason::Killed);

    // `terminated()` answered: every `Down` is in the watcher's system lane, which it takes
    // before the report (rule 5).
    let (downs, at_mark) = watcher.ask(WMsg::Report, T).await.unwrap();
    assert_eq!(downs, MONITORS, "terminated() answered before every Down was signalled");
    let at_mark = at_mark.expect("the linked actor got the exit signal and marked the watcher");
    assert!(
        at_mark < MONITORS,
        "the linked actor ran only after all {MONITORS} Downs were signalled (saw {at_mark} at the mark)"
    );
}

/// The same death on several workers: every `Down` arrives exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_monitor_of_a_busy_death_gets_one_down() {
    let watchers: Vec<_> = (0..4).map(|_| troupe::spawn(Watcher::default())).collect();
    let victim = troupe::spawn(Victim);
    for w in &watchers {
        w.ask(|r| WMsg::Monitor(victim.any(), MONITORS / 2, r), T).await.unwrap();
    }
    victim.kill();
    victim.terminated().await;
    for w in &watchers {
        let (downs, _) = w.ask(WMsg::Report, T).await.unwrap();
        assert_eq!(downs, MONITORS / 2);
    }
}

/// Rule 13's task dropped unrun: the victim's runtime shuts down with the victim's activation
/// in it, which kills it (rule 10); the task that would signal its monitors cannot run on that
/// runtime any more, and dropping it signals them all.
#[test]
fn a_death_in_a_runtime_shutting_down_still_signals_every_monitor() {
    let here = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let gone = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let watcher = here.block_on(async { troupe::spawn(Watcher::default()) });
    // Spawned on `gone` and given a message: its activation waits there for the next one.
    let victim = gone.block_on(async {
        let v = troupe::spawn(Victim);
        v.ask(|r| r, T).await.unwrap();
        v
    });
    here.block_on(watcher.ask(|r| WMsg::Monitor(victim.any(), MONITORS, r), T)).unwrap();

    drop(gone);
    assert_eq!(here.block_on(victim.terminated()), ExitReason::Killed);
    let (downs, _) = here.block_on(watcher.ask(WMsg::Report, T)).unwrap();
    assert_eq!(downs, MONITORS);
}

/// Rule 13 outside any runtime: a kill from a plain thread of an idle actor whose home runtime
/// (a current-thread one) nobody drives signals every monitor before it returns. A task on the
/// home runtime would wait for someone to drive it; the watchers are on another runtime.
#[test]
fn a_death_outside_any_runtime_signals_every_monitor_at_once() {
    let here = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let home = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let watcher = here.block_on(async { troupe::spawn(Watcher::default()) });
    // Spawned on `home` without running anything there: the victim stays idle.
    let victim = {
        let _in = home.enter();
        troupe::spawn(Victim)
    };
    here.block_on(watcher.ask(|r| WMsg::Monitor(victim.any(), MONITORS, r), T)).unwrap();

    let v = victim.clone();
    std::thread::spawn(move || {
        assert!(tokio::runtime::Handle::try_current().is_err(), "a plain thread has no runtime");
        v.kill();
    })
    .join()
    .unwrap();
    assert!(!victim.is_alive());
    let (downs, _) = here.block_on(watcher.ask(WMsg::Report, T)).unwrap();
    assert_eq!(downs, MONITORS, "the Downs waited for the victim's undriven home runtime");
    assert_eq!(here.block_on(victim.terminated()), ExitReason::Killed);
}
