//! The `metrics` feature (`reports.rs` rule 5): spawns, stops by reason, messages handled,
//! mailbox depth, crashes and restarts, labelled by supervisor path and child label, through
//! the `metrics` facade; and the label set stays bounded when 50 children of a pool or of a
//! simple supervisor crash and restart. One recorder for the whole binary (it is global); each
//! test names its own supervisors and actor types, so their series do not mix. Run with
//! `cargo test -p troupe --features metrics --test core_metrics`.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;
use troupe::pool::{self, PoolSpec};
use troupe::supervisor::{self, ChildSpec, SimpleSpec, Strategy, SupervisorSpec};
use troupe::{Actor, Ctx, ExitReason, ReplyTo};

/// Keeps every counter and histogram by its key, rendered as `name{label=value}`.
#[derive(Default)]
struct Store {
    counters: Mutex<HashMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<HashMap<String, Arc<Samples>>>,
}

#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, v: f64) {
        self.0.lock().push(v);
    }
}

fn render(key: &Key) -> String {
    let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

struct Rec(Arc<Store>);

impl Recorder for Rec {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.0.counters.lock().entry(render(key)).or_default().clone())
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.0.histograms.lock().entry(render(key)).or_default().clone())
    }
}

enum Msg {
    Work,
    Count(ReplyTo<()>),
    Crash,
}

struct Worker;

fn work(m: Msg) {
    match m {
        Msg::Work => {}
        Msg::Count(r) => r.send(()),
        Msg::Crash => panic!("asked to crash"),
    }
}

impl Actor for Worker {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        work(m);
    }
}

/// The unsupervised actor of one test: its type is its `child` label.
struct Lonely;

impl Actor for Lonely {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        work(m);
    }
}

/// Links itself to the actor it is given, without trapping exits.
struct Follower;

impl Actor for Follower {
    type Msg = (troupe::AnyRef, ReplyTo<()>);
    async fn handle(&mut self, (other, done): Self::Msg, ctx: &mut Ctx<Self>) {
        ctx.link(&other).unwrap();
        done.send(());
    }
}

/// The one recorder of this binary.
fn store() -> &'static Arc<Store> {
    static STORE: OnceLock<Arc<Store>> = OnceLock::new();
    STORE.get_or_init(|| {
        let store = Arc::new(Store::default());
        metrics::set_global_recorder(Rec(store.clone())).unwrap();
        store
    })
}

fn counter(key: &str) -> u64 {
    store().counters.lock().get(key).map_or(0, |c| c.load(Ordering::SeqCst))
}

/// The counter keys of series `name` that carry `label` (e.g. `supervisor=/p50`).
fn keys(name: &str, label: &str) -> Vec<String> {
    let mut v: Vec<String> = store()
        .counters
        .lock()
        .keys()
        .filter(|k| k.starts_with(&format!("{name}{{")) && k.contains(label))
        .cloned()
        .collect();
    v.sort();
    v
}

/// Waits, up to 20 s, until counter `key` reaches `n`.
async fn counter_reaches(key: &str, n: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while counter(key) < n {
        assert!(tokio::time::Instant::now() < deadline, "{key} stayed at {} (wanted {n})", counter(key));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_supervised_child_is_labelled_by_supervisor_path_and_child_id() {
    let store = store();
    let spec = ChildSpec::worker("metered", || Worker);
    let child = spec.handle();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).name("m").child(spec)).await.unwrap();
    let w = child.current(T).await.unwrap();
    for _ in 0..99 {
        w.send(Msg::Work).unwrap();
    }
    w.ask(Msg::Count, T).await.unwrap();
    w.send(Msg::Crash).unwrap();
    child.current_after(w.id(), T).await.unwrap();

    let at = "supervisor=/m,child=metered";
    assert_eq!(counter(&format!("troupe_messages_handled_total{{{at}}}")), 101);
    assert_eq!(counter(&format!("troupe_actor_crashes_total{{{at}}}")), 1);
    assert_eq!(counter(&format!("troupe_restarts_total{{{at}}}")), 1);
    assert_eq!(counter(&format!("troupe_actors_spawned_total{{{at}}}")), 2, "the restart is a spawn");
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=crashed}}")), 1);
    let depth = store.histograms.lock().get(&format!("troupe_mailbox_depth{{{at}}}")).cloned().unwrap();
    let samples = depth.0.lock().clone();
    assert!(!samples.is_empty() && samples.iter().all(|d| *d <= 101.0), "{samples:?}");
    assert_eq!(sup.stop().await, ExitReason::Shutdown);
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=shutdown}}")), 1);
    // The top-level supervisor itself has no supervisor: labelled by its type.
    let sup_type = std::any::type_name::<troupe::supervisor::Supervisor>();
    assert!(counter(&format!("troupe_actors_spawned_total{{supervisor=,child={sup_type}}}")) >= 1);
}

#[tokio::test]
async fn an_unsupervised_actor_is_labelled_by_its_type_and_stops_by_reason() {
    store(); // the recorder first: what happens before it is not recorded
    let ty = std::any::type_name::<Lonely>();
    let at = format!("supervisor=,child={ty}");
    let a = troupe::spawn(Lonely);
    a.send(Msg::Work).unwrap();
    a.ask(Msg::Count, T).await.unwrap();
    a.stop();
    assert_eq!(a.terminated().await, ExitReason::Normal);
    let b = troupe::spawn(Lonely);
    b.kill();
    b.terminated().await;
    let c = troupe::spawn(Lonely);
    c.send(Msg::Crash).unwrap();
    c.terminated().await;
    assert_eq!(counter(&format!("troupe_actors_spawned_total{{{at}}}")), 3);
    assert_eq!(counter(&format!("troupe_messages_handled_total{{{at}}}")), 3);
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=normal}}")), 1);
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=killed}}")), 1);
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=crashed}}")), 1);
    assert_eq!(counter(&format!("troupe_actor_crashes_total{{{at}}}")), 1);

    // An actor taken down by a link's exit signal stopped `linked`: it did not crash.
    let f = troupe::spawn(Follower);
    let d = troupe::spawn(Lonely);
    f.ask(|r| (d.any(), r), T).await.unwrap();
    d.send(Msg::Crash).unwrap();
    assert!(matches!(f.terminated().await, ExitReason::Panicked(_)));
    let at = format!("supervisor=,child={}", std::any::type_name::<Follower>());
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=linked}}")), 1);
    assert_eq!(counter(&format!("troupe_actor_crashes_total{{{at}}}")), 0);
}

#[tokio::test]
async fn fifty_pool_workers_crashing_and_restarting_make_one_label_set() {
    store(); // the recorder first: what happens before it is not recorded
    let pool =
        pool::start(PoolSpec::new(50, |_| Worker).name("p50").intensity(200, Duration::from_secs(60))).await.unwrap();
    for i in 0..50 {
        let h = pool.worker(i).unwrap();
        let w = h.current(T).await.unwrap();
        w.send(Msg::Crash).unwrap();
        h.current_after(w.id(), T).await.unwrap();
    }
    let at = "supervisor=/p50,child=worker";
    assert_eq!(counter(&format!("troupe_restarts_total{{{at}}}")), 50);
    assert_eq!(counter(&format!("troupe_actor_crashes_total{{{at}}}")), 50);
    assert_eq!(counter(&format!("troupe_actors_spawned_total{{{at}}}")), 100);
    for name in ["troupe_restarts_total", "troupe_actor_crashes_total", "troupe_actors_spawned_total"] {
        assert_eq!(keys(name, "supervisor=/p50,"), vec![format!("{name}{{{at}}}")], "one label set, not 50");
    }
    assert_eq!(keys("troupe_actors_stopped_total", "supervisor=/p50,").len(), 1, "crashed only, so far");
    pool.stop().await;
    assert_eq!(
        keys("troupe_actors_stopped_total", "supervisor=/p50,"),
        vec![
            format!("troupe_actors_stopped_total{{{at},reason=crashed}}"),
            format!("troupe_actors_stopped_total{{{at},reason=shutdown}}")
        ]
    );
    assert_eq!(counter(&format!("troupe_actors_stopped_total{{{at},reason=shutdown}}")), 50);
}

#[tokio::test]
async fn fifty_dynamic_children_crashing_and_restarting_make_one_label_set() {
    store(); // the recorder first: what happens before it is not recorded
    let sup = supervisor::start_simple(
        SimpleSpec::new(|_: u32| Worker).name("s50").id("conn").intensity(200, Duration::from_secs(60)),
    )
    .await
    .unwrap();
    let mut kids = Vec::new();
    for n in 0..50 {
        kids.push(sup.start_child(n).await.unwrap().unwrap());
    }
    for k in &kids {
        k.send(Msg::Crash).unwrap();
    }
    let at = "supervisor=/s50,child=conn";
    counter_reaches(&format!("troupe_restarts_total{{{at}}}"), 50).await;
    assert_eq!(counter(&format!("troupe_actor_crashes_total{{{at}}}")), 50);
    for name in ["troupe_restarts_total", "troupe_actor_crashes_total", "troupe_actors_spawned_total"] {
        assert_eq!(keys(name, "supervisor=/s50,"), vec![format!("{name}{{{at}}}")], "one label set, not 50");
    }
    // A plain supervisor's children started with an empty id share the label `child`.
    let dynamic = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).name("dyn")).await.unwrap();
    for _ in 0..5 {
        dynamic.start_child(ChildSpec::worker("", || Worker)).await.unwrap();
    }
    assert_eq!(
        keys("troupe_actors_spawned_total", "supervisor=/dyn,"),
        vec!["troupe_actors_spawned_total{supervisor=/dyn,child=child}"]
    );
    sup.stop().await;
    dynamic.stop().await;
}

#[tokio::test]
async fn a_child_supervisor_path_is_stable_across_its_restarts() {
    store(); // the recorder first: what happens before it is not recorded
    let leaf = ChildSpec::worker("leaf", || Worker);
    let leaf_h = leaf.handle();
    let inner = ChildSpec::supervisor("inner", SupervisorSpec::new(Strategy::OneForOne).child(leaf));
    let inner_h = inner.handle();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).name("app").child(inner)).await.unwrap();
    let first = inner_h.current(T).await.unwrap();
    let first_leaf = leaf_h.current(T).await.unwrap();
    first.kill();
    inner_h.current_after(first.id(), T).await.unwrap();
    leaf_h.current_after(first_leaf.id(), T).await.unwrap();
    assert_eq!(counter("troupe_actors_spawned_total{supervisor=/app/inner,child=leaf}"), 2);
    assert_eq!(counter("troupe_actors_spawned_total{supervisor=/app,child=inner}"), 2);
    assert_eq!(counter("troupe_restarts_total{supervisor=/app,child=inner}"), 1);
    assert_eq!(keys("troupe_actors_spawned_total", "child=leaf}").len(), 1, "one path for every incarnation");
    sup.stop().await;
}
