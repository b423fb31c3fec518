//! For transport implementors (`troupe-remote`): the small surface the core offers so that an
//! [`ActorRef`] or [`AnyRef`] can stand for an actor on another node, and so that refs and reply
//! handles can travel inside serialised messages. The core knows nothing of sockets; a transport
//! implements [`RemoteProcess`] and [`SerdeHook`] and uses the delivery functions below.
//!
//! Rules:
//! 1. Nothing here changes local behaviour: a local send never touches this module.
//! 2. `ActorRef<M>` and `ReplyTo<R>` serialise only inside [`with_serde_hook`]; elsewhere their
//!    serde impls fail with a clear error (never a panic).
//! 3. Serialising a `ReplyTo` moves its answering half into the hook; the handle left behind
//!    answers nobody.
//! 4. Inside [`sizing`], refs and reply handles serialise as placeholders (an empty node
//!    address) with no side effect at all: no export, no hook call, the `ReplyTo` keeps its
//!    answering half. A transport uses it to size a message before encoding it.
//! 5. An actor's death signals all its monitors in one go, inside a deferral scope: work a
//!    transport hands to [`defer`] during it runs once every monitor has been signalled, on
//!    the same thread, in the order deferred. A transport queues each remote `Down` and
//!    defers one flush per peer, so the `Down`s of one death leave as one message per peer.
//!    Outside such a scope, [`defer`] runs the work at once.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::sync::Arc;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tokio::sync::oneshot;

use crate::any_ref::{AnyRef, Process};
use crate::cell::Sys;
use crate::{ActorId, ActorRef, Down, ExitReason, ExitSignal, MonitorId, ReplyTo};

/// An actor that lives elsewhere, as the runtime sees it. Wrap one with
/// [`AnyRef::from_remote`] so links, monitors, supervisors and the registry can hold it.
pub trait RemoteProcess: Send + Sync + 'static {
    /// Its identity (the node part names the peer in this node's numbering).
    fn id(&self) -> ActorId;
    /// Best knowledge: false once it is known dead or its node is lost.
    fn is_alive(&self) -> bool;
    /// Kills it brutally.
    fn kill(&self);
    /// Asks it to stop gracefully with `reason`.
    fn stop(&self, reason: ExitReason);
    /// A local actor linked to it died: carry the exit signal to it. False when undeliverable.
    fn exit_signal(&self, signal: ExitSignal) -> bool;
    /// A local actor it monitors died: carry the `Down` to it. False when undeliverable.
    fn down(&self, down: Down) -> bool;
    /// Links the local actor `local` to it; false when it is known dead.
    fn add_link(&self, local: AnyRef) -> bool;
    /// Removes the link with local actor `local`.
    fn remove_link(&self, local: ActorId);
    /// Monitors it on behalf of local `watcher`; false when it is known dead.
    fn add_monitor(&self, id: MonitorId, watcher: AnyRef) -> bool;
    /// Removes a monitor.
    fn remove_monitor(&self, id: MonitorId);
    /// A receiver told its exit reason, or the reason now when already known dead.
    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason>;
}

struct Remote(Arc<dyn RemoteProcess>);

impl Process for Remote {
    fn id(&self) -> ActorId {
        self.0.id()
    }
    fn home(&self) -> Option<&tokio::runtime::Handle> {
        None
    }
    fn is_alive(&self) -> bool {
        self.0.is_alive()
    }
    fn push_sys(self: Arc<Self>, sys: Sys) -> bool {
        match sys {
            Sys::Exit(sig) => self.0.exit_signal(sig),
            Sys::Down(d) => self.0.down(d),
            // A remote actor stops at once: the drain is not carried over the wire.
            Sys::Stop(r) | Sys::Drain(r) => {
                self.0.stop(r);
                true
            }
        }
    }
    fn kill(self: Arc<Self>) {
        self.0.kill();
    }
    fn add_link(&self, other: AnyRef) -> bool {
        self.0.add_link(other)
    }
    fn remove_link(&self, other: ActorId) {
        self.0.remove_link(other);
    }
    fn add_monitor(&self, id: MonitorId, watcher: AnyRef) -> bool {
        self.0.add_monitor(id, watcher)
    }
    fn remove_monitor(&self, id: MonitorId) {
        self.0.remove_monitor(id);
    }
    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason> {
        self.0.watch()
    }
    fn add_name(&self, _reg: &Arc<crate::registry::Registry>, _name: &str, _group: bool) -> bool {
        false
    }
    fn remove_name(&self, _reg: &Arc<crate::registry::Registry>, _name: &str, _group: bool) {}
    fn name(&self) -> Option<String> {
        None
    }
}

impl AnyRef {
    /// Wraps a remote actor so the runtime can link to, monitor, stop and kill it.
    #[must_use]
    pub fn from_remote(p: Arc<dyn RemoteProcess>) -> AnyRef {
        AnyRef(Arc::new(Remote(p)))
    }
}

/// Delivers an exit signal from (remote) actor `from` to local actor `to`, as a link would;
/// it also drops the link `to` holds with `from`. False when `to` is dead.
pub fn deliver_exit(to: &AnyRef, from: ActorId, reason: ExitReason) -> bool {
    to.0.clone().push_sys(Sys::Exit(ExitSignal { from, reason }))
}

/// Work handed to [`defer`].
type Deferred = Box<dyn FnOnce()>;

thread_local! {
    /// Rule 5: the work deferred in the death notification under way on this thread, if any.
    static DEFERRED: RefCell<Option<Vec<Deferred>>> = const { RefCell::new(None) };
}

/// Rule 5: runs `f` in a deferral scope (or inside the one already open on this thread); the
/// work deferred during it runs when the outermost scope ends, even if `f` panics.
pub(crate) fn deferring<R>(f: impl FnOnce() -> R) -> R {
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            // Work deferred while the deferred work runs is taken too: the loop ends when a
            // pass found nothing.
            loop {
                let work = DEFERRED.with(|d| d.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default());
                if work.is_empty() {
                    break;
                }
                for w in work {
                    w();
                }
            }
            DEFERRED.with(|d| *d.borrow_mut() = None);
        }
    }
    let outermost = DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_some() {
            return false;
        }
        *d = Some(Vec::new());
        true
    });
    let _scope = outermost.then_some(Scope);
    f()
}

/// Runs `work` once the death notification under way on this thread has signalled every
/// monitor (rule 5), or at once when none is: a transport uses it to send the `Down`s of one
/// death to one peer as a single message.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// // Outside a death notification the work runs at once.
/// let ran = Arc::new(AtomicUsize::new(0));
/// let r = ran.clone();
/// troupe::remote_api::defer(move || {
///     r.fetch_add(1, Ordering::SeqCst);
/// });
/// assert_eq!(ran.load(Ordering::SeqCst), 1);
/// ```
pub fn defer(work: impl FnOnce() + 'static) {
    let mut work = Some(work);
    DEFERRED.with(|d| {
        if let Some(q) = d.borrow_mut().as_mut() {
            q.push(Box::new(work.take().expect("taken once")));
        }
    });
    if let Some(w) = work {
        w();
    }
}

/// Delivers a `Down` to local actor `to`. False when `to` is dead.
pub fn deliver_down(to: &AnyRef, down: Down) -> bool {
    to.0.clone().push_sys(Sys::Down(down))
}

/// Adds `other` (usually a remote actor's proxy) to `local`'s links; false when `local` is dead.
pub fn add_link(local: &AnyRef, other: AnyRef) -> bool {
    let to = other.id();
    let linked = local.0.add_link(other);
    tracing::trace!(target: "troupe", from = %local.id(), %to, noproc = !linked, "link");
    linked
}

/// Removes `other` from `local`'s links.
pub fn remove_link(local: &AnyRef, other: ActorId) {
    tracing::trace!(target: "troupe", from = %local.id(), to = %other, "unlink");
    local.0.remove_link(other);
}

/// Makes `watcher` (usually a remote watcher's proxy) monitor `local`; false when `local` is
/// dead.
pub fn add_monitor(local: &AnyRef, id: MonitorId, watcher: AnyRef) -> bool {
    tracing::trace!(target: "troupe", from = %watcher.id(), to = %local.id(), monitor = id.0, "monitor");
    local.0.add_monitor(id, watcher)
}

/// Removes monitor `id` from `local`.
pub fn remove_monitor(local: &AnyRef, id: MonitorId) {
    tracing::trace!(target: "troupe", to = %local.id(), monitor = id.0, "demonitor");
    local.0.remove_monitor(id);
}

/// A fresh monitor identity, unique in this OS process.
#[must_use]
pub fn new_monitor_id() -> MonitorId {
    MonitorId::next()
}

/// The raw form of a monitor identity, for wire formats.
#[must_use]
pub fn monitor_id_to_bits(id: MonitorId) -> u64 {
    id.0
}

/// Rebuilds a monitor identity from [`monitor_id_to_bits`].
#[must_use]
pub fn monitor_id_from_bits(bits: u64) -> MonitorId {
    MonitorId(bits)
}

/// How a ref travels inside a message: the node that hosts the actor, the actor's sequence
/// number there, and the stable tag of its message type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRef {
    /// The hosting node's address as the transport names it.
    pub node: String,
    /// The actor's number on that node.
    pub id: u64,
    /// A stable hash of the message type's tag.
    pub tag: u64,
}

/// How a reply handle travels: the node waiting for the answer, the pending reply's number
/// there, and the stable tag of the reply type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireReply {
    /// The asking node's address.
    pub node: String,
    /// The pending reply's number on the asking node.
    pub id: u64,
    /// A stable hash of the reply type's tag.
    pub tag: u64,
}

/// What a transport installs (per thread, with [`with_serde_hook`]) while it (de)serialises a
/// message, so that refs and reply handles inside it can be exported and rebuilt.
pub trait SerdeHook: Send + Sync {
    /// `r` is an `&ActorRef<M>` with `TypeId::of::<M>() == msg_type`.
    fn encode_ref(&self, r: &dyn Any, msg_type: TypeId) -> Result<WireRef, String>;
    /// Returns a `Box<ActorRef<M>>` with `TypeId::of::<M>() == msg_type`.
    fn decode_ref(&self, w: WireRef, msg_type: TypeId) -> Result<Box<dyn Any + Send>, String>;
    /// `reply` is a `Box<ReplyTo<R>>` with `TypeId::of::<R>() == reply_type`; the hook keeps it
    /// until the answer arrives.
    fn encode_reply(&self, reply: Box<dyn Any + Send>, reply_type: TypeId) -> Result<WireReply, String>;
    /// Returns a `Box<ReplyTo<R>>` with `TypeId::of::<R>() == reply_type`.
    fn decode_reply(&self, w: WireReply, reply_type: TypeId) -> Result<Box<dyn Any + Send>, String>;
}

thread_local! {
    static HOOKS: RefCell<Vec<Arc<dyn SerdeHook>>> = const { RefCell::new(Vec::new()) };
    /// Rule 4: inside [`sizing`].
    static SIZING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

struct Pop;

impl Drop for Pop {
    fn drop(&mut self) {
        HOOKS.with(|h| h.borrow_mut().pop());
    }
}

/// Fails an `ask` with `err` instead of answering it: the asker's `ask` returns `err` (a
/// transport uses it when the actor's node refused the request). A handle that answers
/// another node is dropped.
pub fn fail_reply<R>(reply: ReplyTo<R>, err: crate::AskError) {
    reply.fail(err);
}

/// Runs `f` with `hook` installed for refs and reply handles (de)serialised on this thread.
pub fn with_serde_hook<T>(hook: &Arc<dyn SerdeHook>, f: impl FnOnce() -> T) -> T {
    HOOKS.with(|h| h.borrow_mut().push(hook.clone()));
    let _pop = Pop;
    f()
}

/// Runs `f` (which serialises a value only to count its bytes) with refs and reply handles
/// serialising as placeholders (rule 4): their node address counts as empty, so the count is a
/// lower bound by the length of those addresses.
///
/// ```
/// // A transport counts a message's bytes with its codec inside `sizing`; a `ReplyTo` in it
/// // still answers afterwards (troupe-remote's `codec::size_hint` does this).
/// let n = troupe::remote_api::sizing(|| 40 + 2);
/// assert_eq!(n, 42);
/// ```
pub fn sizing<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SIZING.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SIZING.with(|c| c.replace(true)));
    f()
}

fn placeholder<S: Serializer>(s: S) -> Result<S::Ok, S::Error> {
    WireRef { node: String::new(), id: 0, tag: 0 }.serialize(s)
}

fn current_hook() -> Option<Arc<dyn SerdeHook>> {
    HOOKS.with(|h| h.borrow().last().cloned())
}

const NO_HOOK: &str = "troupe: ActorRef and ReplyTo serialise only when troupe-remote sends a message \
                       to another node; this (de)serialisation ran outside it";

impl<M: Send + 'static> Serialize for ActorRef<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if SIZING.with(std::cell::Cell::get) {
            return placeholder(s);
        }
        let hook = current_hook().ok_or_else(|| S::Error::custom(NO_HOOK))?;
        let w = hook.encode_ref(self, TypeId::of::<M>()).map_err(S::Error::custom)?;
        w.serialize(s)
    }
}

impl<'de, M: Send + 'static> Deserialize<'de> for ActorRef<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireRef::deserialize(d)?;
        let hook = current_hook().ok_or_else(|| D::Error::custom(NO_HOOK))?;
        let any = hook.decode_ref(w, TypeId::of::<M>()).map_err(D::Error::custom)?;
        let any: Box<dyn Any> = any;
        any.downcast::<ActorRef<M>>()
            .map(|b| *b)
            .map_err(|_| D::Error::custom("troupe: the serde hook rebuilt a ref of another message type"))
    }
}

impl<R: Send + 'static> Serialize for ReplyTo<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if SIZING.with(std::cell::Cell::get) {
            return placeholder(s); // WireReply has WireRef's shape
        }
        let hook = current_hook().ok_or_else(|| S::Error::custom(NO_HOOK))?;
        let inner = self.take().ok_or_else(|| S::Error::custom("troupe: this ReplyTo was already answered"))?;
        let w = hook.encode_reply(Box::new(inner), TypeId::of::<R>()).map_err(S::Error::custom)?;
        w.serialize(s)
    }
}

impl<'de, R: Send + 'static> Deserialize<'de> for ReplyTo<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireReply::deserialize(d)?;
        let hook = current_hook().ok_or_else(|| D::Error::custom(NO_HOOK))?;
        let any = hook.decode_reply(w, TypeId::of::<R>()).map_err(D::Error::custom)?;
        let any: Box<dyn Any> = any;
        any.downcast::<ReplyTo<R>>()
            .map(|b| *b)
            .map_err(|_| D::Error::custom("troupe: the serde hook rebuilt a reply handle of another type"))
    }
}

/// The sender behind a non-local ref as `Any` (see [`crate::DynSender::as_any`]), so a
/// transport can recognise refs it built itself; `None` for a local ref.
#[must_use]
pub fn dyn_sender_any<M: Send + 'static>(r: &ActorRef<M>) -> Option<&dyn Any> {
    r.dyn_as_any()
}

/// Builds a send error for a [`crate::DynSender`] implemented outside the core.
#[must_use]
pub fn send_error<M>(kind: crate::SendErrorKind, msg: Option<M>) -> crate::SendError<M> {
    crate::SendError::new(kind, msg)
}
