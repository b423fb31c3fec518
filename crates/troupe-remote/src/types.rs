//! Message types that cross nodes: [`RemoteMessage`] gives each a stable tag, and a
//! process-wide registry maps each Rust type to the functions that export, rebuild and decode
//! refs and replies of that type. [`RemoteField`] finds, from a message's fields, the types
//! it carries; `#[derive(RemoteMessage)]` (crate `troupe-macros`) writes both for a type.
//!
//! Rules:
//! 1. A type travels as `tag_hash(tag)` ([`RemoteMessage::tag`]); the receiver compares it with
//!    the tag of the type it expects and refuses a mismatch (never a misdecode).
//! 2. A type is registered the first time a ref of it is forged, looked up or exported, or
//!    explicitly with [`register`]; registering also registers the types its messages carry
//!    (refs and reply types, from [`RemoteMessage::nested`]).
//! 3. Refs and `ReplyTo` inside a message decode only for registered types; otherwise the
//!    decoding node refuses the message naming the type's tag, and an `ask` carrying it
//!    fails at the asker with `AskError::UnknownType` (`node/inbound.rs` rule 8).
//! 4. A generic type's tag is computed from its parameters' tags (`troupe.option<troupe.u64>`),
//!    once per type: the registry keeps it, and [`tag_of`] reads it from there.
//! 5. Derived tags are `BASE.vN` (`troupe-macros` rule 1): a node that knows only another
//!    version of a type refuses it as it refuses any unknown type (rule 3).

mod builtin;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use serde::Serialize;
use troupe::ActorRef;

use crate::codec::tag_hash;
use crate::node::refs::{self, Export, PendingReply, RemoteActor, ReplySink};
use crate::proto::RefuseReason;

/// A message type that can cross nodes: serde plus a stable tag, and the types it carries.
///
/// Derive it (`#[derive(RemoteMessage)]`, re-exported from `troupe-macros`): the tag is the
/// type's module path and name with a version, and `nested` comes from the fields.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe::{ActorRef, ReplyTo};
/// use troupe_remote::RemoteMessage;
///
/// #[derive(Serialize, Deserialize, RemoteMessage)]
/// #[remote(version = 2)] // bump when the meaning changes
/// enum Counter {
///     Add(u64),
///     Get(ReplyTo<Option<u64>>), // std replies work as they are
///     Subscribe(ActorRef<Tick>),  // registered from the field: nothing to list
/// }
///
/// #[derive(Serialize, Deserialize, RemoteMessage)]
/// #[remote(tag = "example.tick")] // stays the same if the type moves
/// struct Tick(u64);
///
/// assert!(Counter::TAG.ends_with("::Counter.v2"));
/// assert_eq!(Tick::TAG, "example.tick.v1");
/// assert_eq!(troupe_remote::tag_of::<Option<u64>>(), "troupe.option<troupe.u64>");
/// ```
///
/// By hand (the tags of existing types stay as they were):
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
    /// For a generic type it is the stem that [`RemoteMessage::tag`] extends with the
    /// parameters' tags; read a type's tag with [`RemoteMessage::tag`] or [`tag_of`].
    const TAG: &'static str;

    /// The type's full tag: [`RemoteMessage::TAG`], unless the type is generic (rule 4).
    fn tag() -> Cow<'static, str> {
        Cow::Borrowed(Self::TAG)
    }

    /// Registers the types this message carries as refs (`ActorRef<N>`) or replies
    /// (`ReplyTo<R>`), so they can be rebuilt on arrival.
    fn nested(_: &mut Nested) {}
}

/// A type that can be a field of a derived [`RemoteMessage`]: it registers the message types
/// it carries (the `M` of an `ActorRef<M>` and the `R` of a `ReplyTo<R>`, wherever they sit).
///
/// Implemented for refs and reply handles, for std containers, tuples and maps of fields,
/// for plain data (numbers, strings, `Bytes`, `Duration`, ...; they carry nothing) and, by the
/// derive, for every derived message. A plain serde type of your own that holds no ref or
/// reply handle opts in with an empty impl:
///
/// ```
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Point { x: f64, y: f64 }
/// impl troupe_remote::RemoteField for Point {}
/// ```
pub trait RemoteField {
    /// Registers what a value of this type carries (nothing, by default).
    fn register_carried(_: &mut Nested) {}
}

/// Collects the nested types of a [`RemoteMessage`].
pub struct Nested(());

impl Nested {
    /// Registers `T`.
    pub fn add<T: RemoteMessage>(&mut self) {
        register::<T>();
    }
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
    /// The export number of an `&ActorRef<M>` to a plain local actor (not an adapter nor a
    /// remote actor): its sequence number, the number [`Self::export`] files it under.
    pub(crate) local_seq: fn(&dyn Any) -> Option<u64>,
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

/// Rule 2: registers `M` (and what it carries) and returns its tag hash. Idempotent and cheap
/// after the first call.
pub fn register<M: RemoteMessage>() -> u64 {
    registered::<M>().tag
}

/// Rule 4: `M`'s full tag (registering `M` first).
///
/// ```
/// assert_eq!(troupe_remote::tag_of::<Vec<u8>>(), "troupe.bytes");
/// assert_eq!(troupe_remote::tag_of::<Result<String, (u8, bool)>>(), "troupe.result<troupe.string,troupe.tuple<troupe.u8,troupe.bool>>");
/// ```
pub fn tag_of<M: RemoteMessage>() -> &'static str {
    registered::<M>().tag_name
}

thread_local! {
    /// Entries this thread has looked up. The registry never removes or replaces an entry, so
    /// a remembered one stays right, and a lookup here spares the shared lock, whose reader
    /// count every thread writes (a ref in a message looks its type up on each encode and
    /// decode).
    static SEEN: std::cell::RefCell<Vec<(TypeId, &'static TypeEntry)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most entries one thread remembers (a scan of this many is still cheaper than the lock).
const SEEN_MAX: usize = 32;

fn seen(id: TypeId) -> Option<&'static TypeEntry> {
    SEEN.with_borrow(|v| v.iter().find(|(t, _)| *t == id).map(|(_, e)| *e))
}

fn remember(id: TypeId, e: &'static TypeEntry) -> &'static TypeEntry {
    SEEN.with_borrow_mut(|v| {
        if v.len() < SEEN_MAX {
            v.push((id, e));
        }
    });
    e
}

pub(crate) fn registered<M: RemoteMessage>() -> &'static TypeEntry {
    let id = TypeId::of::<M>();
    if let Some(e) = seen(id) {
        return e;
    }
    if let Some(e) = TYPES.read().get(&id).copied() {
        return remember(id, e);
    }
    let tag_name: &'static str = match M::tag() {
        Cow::Borrowed(t) => t,
        // Rule 4: once per type (a race may compute it twice; one copy is kept).
        Cow::Owned(t) => Box::leak(t.into_boxed_str()),
    };
    let entry: &'static TypeEntry = Box::leak(Box::new(TypeEntry {
        tag: tag_hash(tag_name),
        tag_name,
        make_ref: |a| Box::new(refs::remote_ref::<M>(a)),
        export: |r| r.downcast_ref::<ActorRef<M>>().map(refs::export_parts::<M>),
        local_seq: |r| r.downcast_ref::<ActorRef<M>>().and_then(refs::local_seq::<M>),
        local_clone: |t| t.downcast_ref::<ActorRef<M>>().map(|r| Box::new(r.clone()) as Box<dyn Any + Send>),
        remote_of: |r| r.downcast_ref::<ActorRef<M>>().and_then(refs::remote_of::<M>),
        pending: |b| {
            let b: Box<dyn Any> = b;
            b.downcast::<troupe::ReplyTo<M>>().ok().map(|r| refs::pending::<M>(*r))
        },
        make_reply: |sink| Box::new(refs::reply_through::<M>(sink)),
    }));
    let (entry, fresh) = {
        let mut g = TYPES.write();
        match g.get(&id) {
            Some(e) => (*e, false),
            None => {
                g.insert(id, entry);
                (entry, true)
            }
        }
    };
    if fresh {
        M::nested(&mut Nested(()));
    }
    entry
}

pub(crate) fn entry(id: TypeId) -> Result<&'static TypeEntry, String> {
    if let Some(e) = seen(id) {
        return Ok(e);
    }
    TYPES.read().get(&id).copied().map(|e| remember(id, e)).ok_or_else(|| {
        "a ref or reply handle of a message type that is not registered for remote use; derive \
         RemoteMessage for the enclosing message, list the type in its RemoteMessage::nested or call \
         troupe_remote::register::<T>() at start-up"
            .to_owned()
    })
}

thread_local! {
    /// Rule 3: the tag of a type the message being decoded carries and this node does not know.
    static UNKNOWN: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Rule 3: the decoder met a ref or reply handle of type `tag` it cannot rebuild.
pub(crate) fn unknown(tag: u64) {
    UNKNOWN.with(|u| u.set(Some(tag)));
}

/// The name this node knows tag hash `tag` by, if any.
pub(crate) fn static_tag_name(tag: u64) -> Option<&'static str> {
    TYPES.read().values().find(|e| e.tag == tag).map(|e| e.tag_name)
}

pub(crate) fn tag_name_of(tag: u64) -> String {
    TYPES.read().values().find(|e| e.tag == tag).map_or_else(|| format!("{tag:#018x}"), |e| e.tag_name.to_owned())
}

/// Decodes `payload` as `M` and sends it to `target` (an `ActorRef<M>`).
pub(crate) fn deliver<M: RemoteMessage>(target: &(dyn Any + Send + Sync), payload: &[u8]) -> Result<(), RefuseReason> {
    let r = target.downcast_ref::<ActorRef<M>>().ok_or(RefuseReason::NoActor)?;
    UNKNOWN.with(|u| u.set(None));
    let msg: M = crate::codec::decode(payload).map_err(|e| match UNKNOWN.with(|u| u.take()) {
        Some(tag) => RefuseReason::UnknownType { tag },
        None => RefuseReason::Undecodable(e.to_string()),
    })?;
    r.send(msg).map_err(|e| match e.kind() {
        troupe::SendErrorKind::Full => RefuseReason::Full,
        _ => RefuseReason::NoActor,
    })
}
