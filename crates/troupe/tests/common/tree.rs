//! A supervisor of probes built in a line ([`Builder`]), with a typed handle per child
//! ([`Tree`]), for the supervision tests.

use std::collections::HashMap;

use troupe::supervisor::{
    self, ChildRef, ChildSpec, Restart, SupervisorError, SupervisorRef, SupervisorSpec, WorkerSpec,
};
use troupe::ActorId;

use super::{Cmd, Log, Probe};

/// A supervisor of probes, with a typed handle per child.
pub struct Tree {
    pub sup: SupervisorRef,
    pub handles: HashMap<String, ChildRef<Cmd>>,
}

pub struct Builder {
    spec: SupervisorSpec,
    handles: HashMap<String, ChildRef<Cmd>>,
    lg: Log,
}

impl Builder {
    pub fn new(spec: SupervisorSpec, lg: &Log) -> Self {
        Self { spec, handles: HashMap::new(), lg: lg.clone() }
    }

    pub fn probe(self, name: &str, restart: Restart) -> Self {
        self.probe_with(name, restart, |w| w, |_| {})
    }

    pub fn probe_with(
        mut self,
        name: &str,
        restart: Restart,
        spec: impl FnOnce(WorkerSpec<Probe>) -> WorkerSpec<Probe>,
        tweak: impl Fn(&mut Probe) + Send + Sync + 'static,
    ) -> Self {
        let (n, lg) = (name.to_owned(), self.lg.clone());
        let w = spec(
            ChildSpec::worker(name, move || {
                let mut p = Probe::new(&n, &lg);
                tweak(&mut p);
                p
            })
            .restart(restart),
        );
        self.handles.insert(name.to_owned(), w.handle());
        self.spec = self.spec.child(w);
        self
    }

    pub async fn start(self) -> Result<Tree, SupervisorError> {
        Ok(Tree { sup: supervisor::start(self.spec).await?, handles: self.handles })
    }
}

impl Tree {
    pub async fn ids(&self) -> Vec<(String, Option<ActorId>)> {
        self.sup.which_children().await.unwrap().into_iter().map(|c| (c.id, c.actor.map(|a| a.id()))).collect()
    }

    pub fn child(&self, id: &str) -> troupe::ActorRef<Cmd> {
        self.handles[id].get().expect("child running")
    }

    /// Kills the current incarnation of `id` and returns once the supervisor has handled the
    /// exit (the exit signal is on its system lane before `terminated` answers, so the next
    /// call to it sees the result).
    pub async fn crash(&self, id: &str) {
        let c = self.child(id);
        c.kill();
        c.terminated().await;
        self.ids().await;
    }
}
