//! Structured lifecycle and supervisor events (`reports.rs` rules 1, 2 and 6), caught by a small
//! capturing `tracing` layer: spawn, a normal stop, a kill, a crash and its restart, an exit
//! signal over a link, a monitor's `Down`, the escalation when the restart intensity is
//! exceeded, and the supervisor path (rule 5) in every event of a nested tree. Each test runs
//! on a current-thread runtime with the layer as the thread's default subscriber, so it sees
//! only its own actors.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use troupe::{Actor, AnyRef, Ctx, Down, ExitReason};

/// One `troupe` event: its level, message and fields, every value as text.
#[derive(Clone, Debug)]
struct Ev {
    level: Level,
    message: String,
    fields: HashMap<String, String>,
}

#[derive(Default)]
struct Fields(HashMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().to_owned(), v.to_owned());
    }
    fn record_debug(&mut self, f: &Field, v: &dyn Debug) {
        self.0.insert(f.name().to_owned(), format!("{v:?}"));
    }
}

/// The capturing layer: keeps every event of target `troupe`.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Ev>>>);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "troupe" {
            return;
        }
        let mut f = Fields::default();
        event.record(&mut f);
        let message = f.0.remove("message").unwrap_or_default();
        self.0.lock().push(Ev { level: *event.metadata().level(), message, fields: f.0 });
    }
}

impl Capture {
    /// The events with this message whose fields include all of `with`.
    fn find(&self, message: &str, with: &[(&str, &str)]) -> Vec<Ev> {
        self.0
            .lock()
            .iter()
            .filter(|e| {
                e.message == message && with.iter().all(|(k, v)| e.fields.get(*k).map(String::as_str) == Some(*v))
            })
            .cloned()
            .collect()
    }

    /// The single event with this message and fields; fails naming what was seen.
    fn one(&self, message: &str, with: &[(&str, &str)]) -> Ev {
        let found = self.find(message, with);
        assert_eq!(found.len(), 1, "one {message:?} with {with:?}; all events: {:#?}", self.0.lock());
        found.into_iter().next().unwrap()
    }
}

/// Runs `f` on a current-thread runtime with `capture` as the thread's subscriber.
fn with_capture<F: std::future::Future<Output = ()>>(capture: &Capture, f: impl FnOnce() -> F) {
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(f());
}

const T: Duration = Duration::from_secs(10);

struct Crasher;

impl Actor for Crasher {
    type Msg = &'static str;
    async fn handle(&mut self, m: &'static str, _: &mut Ctx<Self>) {
        if m == "crash" {
            panic!("asked to crash");
        }
    }
}

/// Links itself to the actor it is given (not trapping exits).
struct Linker;

impl Actor for Linker {
    type Msg = (AnyRef, oneshot::Sender<()>);
    async fn handle(&mut self, (other, done): Self::Msg, ctx: &mut Ctx<Self>) {
        ctx.link(&other).unwrap();
        let _ = done.send(());
    }
}

/// Monitors the actor it is given and reports the `Down` it gets.
struct Watcher(Option<oneshot::Sender<Down>>);

impl Actor for Watcher {
    type Msg = AnyRef;
    async fn handle(&mut self, other: AnyRef, ctx: &mut Ctx<Self>) {
        ctx.monitor(&other);
    }
    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(d);
        }
    }
}

#[test]
fn spawn_stop_and_kill_of_an_unsupervised_actor() {
    let cap = Capture::default();
    let (mut stopped, mut killed) = (None, None);
    with_capture(&cap, || async {
        let a = troupe::spawn_with(Crasher, troupe::Spawn::new().name("lonely"));
        a.stop();
        assert_eq!(a.terminated().await, ExitReason::Normal);
        stopped = Some(a.id());
        // Never had a message, so it parked at once: a kill of an idle actor is reported too.
        let b = troupe::spawn(Crasher);
        b.kill();
        assert_eq!(b.terminated().await, ExitReason::Killed);
        killed = Some(b.id());
    });
    let ty = std::any::type_name::<Crasher>();
    let a = stopped.unwrap().to_string();
    let spawned = cap.one("actor spawned", &[("actor", &a)]);
    assert_eq!(spawned.level, Level::DEBUG);
    assert_eq!(spawned.fields["actor_type"], ty);
    assert_eq!(spawned.fields["name"], "lonely");
    assert_eq!(spawned.fields["supervisor"], "", "no supervisor");
    assert_eq!(spawned.fields["child"], ty, "an unsupervised actor's child label is its type");
    let stop = cap.one("actor stopped", &[("actor", &a), ("reason", "normal"), ("name", "lonely")]);
    assert_eq!(stop.level, Level::DEBUG);
    let b = killed.unwrap().to_string();
    cap.one("actor spawned", &[("actor", &b), ("name", "")]);
    cap.one("actor stopped", &[("actor", &b), ("reason", "killed"), ("supervisor", "")]);
    assert!(cap.find("actor crashed", &[]).is_empty(), "a stop and a kill are no crashes");
}

#[test]
fn a_link_exit_and_a_monitor_down_are_reported_with_from_to_and_reason() {
    let cap = Capture::default();
    let mut ids = None;
    with_capture(&cap, || async {
        // Link: the crasher's crash reaches the linker, which does not trap exits.
        let target = troupe::spawn(Crasher);
        let linker = troupe::spawn(Linker);
        let (tx, rx) = oneshot::channel();
        linker.send((target.any(), tx)).unwrap();
        rx.await.unwrap();
        target.send("crash").unwrap();
        assert!(matches!(linker.terminated().await, ExitReason::Panicked(_)));
        // Monitor: a normal stop reaches the watcher as a `Down`.
        let watched = troupe::spawn(Crasher);
        let (tx, rx) = oneshot::channel();
        let watcher = troupe::spawn(Watcher(Some(tx)));
        watcher.send(watched.any()).unwrap();
        // The watcher monitors before it handles anything after; a ping through its mailbox is
        // not possible with its message type, so wait for the monitor to be in place.
        let deadline = tokio::time::Instant::now() + T;
        while watched.any().monitor_count() == 0 {
            assert!(tokio::time::Instant::now() < deadline, "the watcher never monitored");
            tokio::task::yield_now().await;
        }
        watched.stop();
        let down = tokio::time::timeout(T, rx).await.unwrap().unwrap();
        assert_eq!(down.reason, ExitReason::Normal);
        ids = Some((target.id(), linker.id(), watched.id(), watcher.id()));
    });
    let (target, linker, watched, watcher) = ids.unwrap();
    let (target, linker, watched, watcher) =
        (target.to_string(), linker.to_string(), watched.to_string(), watcher.to_string());

    let link = cap.one("link", &[("from", &linker), ("to", &target)]);
    assert_eq!((link.level, link.fields["noproc"].as_str()), (Level::TRACE, "false"));
    cap.one("actor crashed", &[("actor", &target)]);
    let exit = cap.one("exit signal", &[("from", &target), ("to", &linker)]);
    assert_eq!(exit.level, Level::DEBUG);
    assert_eq!(exit.fields["trapped"], "false");
    assert!(exit.fields["reason"].starts_with("panicked: asked to crash"), "{exit:?}");
    let end = cap.one("actor stopped", &[("actor", &linker)]);
    assert!(end.fields["reason"].starts_with("panicked"), "exits with the link's reason: {end:?}");
    assert!(cap.find("actor crashed", &[("actor", &linker)]).is_empty(), "an exit on a link's signal is no crash");

    let monitor = cap.one("monitor", &[("from", &watcher), ("to", &watched)]);
    assert_eq!(monitor.level, Level::TRACE);
    let down = cap.one("down", &[("from", &watched), ("to", &watcher), ("reason", "normal")]);
    assert_eq!(down.level, Level::DEBUG);
    assert_eq!(down.fields["monitor"], monitor.fields["monitor"], "the same monitor");
}

#[test]
fn a_supervised_tree_reports_spawns_crash_restart_and_the_escalation_with_paths() {
    let cap = Capture::default();
    let mut seen = None;
    with_capture(&cap, || async {
        let w = ChildSpec::worker("w", || Crasher);
        let wh = w.handle();
        let leaf = ChildSpec::worker("leaf", || Crasher);
        let inner = SupervisorSpec::new(Strategy::OneForAll).child(leaf);
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .name("tr")
            .intensity(1, Duration::from_secs(60))
            .child(w)
            .child(ChildSpec::supervisor("inner", inner));
        let sup = supervisor::start(spec).await.unwrap();
        let first = wh.current(T).await.unwrap();
        first.send("crash").unwrap();
        let second = wh.current_after(first.id(), T).await.unwrap();
        // The second crash within the period exceeds the intensity (1): the tree shuts down.
        second.send("crash").unwrap();
        assert_eq!(sup.terminated().await, ExitReason::Shutdown);
        seen = Some((sup.any().id(), first.id(), second.id()));
    });
    let (sup, first, second) = seen.unwrap();
    let (sup, first, second) = (sup.to_string(), first.to_string(), second.to_string());

    // Spawns carry the supervisor path: `/tr` for its children, `/tr/inner` below.
    let s = cap.one("actor spawned", &[("actor", &first)]);
    assert_eq!(
        (s.fields["supervisor"].as_str(), s.fields["child"].as_str(), s.fields["name"].as_str()),
        ("/tr", "w", "w")
    );
    cap.one("actor spawned", &[("supervisor", "/tr"), ("child", "inner")]);
    cap.one("actor spawned", &[("supervisor", "/tr/inner"), ("child", "leaf")]);

    // The crash and the supervisor's decisions.
    let crash = cap.one("actor crashed", &[("actor", &first), ("supervisor", "/tr"), ("child", "w")]);
    assert_eq!(crash.level, Level::ERROR);
    let term = cap.one("child terminated", &[("actor", &first)]);
    assert_eq!(term.level, Level::ERROR);
    let want = [("supervisor", "/tr"), ("supervisor_id", sup.as_str()), ("child", "w"), ("strategy", "one_for_one")];
    assert!(want.iter().all(|(k, v)| term.fields[*k] == *v), "{term:?}");
    assert!(term.fields["reason"].starts_with("panicked"), "{term:?}");
    let decided = cap.one("restarting children", &[("supervisor", "/tr"), ("child", "w"), ("restarts", "1")]);
    assert_eq!(
        (decided.level, decided.fields["intensity"].as_str(), decided.fields["affected"].as_str()),
        (Level::DEBUG, "1", "1")
    );
    assert_eq!(decided.fields["strategy"], "one_for_one");
    let restarted = cap.one("child restarted", &[("actor", &second)]);
    assert_eq!(restarted.level, Level::INFO);
    let want = [
        ("supervisor", "/tr"),
        ("supervisor_id", sup.as_str()),
        ("child", "w"),
        ("cause", "w"),
        ("strategy", "one_for_one"),
    ];
    assert!(want.iter().all(|(k, v)| restarted.fields[*k] == *v), "{restarted:?}");
    assert!(restarted.fields["reason"].starts_with("panicked"), "{restarted:?}");

    // The escalation, then the shutdown of the whole tree.
    let exceeded = cap.one("restart intensity exceeded", &[("supervisor", "/tr"), ("child", "w")]);
    assert_eq!(exceeded.level, Level::ERROR);
    assert_eq!((exceeded.fields["intensity"].as_str(), exceeded.fields["period_ms"].as_str()), ("1", "60000"));
    assert_eq!(exceeded.fields["strategy"], "one_for_one");
    assert!(exceeded.fields["reason"].starts_with("panicked"), "{exceeded:?}");
    let down = cap.one("supervisor shut down", &[("supervisor", "/tr"), ("supervisor_id", &sup)]);
    assert_eq!((down.level, down.fields["reason"].as_str()), (Level::INFO, "shutdown"));
    cap.one("supervisor shut down", &[("supervisor", "/tr/inner"), ("strategy", "one_for_all")]);
    cap.one("actor stopped", &[("supervisor", "/tr/inner"), ("child", "leaf"), ("reason", "shutdown")]);
    cap.one("actor stopped", &[("supervisor", "/tr"), ("child", "inner"), ("reason", "shutdown")]);
    cap.one("actor stopped", &[("actor", &sup), ("supervisor", ""), ("reason", "shutdown")]);
}

#[test]
fn a_transient_child_that_exits_normally_is_not_restarted_and_says_so() {
    let cap = Capture::default();
    with_capture(&cap, || async {
        let w = ChildSpec::worker("t", || Crasher).restart(troupe::supervisor::Restart::Transient);
        let h = w.handle();
        let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).name("tt").child(w)).await.unwrap();
        let c = h.current(T).await.unwrap();
        c.stop();
        c.terminated().await;
        // The decision is taken when the supervisor handles the exit: wait for its answer to a
        // later call, which it handles after.
        let kids = sup.which_children().await.unwrap();
        assert!(kids[0].actor.is_none());
        sup.stop().await;
    });
    let e = cap.one("child not restarted", &[("supervisor", "/tt"), ("child", "t")]);
    assert_eq!(
        (e.level, e.fields["restart"].as_str(), e.fields["reason"].as_str()),
        (Level::DEBUG, "transient", "normal")
    );
    assert!(cap.find("child terminated", &[]).is_empty(), "a normal exit is no termination report");
}
