//! A capturing `tracing` layer for tests: every event's target, level and fields (the message
//! as `message`), kept in memory, with a bounded wait for an event that matches.
//! [`install`] sets it as the global subscriber once per test binary; tests tell their events
//! apart by the fields they carry (a node name unique to the test).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One captured event.
#[derive(Clone, Debug)]
pub struct Captured {
    /// The event's target (its module path unless set).
    pub target: String,
    /// Its level.
    pub level: Level,
    /// Its fields, formatted, the message as `message`.
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    /// The field `name` as it was recorded (strings as they are, others displayed).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// The message.
    pub fn message(&self) -> &str {
        self.get("message").unwrap_or("")
    }
}

/// The events captured so far; `seen` counts them, to wake waiters.
pub struct Capture {
    events: Mutex<Vec<Captured>>,
    seen: watch::Sender<usize>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().to_owned(), v.to_owned());
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name().to_owned(), v.to_string());
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name().to_owned(), v.to_string());
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name().to_owned(), v.to_string());
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.insert(f.name().to_owned(), v.to_string());
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        self.0.insert(f.name().to_owned(), format!("{v:?}"));
    }
}

struct CaptureLayer(Arc<Capture>);

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let c = Captured { target: meta.target().to_owned(), level: *meta.level(), fields };
        self.0.events.lock().unwrap().push(c);
        self.0.seen.send_modify(|n| *n += 1);
    }
}

/// The binary's capture, installed as the global subscriber on first use.
pub fn install() -> Arc<Capture> {
    static CAPTURE: OnceLock<Arc<Capture>> = OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let cap = Arc::new(Capture { events: Mutex::new(Vec::new()), seen: watch::channel(0).0 });
            let sub = tracing_subscriber::registry().with(CaptureLayer(cap.clone()));
            tracing::subscriber::set_global_default(sub).expect("no other global subscriber in this binary");
            cap
        })
        .clone()
}

impl Capture {
    /// Every event captured so far that matches `pred`.
    pub fn matching(&self, pred: impl Fn(&Captured) -> bool) -> Vec<Captured> {
        self.events.lock().unwrap().iter().filter(|e| pred(e)).cloned().collect()
    }

    /// Waits (at most `limit`) for an event that matches `pred`; panics naming `what` if none
    /// comes.
    pub async fn wait_for(&self, what: &str, limit: Duration, pred: impl Fn(&Captured) -> bool) -> Captured {
        let mut seen = self.seen.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(e) = self.matching(&pred).into_iter().next() {
                return e;
            }
            if tokio::time::timeout_at(deadline, seen.changed()).await.is_err() {
                let all = self.events.lock().unwrap().clone();
                panic!("no {what} event within {limit:?}; captured: {all:#?}");
            }
        }
    }
}
