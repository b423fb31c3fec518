//! The cluster-wide receptionist (service key -> the actors registered under it, with
//! listings that follow changes) and globally unique names.
//!
//! Rules:
//! 1. A registration exports the actor on this node under a generated name and publishes
//!    (key, export name, message type) in this member's own gossiped data; other members
//!    forge a typed ref from it. Nothing but the owner changes its entries.
//! 2. `find` returns the actors registered under the key by live members whose message type
//!    is the key's; entries of other types are never returned as refs of the wrong type.
//! 3. A global name is kept by one member: among live members publishing it, the oldest
//!    (then the earliest registration). The others drop their registration and report a
//!    `name_conflict` event; `whereis_name` returns the keeper's actor on every node.
//! 4. Entries of down or removed members stop counting at once (their incarnation is no
//!    longer live), before the leader removes them.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::marker::PhantomData;

use troupe::ActorRef;
use troupe_remote::RemoteMessage;

use crate::daemon::{Cluster, Cmd};
use crate::error::{Error, ErrorKind};
use crate::gossip::Entry;

/// A typed service key: the actors registered under it accept `M`.
///
/// ```
/// use troupe_cluster::ServiceKey;
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Job(u32);
/// # impl troupe_remote::RemoteMessage for Job { const TAG: &'static str = "doc.job.v1"; fn nested(_: &mut troupe_remote::Nested) {} }
/// let workers: ServiceKey<Job> = ServiceKey::new("workers");
/// assert_eq!(workers.name(), "workers");
/// ```
pub struct ServiceKey<M> {
    name: String,
    _m: PhantomData<fn(M)>,
}

impl<M> ServiceKey<M> {
    /// A key named `name`.
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), _m: PhantomData }
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<M> Clone for ServiceKey<M> {
    fn clone(&self) -> Self {
        Self::new(&self.name)
    }
}

/// This node's own registrations.
#[derive(Default)]
pub(crate) struct Registry {
    seq: u64,
    services: BTreeMap<String, Vec<Entry>>,
    names: BTreeMap<String, Entry>,
    /// Export name -> the local typed ref (so local finds return local refs).
    locals: HashMap<String, Box<dyn Any + Send + Sync>>,
}

impl Registry {
    /// Forgets a name this node lost (rule 3); returns its export name.
    pub(crate) fn drop_name(&mut self, name: &str) -> Option<String> {
        let e = self.names.remove(name)?;
        self.locals.remove(&e.export);
        Some(e.export)
    }
}

/// A listing that follows a key's registrations ([`Cluster::listing`]).
pub struct Listing<M: RemoteMessage> {
    cluster: Cluster,
    key: ServiceKey<M>,
    rx: tokio::sync::watch::Receiver<u64>,
    last: Option<BTreeSet<(String, String)>>,
}

impl<M: RemoteMessage> Listing<M> {
    /// Waits until the set of actors under the key differs from the last one returned (the
    /// first call returns the current set at once), and returns it.
    pub async fn changed(&mut self) -> Result<Vec<ActorRef<M>>, Error> {
        loop {
            let now = self.cluster.entries(&self.key);
            let ids: BTreeSet<(String, String)> = now.iter().map(|(o, e)| (o.clone(), e.export.clone())).collect();
            if self.last.as_ref() != Some(&ids) {
                self.last = Some(ids);
                return Ok(self.cluster.refs(now));
            }
            self.rx.changed().await.map_err(|_| Error::from(ErrorKind::Stopped))?;
        }
    }
}

impl Cluster {
    fn publish(&self, reg: &Registry) {
        let _ = self.shared.cmd.send(Cmd::Publish(reg.services.clone(), reg.names.clone()));
    }

    fn export_local<M: RemoteMessage>(
        &self,
        reg: &mut Registry,
        what: &str,
        actor: &ActorRef<M>,
    ) -> Result<Entry, Error> {
        reg.seq += 1;
        let export = format!("troupe.{what}.{}", reg.seq);
        self.shared.node.export(&export, actor)?;
        reg.locals.insert(export.clone(), Box::new(actor.clone()));
        Ok(Entry {
            export,
            tag: troupe_remote::register::<M>(),
            tag_name: troupe_remote::tag_of::<M>().to_owned(),
            seq: reg.seq,
        })
    }

    /// Registers `actor` under `key`, cluster-wide (rule 1).
    pub fn register<M: RemoteMessage>(&self, key: &ServiceKey<M>, actor: &ActorRef<M>) -> Result<(), Error> {
        let mut reg = self.shared.registry.lock();
        let e = self.export_local(&mut reg, "svc", actor)?;
        reg.services.entry(key.name.clone()).or_default().push(e);
        self.publish(&reg);
        Ok(())
    }

    /// Removes this node's registrations of `actor` under `key`; false when there were none.
    pub fn deregister<M: RemoteMessage>(&self, key: &ServiceKey<M>, actor: &ActorRef<M>) -> bool {
        let mut reg = self.shared.registry.lock();
        let Some(list) = reg.services.get(&key.name).cloned() else { return false };
        let (gone, kept): (Vec<Entry>, Vec<Entry>) = list.into_iter().partition(|e| {
            reg.locals
                .get(&e.export)
                .and_then(|b| b.downcast_ref::<ActorRef<M>>())
                .is_some_and(|r| r.id() == actor.id())
        });
        for e in &gone {
            reg.locals.remove(&e.export);
            self.shared.node.unexport(&e.export);
        }
        if kept.is_empty() {
            reg.services.remove(&key.name);
        } else {
            reg.services.insert(key.name.clone(), kept);
        }
        self.publish(&reg);
        !gone.is_empty()
    }

    pub(crate) fn entries<M: RemoteMessage>(&self, key: &ServiceKey<M>) -> Vec<(String, Entry)> {
        let g = self.gossip();
        let tag = troupe_remote::register::<M>();
        let mut out = Vec::new();
        for (owner, o) in g.live_owned() {
            if let Some(list) = o.services.get(&key.name) {
                out.extend(list.iter().filter(|e| e.tag == tag).map(|e| (owner.clone(), e.clone())));
            }
        }
        out
    }

    fn refs<M: RemoteMessage>(&self, entries: Vec<(String, Entry)>) -> Vec<ActorRef<M>> {
        let me = self.shared.node.addr();
        let reg = self.shared.registry.lock();
        entries
            .into_iter()
            .filter_map(|(owner, e)| {
                if owner == me {
                    reg.locals.get(&e.export).and_then(|b| b.downcast_ref::<ActorRef<M>>()).cloned()
                } else {
                    Some(self.shared.node.remote_ref::<M>(&owner, &e.export))
                }
            })
            .collect()
    }

    /// The actors registered under `key` across the cluster, as this node knows them (rule 2).
    #[must_use]
    pub fn find<M: RemoteMessage>(&self, key: &ServiceKey<M>) -> Vec<ActorRef<M>> {
        let e = self.entries(key);
        self.refs(e)
    }

    /// A listing of `key` that follows its changes.
    #[must_use]
    pub fn listing<M: RemoteMessage>(&self, key: &ServiceKey<M>) -> Listing<M> {
        Listing { cluster: self.clone(), key: key.clone(), rx: self.shared.published.subscribe(), last: None }
    }

    /// Registers `actor` under a cluster-wide unique `name` (rule 3). Fails at once when
    /// another live member is already known to hold it; a conflict found later (two members
    /// registering at the same time) is resolved by age and reported as an event.
    pub fn register_name<M: RemoteMessage>(&self, name: &str, actor: &ActorRef<M>) -> Result<(), Error> {
        if let Some(holder) = self.name_holder(name).filter(|(o, _)| *o != self.shared.node.addr()) {
            return Err(ErrorKind::NameTaken(format!("{name} (held on {})", holder.0)).into());
        }
        let mut reg = self.shared.registry.lock();
        if reg.names.contains_key(name) {
            return Err(ErrorKind::NameTaken(format!("{name} (held on this node)")).into());
        }
        let e = self.export_local(&mut reg, "name", actor)?;
        reg.names.insert(name.to_owned(), e);
        self.publish(&reg);
        Ok(())
    }

    fn name_holder(&self, name: &str) -> Option<(String, Entry)> {
        self.gossip().name_owner(name)
    }

    /// The actor holding `name` in the cluster: `Ok(None)` when nobody does, a type mismatch
    /// when it accepts another message type.
    pub fn whereis_name<M: RemoteMessage>(&self, name: &str) -> Result<Option<ActorRef<M>>, Error> {
        let Some((owner, e)) = self.name_holder(name) else { return Ok(None) };
        if e.tag != troupe_remote::register::<M>() {
            return Err(ErrorKind::TypeMismatch {
                expected: troupe_remote::tag_of::<M>().to_owned(),
                found: e.tag_name,
            }
            .into());
        }
        Ok(self.refs::<M>(vec![(owner, e)]).pop())
    }

    /// Drops this node's registration of `name`; false when it held none.
    pub fn unregister_name(&self, name: &str) -> bool {
        let mut reg = self.shared.registry.lock();
        let Some(e) = reg.names.remove(name) else { return false };
        reg.locals.remove(&e.export);
        self.shared.node.unexport(&e.export);
        self.publish(&reg);
        true
    }
}
