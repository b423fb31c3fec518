//! A node's lifecycle: closing it (explicitly, when its last handle is dropped, or as the last
//! phase of a [`troupe::System`]'s shutdown) and names that follow a supervised child across
//! its restarts.
//!
//! Rules (tests in `tests/remote_lifecycle.rs`):
//! 1. Closing is done once: it aborts the accept loop and the maintenance task, takes every
//!    peer down (they see this node go down), and forgets its exports and names.
//!    [`Node::shutdown`] starts it and returns; [`Node::shutdown_and_wait`] also waits until
//!    the accept loop and the maintenance task have ended, so the listen port is free when it
//!    returns.
//! 2. Dropping the last handle of a [`Node`] closes it (clones share one guard). Handles held
//!    elsewhere (a `Cluster`, a `System` the node was started in) keep it open. Outside a tokio
//!    runtime, the drop only aborts the node's tasks.
//! 3. [`Node::start_in`] attaches the node to a `System`: its shutdown closes the node in its
//!    last phase, [`troupe::Phase::CloseNode`], after the cluster was left and the actors and
//!    the replicator stopped.
//! 4. A name given with [`Node::export_child`] is resolved, at each message (or lookup) that
//!    names it, to the child's current incarnation: after a restart the name reaches the new
//!    actor. While no incarnation is alive (mid-restart) the name is unknown there (the sender
//!    sees a refusal, its ask fails), as for a name that was never exported. A ref from
//!    [`Node::lookup`] addresses the incarnation it found; one from [`Node::remote_ref`]
//!    addresses the name, so it follows the restarts.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use troupe::lifecycle::{Phase, Service, StopFuture};
use troupe::supervisor::ChildRef;
use troupe::{AnyRef, System};

use super::refs::{self, Export};
use super::{conn, Node, NodeInner};
use crate::config::NodeConfig;
use crate::error::{Error, ErrorKind};
use crate::types::{self, RemoteMessage};

/// Closes the node when the last [`Node`] handle is dropped (rule 2).
pub(crate) struct Guard(pub(crate) Weak<NodeInner>);

impl Drop for Guard {
    fn drop(&mut self) {
        let Some(inner) = self.0.upgrade() else { return };
        if tokio::runtime::Handle::try_current().is_ok() {
            inner.close();
        } else {
            inner.closed.store(true, Ordering::Release);
            for t in inner.tasks.lock().drain(..) {
                t.abort();
            }
        }
    }
}

impl NodeInner {
    /// Rule 1.
    pub(crate) fn close(self: &Arc<Self>) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for t in self.tasks.lock().iter() {
            t.abort();
        }
        for p in self.all_peers() {
            p.keep.store(false, Ordering::Relaxed);
            conn::peer_down(self, &p, None, conn::Cause::Local, "this node shut down");
        }
        self.exports.write().clear();
        self.names.write().clear();
        self.followed.write().clear();
    }

    /// Rule 4: the export of `f`'s live incarnation, made on first use.
    pub(crate) fn follow(self: &Arc<Self>, f: &dyn Follow) -> Option<(u64, Arc<Export>)> {
        let id = f.live()?.id().seq();
        if let Some(e) = self.exports.read().get(&id).filter(|e| e.any.is_alive()) {
            return Some((id, e.clone()));
        }
        let id = self.export_anonymous(f.parts()?);
        self.exports.read().get(&id).cloned().map(|e| (id, e))
    }
}

/// A supervised child as [`Node::export_child`] holds it (rule 4).
pub(crate) trait Follow: Send + Sync {
    /// Its live incarnation.
    fn live(&self) -> Option<AnyRef>;
    /// The export of its live incarnation.
    fn parts(&self) -> Option<Export>;
}

impl<M: RemoteMessage> Follow for ChildRef<M> {
    fn live(&self) -> Option<AnyRef> {
        self.get().map(|r| r.any())
    }
    fn parts(&self) -> Option<Export> {
        self.get().map(|r| refs::export_parts(&r))
    }
}

impl Node {
    /// [`Node::start`], then attaches the node to `system` (rule 3): `system.shutdown()`
    /// closes it in its last phase, and the system keeps it open until then.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe::System;
    /// use troupe_remote::{Node, NodeConfig};
    /// let sys = System::new();
    /// let node = Node::start_in(&sys, NodeConfig::new("a", "secret")).await.unwrap();
    /// let port = node.addr();
    /// let report = sys.shutdown().await;
    /// assert!(report.timed_out().is_empty());
    /// // The port is free again.
    /// let _again = tokio::net::TcpListener::bind(&port).await.unwrap();
    /// # }
    /// ```
    pub async fn start_in(system: &System, cfg: NodeConfig) -> Result<Node, Error> {
        let node = Node::start(cfg).await?;
        system.attach(node.clone());
        Ok(node)
    }

    /// Closes the node as [`Node::shutdown`] does and waits until its listener and
    /// background tasks have ended: when it returns, the listen port is free (rule 1).
    pub async fn shutdown_and_wait(&self) {
        self.inner.close();
        let tasks = std::mem::take(&mut *self.inner.tasks.lock());
        for t in tasks {
            let _ = t.await;
        }
    }

    /// Makes the supervised child `child` reachable from other nodes as `name`, following it
    /// across restarts (rule 4): each message sent to `name` goes to the incarnation alive
    /// when it arrives.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// use troupe::{Actor, Ctx};
    /// use troupe_remote::{Node, NodeConfig};
    ///
    /// struct Worker;
    /// impl Actor for Worker {
    ///     type Msg = String;
    ///     async fn handle(&mut self, _: String, _: &mut Ctx<Self>) {}
    /// }
    /// let spec = ChildSpec::worker("worker", || Worker);
    /// let child = spec.handle();
    /// let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
    /// let node = Node::start(NodeConfig::new("a", "secret")).await.unwrap();
    /// node.export_child("worker", &child).unwrap();
    /// // Another node reaches it with `remote_ref::<String>(addr, "worker")`, before and
    /// // after the supervisor restarts it.
    /// sup.stop().await;
    /// node.shutdown();
    /// # }
    /// ```
    pub fn export_child<M: RemoteMessage>(&self, name: &str, child: &ChildRef<M>) -> Result<(), Error> {
        types::register::<M>();
        let names = self.inner.names.read();
        let mut followed = self.inner.followed.write();
        let taken = followed.contains_key(name)
            || names.get(name).is_some_and(|id| self.inner.exports.read().get(id).is_some_and(|e| e.any.is_alive()));
        if taken {
            return Err(ErrorKind::NameTaken(name.to_owned()).into());
        }
        followed.insert(name.to_owned(), Arc::new(child.clone()));
        Ok(())
    }
}

/// A node is a service of the system it was started in (rule 3).
impl Service for Node {
    fn name(&self) -> &str {
        Node::name(self)
    }

    fn phase(&self) -> Phase {
        Phase::CloseNode
    }

    fn stop(&self) -> StopFuture {
        let node = self.clone();
        Box::pin(async move { node.shutdown_and_wait().await })
    }
}
