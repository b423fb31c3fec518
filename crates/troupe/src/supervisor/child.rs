//! Child specifications ([`ChildSpec`], built from [`WorkerSpec`]) and what the supervisor
//! reports about its children ([`ChildInfo`], [`ChildCount`]).

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::child_ref::ChildRef;
use super::server::Supervisor;
use super::spec::{ChildKind, Restart, Shutdown, SupervisorSpec};
use super::SupervisorError;
use crate::any_ref::AnyRef;
use crate::reports::Placement;
use crate::spawn::{spawn_acked, Spawn};
use crate::{Actor, ExitReason, MailboxConfig};

/// What a start gives: the child, `None` when it returned ignore, or why it failed.
type StartFuture = Pin<Box<dyn Future<Output = Result<Option<AnyRef>, ExitReason>> + Send>>;
/// Starts the child under the supervisor `AnyRef`, placed as the `Placement` says.
type StartFn = Arc<dyn Fn(AnyRef, Arc<Placement>) -> StartFuture + Send + Sync>;

/// A child as its supervisor holds it: how to start it, when to restart it, how to stop it.
#[derive(Clone)]
pub struct ChildSpec {
    pub(crate) id: String,
    pub(crate) restart: Restart,
    pub(crate) shutdown: Shutdown,
    pub(crate) kind: ChildKind,
    pub(crate) significant: bool,
    /// The id of the template it was made from (`WorkerSpec::template`): its `child` label.
    pub(crate) template: Option<Arc<str>>,
    pub(crate) start: StartFn,
    nested: Option<Box<SupervisorSpec>>,
}

impl ChildSpec {
    /// A worker child made by `factory` at each (re)start: a fresh state every time.
    /// Defaults (OTP's): `Permanent`, shutdown `Timeout(5 s)`.
    pub fn worker<A: Actor>(id: impl Into<String>, factory: impl Fn() -> A + Send + Sync + 'static) -> WorkerSpec<A> {
        Self::worker_or_ignore(id, move || Some(factory()))
    }

    /// A worker whose start may return ignore (OTP's `ignore` from a start function): when
    /// `factory` gives `None`, nothing starts; the supervisor keeps the child in its spec, not
    /// running (a temporary one is dropped), and does not count it as a failure.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe::{Actor, Ctx};
    /// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// struct W;
    /// impl Actor for W {
    ///     type Msg = ();
    ///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    /// }
    /// let enabled = false;
    /// let spec = ChildSpec::worker_or_ignore("optional", move || enabled.then_some(W));
    /// let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
    /// let kids = sup.which_children().await.unwrap();
    /// assert!(kids[0].actor.is_none());
    /// # }
    /// ```
    pub fn worker_or_ignore<A: Actor>(
        id: impl Into<String>,
        factory: impl Fn() -> Option<A> + Send + Sync + 'static,
    ) -> WorkerSpec<A> {
        WorkerSpec {
            id: id.into(),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(Duration::from_secs(5)),
            kind: ChildKind::Worker,
            mailbox: MailboxConfig::unbounded(),
            factory: Arc::new(factory),
            handle: ChildRef::new(),
            significant: false,
            template: None,
            nested: None,
        }
    }

    /// A child supervisor. Defaults: `Permanent`, shutdown `Infinity`.
    pub fn supervisor(id: impl Into<String>, spec: SupervisorSpec) -> WorkerSpec<Supervisor> {
        let nested = spec.clone();
        let mut w = ChildSpec::worker(id, move || Supervisor::new(spec.clone()));
        w.kind = ChildKind::Supervisor;
        w.shutdown = Shutdown::Infinity;
        w.nested = Some(Box::new(nested));
        w
    }

    /// The child's id within its supervisor.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its restart type.
    #[must_use]
    pub fn restart_type(&self) -> Restart {
        self.restart
    }

    /// How it is stopped.
    #[must_use]
    pub fn shutdown_type(&self) -> Shutdown {
        self.shutdown
    }

    /// Worker or supervisor.
    #[must_use]
    pub fn kind(&self) -> ChildKind {
        self.kind
    }

    /// Whether it is significant (see [`WorkerSpec::significant`]).
    #[must_use]
    pub fn is_significant(&self) -> bool {
        self.significant
    }

    /// The id of the template it was made from ([`WorkerSpec::template`]), if any.
    #[must_use]
    pub fn template(&self) -> Option<&str> {
        self.template.as_deref()
    }

    /// Its `child` label in metrics and the last step of a child supervisor's path
    /// (`reports.rs` rule 5): the template id, else the id.
    pub(crate) fn label(&self) -> Arc<str> {
        self.template.clone().unwrap_or_else(|| self.id.as_str().into())
    }

    pub(crate) fn validate(&self) -> Result<(), SupervisorError> {
        if self.id.is_empty() {
            return Err(SupervisorError::InvalidSpec { field: "child.id".into(), problem: "must not be empty".into() });
        }
        if self.shutdown == Shutdown::Timeout(Duration::ZERO) {
            return Err(SupervisorError::InvalidSpec {
                field: format!("child {:?} shutdown", self.id),
                problem: "Timeout(0) would kill at once; use Shutdown::Brutal for that".into(),
            });
        }
        if self.template.as_deref().is_some_and(|t| t.is_empty() || t.contains('/')) {
            return Err(SupervisorError::InvalidSpec {
                field: format!("child {:?} template", self.id),
                problem: "must be non-empty and contain no '/' (it is a metrics label and a path step)".into(),
            });
        }
        if self.significant && self.restart == Restart::Permanent {
            return Err(SupervisorError::InvalidSpec {
                field: format!("child {:?} significant", self.id),
                problem: "a permanent child cannot be significant (OTP): make it Transient or Temporary".into(),
            });
        }
        if let Some(n) = &self.nested {
            n.validate()?;
        }
        Ok(())
    }
}

/// A typed worker spec: set restart, shutdown and mailbox, take a [`ChildRef`], then hand it to
/// [`SupervisorSpec::child`] or [`super::SupervisorRef::start_child`].
#[must_use]
pub struct WorkerSpec<A: Actor> {
    id: String,
    restart: Restart,
    shutdown: Shutdown,
    kind: ChildKind,
    mailbox: MailboxConfig,
    factory: Arc<dyn Fn() -> Option<A> + Send + Sync>,
    handle: ChildRef<A::Msg>,
    significant: bool,
    template: Option<Arc<str>>,
    nested: Option<Box<SupervisorSpec>>,
}

impl<A: Actor> WorkerSpec<A> {
    /// Sets the restart type.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Sets how the child is stopped.
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Marks the child significant (OTP): its exit without a restart can shut the supervisor
    /// down, per the supervisor's [`super::AutoShutdown`]. Only for `Transient` and `Temporary`
    /// children of a supervisor whose auto-shutdown is not `Never`.
    pub fn significant(mut self, significant: bool) -> Self {
        self.significant = significant;
        self
    }

    /// Marks the child as one of many made from one template (connections, sessions, a pool's
    /// workers): its metrics are labelled `child=template` instead of its own id, so however
    /// many such children come and go the label set stays one (`reports.rs` rule 5). Reports
    /// still name the child by its id. Must be non-empty and contain no `/`.
    ///
    /// ```
    /// use troupe::{Actor, Ctx};
    /// use troupe::supervisor::{ChildSpec, SupervisorSpec, Strategy};
    /// struct Conn;
    /// impl Actor for Conn {
    ///     type Msg = ();
    ///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    /// }
    /// let spec: ChildSpec = ChildSpec::worker("conn-17", || Conn).template("conn").into();
    /// assert_eq!((spec.id(), spec.template()), ("conn-17", Some("conn")));
    /// ```
    pub fn template(mut self, id: impl Into<String>) -> Self {
        self.template = Some(id.into().into());
        self
    }

    /// Sets the child's mailbox.
    pub fn mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// A handle that resolves to the child's current incarnation, across restarts.
    #[must_use]
    pub fn handle(&self) -> ChildRef<A::Msg> {
        self.handle.clone()
    }
}

impl<A: Actor> From<WorkerSpec<A>> for ChildSpec {
    fn from(w: WorkerSpec<A>) -> Self {
        let (factory, handle, mailbox, id) = (w.factory, w.handle, w.mailbox, w.id.clone());
        // Children are named by their id (reports.rs), when they have one at this point.
        let label: Option<Arc<str>> = (!id.is_empty()).then(|| id.as_str().into());
        let start: StartFn = Arc::new(move |sup: AnyRef, at: Arc<Placement>| -> StartFuture {
            let actor = match catch_unwind(AssertUnwindSafe(|| factory())) {
                Ok(Some(a)) => a,
                Ok(None) => return Box::pin(async { Ok(None) }),
                Err(_) => {
                    let reason = ExitReason::Panicked(format!("the factory of child {id:?} panicked"));
                    return Box::pin(async move { Err(reason) });
                }
            };
            let mut opts = Spawn::new().mailbox(mailbox).placed(at);
            if let Some(label) = &label {
                opts = opts.name(label.clone());
            }
            let (child, ack) = spawn_acked(actor, opts, Some(sup.clone()));
            sup.0.add_link(child.any());
            let handle = handle.clone();
            Box::pin(async move {
                match ack.await {
                    Ok(Ok(())) => {
                        handle.set(child.clone());
                        Ok(Some(child.any()))
                    }
                    Ok(Err(_)) | Err(_) => Err(child.terminated().await),
                }
            })
        });
        ChildSpec {
            id: w.id,
            restart: w.restart,
            shutdown: w.shutdown,
            kind: w.kind,
            significant: w.significant,
            template: w.template,
            start,
            nested: w.nested,
        }
    }
}

/// What [`super::SupervisorRef::count_children`] answers (OTP's `count_children`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ChildCount {
    /// Children in the spec, running or not.
    pub specs: usize,
    /// Children running now.
    pub active: usize,
    /// Children of kind supervisor, running or not.
    pub supervisors: usize,
    /// Children of kind worker, running or not.
    pub workers: usize,
}

/// One row of [`super::SupervisorRef::which_children`].
#[derive(Clone, Debug)]
pub struct ChildInfo {
    /// The child's id.
    pub id: String,
    /// The running incarnation, if any.
    pub actor: Option<AnyRef>,
    /// Worker or supervisor.
    pub kind: ChildKind,
    /// Its restart type.
    pub restart: Restart,
    /// Its restart failed and a retry is queued (OTP shows `restarting` for its pid).
    pub restarting: bool,
}
