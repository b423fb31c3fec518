//! Message types that cross nodes: [`RemoteMessage`] gives each a stable tag, and a
//! process-wide registry maps each Rust type to the functions that export, rebuild and decode
//! refs and replies of that type.
//!
//! Rules:
//! 1. A type travels as `tag_hash(TAG)`; the receiver compares it with the tag of the type it
//!    expects and refuses a mismatch (never a misdecode).
//! 2. A type is registered the first time a ref of it is forged, looked up or exported, or
//!    explicitly with [`register`]; registering also registers the types its messages carry
//!    (refs and reply types, from [`RemoteMessage::nested`]).
//! 3. Refs and `ReplyTo` inside a message decode only for registered types; otherwise the
//!    (de)serialisation fails with an error naming the type and the fix.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use serde::Serialize;
use troupe::ActorRef;

use crate::codec::tag_hash;
use crate::node::refs::{self, Export, PendingReply, RemoteActor, ReplySink};
use crate::proto::RefuseReason;

/// A message type that can cross nodes.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe::ReplyTo;
/// use troupe_remote::{Nested, RemoteMessage};
///
/// #[derive(Serialize, Deserialize)]
/// enum Counter { Add(u64), Get(ReplyTo<u64>) }
///
/// impl RemoteMessage for Counter {
///     const TAG: &'static str = "example.counter.v1";
///     fn nested(n: &mut Nested) { n.add::<u64>(); } // the reply type
/// }
/// ```
pub trait RemoteMessage: Serialize + DeserializeOwned + Send + 'static {
    /// A stable name for the type, the same in every build (change it when the type changes).
    const TAG: &'static str;

    /// Registers the types this message carries as refs (`ActorRef<N>`) or replies
    /// (`ReplyTo<R>`), so they can be rebuilt on arrival.
    fn nested(_: &mut Nested) {}
}

/// Collects the nested types of a [`RemoteMessage`].
pub struct Nested(());

impl Nested {
    /// Registers `T`.
    pub fn add<T: RemoteMessage>(&mut self) {
        register::<T>();
    }
}

macro_rules! builtin {
    ($($t:ty => $tag:literal),* $(,)?) => {
        $(impl RemoteMessage for $t { const TAG: &'static str = $tag; })*
    };
}

builtin! {
    () => "troupe.unit", bool => "troupe.bool", u8 => "troupe.u8", u16 => "troupe.u16",
    u32 => "troupe.u32", u64 => "troupe.u64", i32 => "troupe.i32", i64 => "troupe.i64",
    f64 => "troupe.f64", String => "troupe.string", Vec<u8> => "troupe.bytes",
    crate::Blob => "troupe.blob",
}

type PendingFn = fn(Box<dyn Any + Send>) -> Option<Box<dyn PendingReply>>;

/// What the registry knows of one type.
pub(crate) struct TypeEntry {
    pub(crate) tag: u64,
    pub(crate) tag_name: &'static str,
    /// A `Box<ActorRef<M>>` sending to `actor`.
    pub(crate) make_ref: fn(Arc<RemoteActor>) -> Box<dyn Any + Send>,
    /// The pieces to export an `&ActorRef<M>` (given as `&dyn Any`).
    pub(crate) export: fn(&dyn Any) -> Option<Export>,
    /// Clones the `ActorRef<M>` held in an export (for refs that come home).
    pub(crate) local_clone: fn(&(dyn Any + Send + Sync)) -> Option<Box<dyn Any + Send>>,
    /// When an `&ActorRef<M>` is one of our remote refs: its actor.
    pub(crate) remote_of: fn(&dyn Any) -> Option<Arc<RemoteActor>>,
    /// From a `Box<ReplyTo<M>>`: the pending entry that decodes and delivers the answer.
    pub(crate) pending: PendingFn,
    /// A `Box<ReplyTo<M>>` that answers through `sink`.
    pub(crate) make_reply: fn(ReplySink) -> Box<dyn Any + Send>,
}

static TYPES: LazyLock<RwLock<HashMap<TypeId, &'static TypeEntry>>> = LazyLock::new(Default::default);

/// Rule 2: registers `M` (and what it carries). Idempotent and cheap after the first call.
pub fn register<M: RemoteMessage>() -> u64 {
    let id = TypeId::of::<M>();
    if let Some(e) = TYPES.read().get(&id) {
        return e.tag;
    }
    let entry: &'static TypeEntry = Box::leak(Box::new(TypeEntry {
        tag: tag_hash(M::TAG),
        tag_name: M::TAG,
        make_ref: |a| Box::new(refs::remote_ref::<M>(a)),
        export: |r| r.downcast_ref::<ActorRef<M>>().map(refs::export_parts::<M>),
        local_clone: |t| t.downcast_ref::<ActorRef<M>>().map(|r| Box::new(r.clone()) as Box<dyn Any + Send>),
        remote_of: |r| r.downcast_ref::<ActorRef<M>>().and_then(refs::remote_of::<M>),
        pending: |b| {
            let b: Box<dyn Any> = b;
            b.downcast::<troupe::ReplyTo<M>>().ok().map(|r| refs::pending::<M>(*r))
        },
        make_reply: |sink| Box::new(refs::reply_through::<M>(sink)),
    }));
    let fresh = TYPES.write().insert(id, entry).is_none();
    if fresh {
        M::nested(&mut Nested(()));
    }
    entry.tag
}

pub(crate) fn entry(id: TypeId) -> Result<&'static TypeEntry, String> {
    TYPES.read().get(&id).copied().ok_or_else(|| {
        "a ref or reply handle of a message type that is not registered for remote use; list it in the \
         enclosing message's RemoteMessage::nested or call troupe_remote::register::<T>() at start-up"
            .to_owned()
    })
}

pub(crate) fn tag_name_of(tag: u64) -> String {
    TYPES.read().values().find(|e| e.tag == tag).map_or_else(|| format!("{tag:#018x}"), |e| e.tag_name.to_owned())
}

/// Decodes `payload` as `M` and sends it to `target` (an `ActorRef<M>`).
pub(crate) fn deliver<M: RemoteMessage>(target: &(dyn Any + Send + Sync), payload: &[u8]) -> Result<(), RefuseReason> {
    let r = target.downcast_ref::<ActorRef<M>>().ok_or(RefuseReason::NoActor)?;
    let msg: M = crate::codec::decode(payload).map_err(|e| RefuseReason::Undecodable(e.to_string()))?;
    r.send(msg).map_err(|e| match e.kind() {
        troupe::SendErrorKind::Full => RefuseReason::Full,
        _ => RefuseReason::NoActor,
    })
}
