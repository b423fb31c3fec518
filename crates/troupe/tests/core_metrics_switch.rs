//! `reports.rs` rule 7: `set_metrics_recording(false)` stops the recording of rule 5's series
//! for the whole process, and `true` starts it again. A binary of its own (the switch is
//! global). Run with `cargo test -p troupe --features metrics --test core_metrics_switch`.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;
use troupe::{Actor, Ctx, ReplyTo};

/// Counter values by `name{labels}`.
#[derive(Default)]
struct Store(Mutex<HashMap<String, Arc<AtomicU64>>>);

struct Rec(Arc<Store>);

impl Recorder for Rec {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        let k = format!("{}{{{}}}", key.name(), labels.join(","));
        Counter::from_arc(self.0 .0.lock().entry(k).or_default().clone())
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Answers every message; its type name is its `child` label.
struct Quiet;
/// The same, a second type so the two phases' series differ.
struct Loud;

impl Actor for Quiet {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
        r.send(());
    }
}

impl Actor for Loud {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
        r.send(());
    }
}

/// The sum of the counters of series `name` whose labels contain `has`.
fn sum(store: &Store, name: &str, has: &str) -> u64 {
    let map = store.0.lock();
    map.iter().filter(|(k, _)| k.starts_with(name) && k.contains(has)).map(|(_, v)| v.load(Ordering::SeqCst)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_7_recording_off_records_nothing_and_on_again_records() {
    let store = Arc::new(Store::default());
    metrics::set_global_recorder(Rec(store.clone())).unwrap();
    let t = Duration::from_secs(10);

    troupe::set_metrics_recording(false);
    let q = troupe::spawn(Quiet);
    q.ask(|r| r, t).await.unwrap();
    q.stop();
    tokio::time::timeout(t, q.terminated()).await.unwrap();
    assert_eq!(sum(&store, "troupe_", "core_metrics_switch::Quiet"), 0, "recorded while off");

    troupe::set_metrics_recording(true);
    let l = troupe::spawn(Loud);
    l.ask(|r| r, t).await.unwrap();
    l.stop();
    tokio::time::timeout(t, l.terminated()).await.unwrap();
    assert_eq!(sum(&store, "troupe_actors_spawned_total", "core_metrics_switch::Loud"), 1);
    assert_eq!(sum(&store, "troupe_messages_handled_total", "core_metrics_switch::Loud"), 1);
    assert_eq!(sum(&store, "troupe_actors_stopped_total", "core_metrics_switch::Loud"), 1);
}
