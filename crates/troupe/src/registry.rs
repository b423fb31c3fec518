//! The local registry: unique names and process groups, released when the actor dies.
//!
//! Rules:
//! 1. A name maps to at most one live actor; registering a taken name fails naming the holder.
//! 2. A dead actor holds no name and belongs to no group (released in its death, `cell.rs` rule 7).
//! 3. Lookups are typed: a name registered for messages `M` is found only as `ActorRef<M>`.

use std::any::Any;
use std::collections::HashMap;
use std::sync::LazyLock;

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

static TABLES: LazyLock<Mutex<Tables>> = LazyLock::new(Default::default);

fn local_cell_add(r: &AnyRef, name: &str, group: bool) -> bool {
    r.is_alive() && r.0.add_name(name, group)
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
    let any = actor.any();
    let mut t = TABLES.lock();
    if let Some(e) = t.names.get(name) {
        if e.any.is_alive() {
            return Err(RegistryError::NameTaken { name: name.to_owned(), holder: e.any.id() });
        }
    }
    if !local_cell_add(&any, name, false) {
        return Err(RegistryError::NotAlive(any.id()));
    }
    t.names.insert(name.to_owned(), Entry { any, typed: Box::new(actor.clone()) });
    Ok(())
}

/// Removes a name; returns whether it was registered.
pub fn unregister(name: &str) -> bool {
    let removed = TABLES.lock().names.remove(name);
    if let Some(e) = &removed {
        e.any.0.remove_name(name, false);
    }
    removed.is_some()
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
    let t = TABLES.lock();
    let e = t.names.get(name).filter(|e| e.any.is_alive());
    let Some(e) = e else {
        return Err(RegistryError::NotRegistered(name.to_owned()));
    };
    match e.typed.downcast_ref::<ActorRef<M>>() {
        Some(r) => Ok(r.clone()),
        None => Err(RegistryError::WrongType { name: name.to_owned() }),
    }
}

/// The actor holding `name`, whatever its message type.
#[must_use]
pub fn whereis_any(name: &str) -> Option<AnyRef> {
    TABLES.lock().names.get(name).map(|e| e.any.clone()).filter(AnyRef::is_alive)
}

/// Adds `actor` to process group `group` (an actor may join several groups, once each).
pub fn join_group<M: Send + 'static>(group: &str, actor: &ActorRef<M>) -> Result<(), RegistryError> {
    let any = actor.any();
    let mut t = TABLES.lock();
    let members = t.groups.entry(group.to_owned()).or_default();
    if members.iter().any(|e| e.any.id() == any.id()) {
        return Ok(());
    }
    if !local_cell_add(&any, group, true) {
        return Err(RegistryError::NotAlive(any.id()));
    }
    members.push(Entry { any, typed: Box::new(actor.clone()) });
    Ok(())
}

/// Removes `actor` from `group`.
pub fn leave_group(group: &str, actor: ActorId) {
    let mut t = TABLES.lock();
    if let Some(members) = t.groups.get_mut(group) {
        if let Some(pos) = members.iter().position(|e| e.any.id() == actor) {
            let e = members.remove(pos);
            e.any.0.remove_name(group, true);
        }
        if members.is_empty() {
            t.groups.remove(group);
        }
    }
}

/// The live members of `group` that accept `M`, in joining order.
#[must_use]
pub fn group_members<M: Send + 'static>(group: &str) -> Vec<ActorRef<M>> {
    let t = TABLES.lock();
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
pub(crate) fn forget(id: ActorId, names: &[String], groups: &[String]) {
    let mut t = TABLES.lock();
    for n in names {
        if t.names.get(n).is_some_and(|e| e.any.id() == id) {
            t.names.remove(n);
        }
    }
    for g in groups {
        if let Some(members) = t.groups.get_mut(g) {
            members.retain(|e| e.any.id() != id);
            if members.is_empty() {
                t.groups.remove(g);
            }
        }
    }
}
