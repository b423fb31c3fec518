//! A small in-test `metrics` recorder: keeps the last value of every counter and gauge by
//! name and labels, so a test can publish through the facade and read back what arrived.
//! Install it for one call with `metrics::with_local_recorder(&rec, || ...)`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// A series: its name and its labels, sorted.
pub type Series = (String, Vec<(String, String)>);

/// One stored value (a counter's u64, a gauge's f64 bits).
#[derive(Default)]
struct Cell(AtomicU64);

impl CounterFn for Cell {
    fn increment(&self, v: u64) {
        self.0.fetch_add(v, Ordering::Relaxed);
    }
    fn absolute(&self, v: u64) {
        self.0.fetch_max(v, Ordering::Relaxed);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, v: f64) {
        self.set(f64::from_bits(self.0.load(Ordering::Relaxed)) + v);
    }
    fn decrement(&self, v: f64) {
        self.set(f64::from_bits(self.0.load(Ordering::Relaxed)) - v);
    }
    fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
}

/// The recorder: counters and gauges by series, and the names given help texts.
#[derive(Default)]
pub struct TestRecorder {
    counters: Mutex<BTreeMap<Series, Arc<Cell>>>,
    gauges: Mutex<BTreeMap<Series, Arc<Cell>>>,
    described: Mutex<Vec<String>>,
}

fn series(key: &Key) -> Series {
    let mut labels: Vec<(String, String)> = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
    labels.sort();
    (key.name().to_owned(), labels)
}

impl TestRecorder {
    /// The counter `name` with exactly `labels`, if it was published.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
        let k = want(name, labels);
        self.counters.lock().unwrap().get(&k).map(|c| c.0.load(Ordering::Relaxed))
    }

    /// The gauge `name` with exactly `labels`, if it was published.
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let k = want(name, labels);
        self.gauges.lock().unwrap().get(&k).map(|c| f64::from_bits(c.0.load(Ordering::Relaxed)))
    }

    /// Every series published under `name` (counters and gauges), with its labels.
    pub fn series_of(&self, name: &str) -> Vec<Vec<(String, String)>> {
        let c = self.counters.lock().unwrap();
        let g = self.gauges.lock().unwrap();
        c.keys().chain(g.keys()).filter(|(n, _)| n == name).map(|(_, l)| l.clone()).collect()
    }

    /// Every series name published.
    pub fn names(&self) -> Vec<String> {
        let c = self.counters.lock().unwrap();
        let g = self.gauges.lock().unwrap();
        let mut v: Vec<String> = c.keys().chain(g.keys()).map(|(n, _)| n.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The names given a help text.
    pub fn described(&self) -> Vec<String> {
        self.described.lock().unwrap().clone()
    }
}

fn want(name: &str, labels: &[(&str, &str)]) -> Series {
    let mut l: Vec<(String, String)> = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    l.sort();
    (name.to_owned(), l)
}

impl Recorder for TestRecorder {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, _: SharedString) {
        self.described.lock().unwrap().push(key.as_str().to_owned());
    }
    fn describe_gauge(&self, key: KeyName, _: Option<Unit>, _: SharedString) {
        self.described.lock().unwrap().push(key.as_str().to_owned());
    }
    fn describe_histogram(&self, key: KeyName, _: Option<Unit>, _: SharedString) {
        self.described.lock().unwrap().push(key.as_str().to_owned());
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let cell = self.counters.lock().unwrap().entry(series(key)).or_default().clone();
        Counter::from_arc(cell)
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let cell = self.gauges.lock().unwrap().entry(series(key)).or_default().clone();
        Gauge::from_arc(cell)
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}
