//! The local registries: unique names and process groups, released when the actor dies. There
//! is one process-wide registry (the default), and one per [`crate::System`].
//!
//! Rules:
//! 1. A name maps to at most one live actor; registering a taken name fails naming the holder.
//! 2. A dead actor holds no name and belongs to no group (released in its death, `cell.rs` rule 7).
//! 3. Lookups are typed: a name registered for messages `M` is found only as `ActorRef<M>`.
//! 4. The free functions (`register`, `whereis`, ...) use the registry of the current system:
//!    inside an actor of a `System` (or `System::run`), the system's; elsewhere the
//!    process-wide one. Two systems never see each other's names.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::any_ref::AnyRef;
use crate::error::RegistryError;
use crate::{ActorId, ActorRef};

struct Entry {
    any: AnyRef,
    typed: Box<dyn Any + Send + Sync>,
}

#[derive(Default)]
struct Tables {
    names: HashMap<String, Entry>,
    groups: HashMap<String, Vec<Entry>>,
}

/// One registry: names and groups.
#[derive(Default)]
pub(crate) struct Registry {
    tables: Mutex<Tables>,
}

static GLOBAL: LazyLock<Arc<Registry>> = LazyLock::new(Default::default);

/// Rule 4.
pub(crate) fn current() -> Arc<Registry> {
    crate::system::current_registry().unwrap_or_else(|| GLOBAL.clone())
}

impl Registry {
    pub(crate) fn register<M: Send + 'static>(
        self: &Arc<Self>,
        name: &str,
        actor: &ActorRef<M>,
    ) -> Result<(), RegistryError> {
        let any = actor.any();
        let mut t = self.tables.lock();
        if let Some(e) = t.names.get(name) {
            if e.any.is_alive() {
                return Err(RegistryError::NameTaken { name: name.to_owned(), holder: e.any.id() });
            }
        }
        if !(any.is_alive() && any.0.add_name(self, name, false)) {
            return Err(RegistryError::NotAlive(any.id()));
        }
        t.names.insert(name.to_owned(), Entry { any, typed: Box::new(actor.clone()) });
        Ok(())
    }

    pub(crate) fn unregister(self: &Arc<Self>, name: &str) -> bool {
        let removed = self.tables.lock().names.remove(name);
        if let Some(e) = &removed {
            e.any.0.remove_name(self, name, false);
        }
        removed.is_some()
    }

    pub(crate) fn whereis<M: Send + 'static>(&self, name: &str) -> Result<ActorRef<M>, RegistryError> {
        let t = self.tables.lock();
        let e = t.names.get(name).filter(|e| e.any.is_alive());
        let Some(e) = e else {
            return Err(RegistryError::NotRegistered(name.to_owned()));
        };
        match e.typed.downcast_ref::<ActorRef<M>>() {
            Some(r) => Ok(r.clone()),
            None => Err(RegistryError::WrongType { name: name.to_owned() }),
        }
    }

    pub(crate) fn whereis_any(&self, name: &str) -> Option<AnyRef> {
        self.tables.lock().names.get(name).map(|e| e.any.clone()).filter(AnyRef::is_alive)
    }

    pub(crate) fn join_group<M: Send + 'static>(
        self: &Arc<Self>,
        group: &str,
        actor: &ActorRef<M>,
    ) -> Result<(), RegistryError> {
        let any = actor.any();
        let mut t = self.tables.lock();
        let members = t.groups.entry(group.to_owned()).or_default();
        if members.iter().any(|e| e.any.id() == any.id()) {
            return Ok(());
        }
        if !(any.is_alive() && any.0.add_name(self, group, true)) {
            if members.is_empty() {
                t.groups.remove(group);
            }
            return Err(RegistryError::NotAlive(any.id()));
        }
        members.push(Entry { any, typed: Box::new(actor.clone()) });
        Ok(())
    }

    pub(crate) fn leave_group(self: &Arc<Self>, group: &str, actor: ActorId) {
        let mut t = self.tables.lock();
        if let Some(members) = t.groups.get_mut(group) {
            if let Some(pos) = members.iter().position(|e| e.any.id() == actor) {
                let e = members.remove(pos);
                e.any.0.remove_name(self, group, true);
            }
            if members.is_empty() {
                t.groups.remove(group);
            }
        }
    }

    pub(crate) fn group_members<M: Send + 'static>(&self, group: &str) -> Vec<ActorRef<M>> {
        let t = self.tables.lock();
        t.groups
            .get(group)
            .map(|ms| {
                ms.iter()
                    .filter(|e| e.any.is_alive())
                    .filter_map(|e| e.typed.downcast_ref::<ActorRef<M>>().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Rule 2: called from an actor's death.
    pub(crate) fn forget(&self, id: ActorId, name: &str, group: bool) {
        let mut t = self.tables.lock();
        if !group {
            if t.names.get(name).is_some_and(|e| e.any.id() == id) {
                t.names.remove(name);
            }
            return;
        }
        if let Some(members) = t.groups.get_mut(name) {
            members.retain(|e| e.any.id() != id);
            if members.is_empty() {
                t.groups.remove(name);
            }
        }
    }

    /// Forgets every name and group (a system's shutdown).
    pub(crate) fn clear(&self) {
        let t = std::mem::take(&mut *self.tables.lock());
        drop(t);
    }
}

/// Registers `actor` under `name` (OTP `register/2`).
///
/// ```
/// # #[tokio::main] async fn main() {
/// use troupe::{Actor, Ctx};
/// struct Idle;
/// impl Actor for Idle { type Msg = (); async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {} }
/// let a = troupe::spawn(Idle);
/// troupe::register("doc-idle", &a).unwrap();
/// assert_eq!(troupe::whereis::<()>("doc-idle").unwrap().id(), a.id());
/// assert!(troupe::register("doc-idle", &troupe::spawn(Idle)).is_err());
/// # }
/// ```
pub fn register<M: Send + 'static>(name: &str, actor: &ActorRef<M>) -> Result<(), RegistryError> {
    current().register(name, actor)
}

/// Removes a name; returns whether it was registered.
pub fn unregister(name: &str) -> bool {
    current().unregister(name)
}

/// Looks a name up (OTP `whereis/1`): the actor, or [`RegistryError::NotRegistered`] when no live
/// actor holds the name, or [`RegistryError::WrongType`] when it accepts other messages. Use `?`
/// on it (it converts into [`crate::ActorError`]), or `.ok()` for an `Option`.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use troupe::{Actor, Ctx, RegistryError};
/// struct Db;
/// impl Actor for Db { type Msg = u32; async fn handle(&mut self, _: u32, _: &mut Ctx<Self>) {} }
/// assert!(troupe::whereis::<u32>("doc-db").is_err());
/// troupe::register("doc-db", &troupe::spawn(Db)).unwrap();
/// let db = troupe::whereis::<u32>("doc-db").unwrap();
/// db.send(7).unwrap();
/// assert!(matches!(troupe::whereis::<String>("doc-db"), Err(RegistryError::WrongType { .. })));
/// assert!(troupe::whereis::<u32>("doc-nobody").ok().is_none());
/// # }
/// ```
pub fn whereis<M: Send + 'static>(name: &str) -> Result<ActorRef<M>, RegistryError> {
    current().whereis(name)
}

/// The actor holding `name`, whatever its message type.
#[must_use]
pub fn whereis_any(name: &str) -> Option<AnyRef> {
    current().whereis_any(name)
}

/// Adds `actor` to process group `group` (an actor may join several groups, once each).
pub fn join_group<M: Send + 'static>(group: &str, actor: &ActorRef<M>) -> Result<(), RegistryError> {
    current().join_group(group, actor)
}

/// Removes `actor` from `group`.
pub fn leave_group(group: &str, actor: ActorId) {
    current().leave_group(group, actor)
}

/// The live members of `group` that accept `M`, in joining order.
#[must_use]
pub fn group_members<M: Send + 'static>(group: &str) -> Vec<ActorRef<M>> {
    current().group_members(group)
}
