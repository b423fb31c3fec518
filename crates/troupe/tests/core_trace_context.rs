//! The `trace-context` feature (`reports.rs` rule 4): a message is handled in a `troupe.handle`
//! span whose parent is the span its sender was in, so a trace crosses a local `ask`, and goes
//! on through a `send` from inside a handler. Run with
//! `cargo test -p troupe --features trace-context --test core_trace_context`.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Instrument, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use troupe::{Actor, ActorRef, Ctx, ReplyTo};

/// A span as created: its name, its parent's name, and its fields.
#[derive(Clone, Debug)]
struct SpanRec {
    id: u64,
    name: String,
    parent: Option<u64>,
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

/// An event's message and the ids of the spans it happened in, innermost first.
type EventRec = (String, Vec<u64>);

/// Keeps every span with its parent, and, for each event, the ids of the spans it happened in
/// (innermost first).
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<SpanRec>>>,
    events: Arc<Mutex<Vec<EventRec>>>,
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.id().into_u64());
        let mut f = Fields::default();
        attrs.record(&mut f);
        let name = attrs.metadata().name().to_owned();
        self.spans.lock().push(SpanRec { id: id.into_u64(), name, parent, fields: f.0 });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let scope = ctx.event_scope(event).map(|s| s.map(|span| span.id().into_u64()).collect()).unwrap_or_default();
        self.events.lock().push((f.0.remove("message").unwrap_or_default(), scope));
    }
}

impl Capture {
    fn span(&self, id: u64) -> SpanRec {
        self.spans.lock().iter().rev().find(|s| s.id == id).cloned().expect("a recorded span")
    }

    /// The spans an event with this message happened in, innermost first, by name.
    fn scope_of(&self, message: &str) -> Vec<SpanRec> {
        let events = self.events.lock().clone();
        let (_, scope) = events.iter().find(|(m, _)| m == message).unwrap_or_else(|| panic!("no event {message:?}"));
        scope.iter().map(|id| self.span(*id)).collect()
    }
}

fn with_capture<F: std::future::Future<Output = ()>>(capture: &Capture, f: impl FnOnce() -> F) {
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(f());
}

const T: Duration = Duration::from_secs(10);

/// Answers an ask, logging inside its handler.
struct Answerer;

impl Actor for Answerer {
    type Msg = ReplyTo<u32>;
    async fn handle(&mut self, r: ReplyTo<u32>, _: &mut Ctx<Self>) {
        tracing::info!("answering");
        r.send(42);
    }
}

/// Passes what it gets on to the next actor with a `send` from inside its handler.
struct Relay(ActorRef<ReplyTo<u32>>);

impl Actor for Relay {
    type Msg = ReplyTo<u32>;
    async fn handle(&mut self, r: ReplyTo<u32>, _: &mut Ctx<Self>) {
        tracing::info!("relaying");
        self.0.send(r).unwrap();
    }
}

#[test]
fn the_handler_of_an_ask_runs_in_a_span_whose_parent_is_the_askers() {
    let cap = Capture::default();
    let mut id = None;
    with_capture(&cap, || async {
        let a = troupe::spawn(Answerer);
        let asker = tracing::info_span!("asker");
        let answer = a.ask(|r| r, T).instrument(asker).await.unwrap();
        assert_eq!(answer, 42);
        id = Some(a.id());
    });
    let scope = cap.scope_of("answering");
    let handle = &scope[0];
    assert_eq!(handle.name, "troupe.handle", "the handler's event is in troupe.handle: {scope:?}");
    assert_eq!(handle.fields["actor"], id.unwrap().to_string());
    assert_eq!(handle.fields["actor_type"], std::any::type_name::<Answerer>());
    let parent = cap.span(handle.parent.expect("troupe.handle has a parent"));
    assert_eq!(parent.name, "asker", "its parent is the asker's span");
}

#[test]
fn the_chain_goes_on_through_a_send_from_inside_a_handler() {
    let cap = Capture::default();
    with_capture(&cap, || async {
        let last = troupe::spawn(Answerer);
        let relay = troupe::spawn(Relay(last));
        let root = tracing::info_span!("request");
        assert_eq!(relay.ask(|r| r, T).instrument(root).await.unwrap(), 42);
    });
    // answering (in the answerer's troupe.handle) <- the relay's troupe.handle <- request
    let answering = cap.scope_of("answering");
    assert_eq!(answering[0].name, "troupe.handle");
    assert_eq!(answering[0].fields["actor_type"], std::any::type_name::<Answerer>());
    let relay_span = cap.span(answering[0].parent.expect("a parent"));
    assert_eq!(relay_span.name, "troupe.handle");
    assert_eq!(relay_span.fields["actor_type"], std::any::type_name::<Relay>());
    assert_eq!(cap.span(relay_span.parent.expect("a parent")).name, "request");
    assert_eq!(cap.scope_of("relaying")[0].id, relay_span.id, "the relay logged in its own handle span");
}
