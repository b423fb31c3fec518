//! The `metrics` feature (`reports.rs` rule 5): messages handled and mailbox depth per actor
//! type, crashes, and restarts by child id, through the `metrics` facade. Run with
//! `cargo test -p troupe --features metrics --test core_metrics`.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;
use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use troupe::{Actor, Ctx, ReplyTo};

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

impl Actor for Worker {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        match m {
            Msg::Work => {}
            Msg::Count(r) => r.send(()),
            Msg::Crash => panic!("asked to crash"),
        }
    }
}

#[tokio::test]
async fn messages_depth_crashes_and_restarts_are_counted() {
    let store = Arc::new(Store::default());
    metrics::set_global_recorder(Rec(store.clone())).unwrap();
    let t = Duration::from_secs(10);
    let spec = ChildSpec::worker("metered", || Worker);
    let child = spec.handle();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
    let w = child.current(t).await.unwrap();
    for _ in 0..99 {
        w.send(Msg::Work).unwrap();
    }
    w.ask(Msg::Count, t).await.unwrap();
    w.send(Msg::Crash).unwrap();
    child.current_after(w.id(), t).await.unwrap();

    let actor = std::any::type_name::<Worker>();
    let counter = |k: &str| store.counters.lock().get(k).map_or(0, |c| c.load(Ordering::SeqCst));
    assert_eq!(counter(&format!("troupe_messages_handled_total{{actor={actor}}}")), 101);
    assert_eq!(counter(&format!("troupe_actor_crashes_total{{actor={actor}}}")), 1);
    assert_eq!(counter("troupe_restarts_total{child=metered}"), 1);
    let depth = store.histograms.lock().get(&format!("troupe_mailbox_depth{{actor={actor}}}")).cloned().unwrap();
    let samples = depth.0.lock().clone();
    assert!(!samples.is_empty() && samples.iter().all(|d| *d <= 101.0), "{samples:?}");
    sup.stop().await;
}
