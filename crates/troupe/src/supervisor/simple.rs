//! A `simple_one_for_one` supervisor (OTP): one child template; children are started at run
//! time, each from an argument, restarted with the same argument, and all stopped at once.
//! The rules are rule 13 in `server.rs`; tests in `tests/supervision_simple.rs`.
//!
//! ```
//! # #[tokio::main] async fn main() {
//! use troupe::{Actor, Ctx, ReplyTo};
//! use troupe::supervisor::{self, Restart, SimpleSpec};
//! struct Conn(u16);
//! impl Actor for Conn {
//!     type Msg = ReplyTo<u16>;
//!     async fn handle(&mut self, r: ReplyTo<u16>, _: &mut Ctx<Self>) { r.send(self.0) }
//! }
//! let pool = supervisor::start_simple(SimpleSpec::new(Conn).restart(Restart::Transient)).await.unwrap();
//! let c = pool.start_child(8080).await.unwrap().expect("started");
//! assert_eq!(c.ask(|r| r, std::time::Duration::from_secs(5)).await.unwrap(), 8080);
//! pool.terminate_child(c.id()).await.unwrap();
//! assert_eq!(pool.count_children().await.unwrap().specs, 0);
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use super::child::{ChildCount, ChildInfo, ChildSpec};
use super::server::{Cmd, SupervisorMsg};
use super::spec::{IntensityWindow, Restart, Shutdown, Strategy, SupervisorSpec};
use super::{SupervisorError, SupervisorRef};
use crate::{Actor, ActorId, ActorRef, AnyRef, ExitReason, MailboxConfig};

type Make<Arg, M> = Arc<dyn Fn(Arg) -> (ChildSpec, super::ChildRef<M>) + Send + Sync>;

/// The template of a simple supervisor's children, and the supervisor's own settings. Defaults
/// are OTP's: `Permanent`, shutdown `Timeout(5 s)`, intensity 1 per 5 s in whole seconds.
#[must_use]
pub struct SimpleSpec<Arg, A: Actor> {
    factory: Arc<dyn Fn(Arg) -> Option<A> + Send + Sync>,
    restart: Restart,
    shutdown: Shutdown,
    mailbox: MailboxConfig,
    id: String,
    sup: SupervisorSpec,
}

impl<Arg: Clone + Send + Sync + 'static, A: Actor> SimpleSpec<Arg, A> {
    /// Children made by `factory` from the argument given to `start_child`.
    pub fn new(factory: impl Fn(Arg) -> A + Send + Sync + 'static) -> Self {
        Self::new_or_ignore(move |arg| Some(factory(arg)))
    }

    /// As [`SimpleSpec::new`], where `None` is OTP's `ignore`: nothing starts, and the child is
    /// not kept.
    pub fn new_or_ignore(factory: impl Fn(Arg) -> Option<A> + Send + Sync + 'static) -> Self {
        let mut sup = SupervisorSpec::new(Strategy::OneForOne);
        sup.simple = true;
        Self {
            factory: Arc::new(factory),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(Duration::from_secs(5)),
            mailbox: MailboxConfig::unbounded(),
            id: "child".to_owned(),
            sup,
        }
    }

    /// The template's id (default `child`): every child's `child` label in metrics, so the
    /// label set stays one however many children come and go (`reports.rs` rule 5). Children
    /// keep generated ids (`child-N`) in reports and `which_children`. Must be non-empty and
    /// contain no `/`.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe::{Actor, Ctx};
    /// use troupe::supervisor::{self, SimpleSpec};
    /// struct Conn;
    /// impl Actor for Conn {
    ///     type Msg = ();
    ///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    /// }
    /// let err = supervisor::start_simple(SimpleSpec::new(|_: u16| Conn).id("conn/1")).await.err().unwrap();
    /// assert!(err.to_string().contains("SimpleSpec::id"), "{err}");
    /// let ok = supervisor::start_simple(SimpleSpec::new(|_: u16| Conn).name("conns").id("conn")).await.unwrap();
    /// ok.stop().await;
    /// # }
    /// ```
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Names the supervisor: its path is `/name` (see [`SupervisorSpec::name`]).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.sup = self.sup.name(name);
        self
    }

    /// The children's restart type.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// How the children are stopped.
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// The children's mailbox.
    pub fn mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// See [`SupervisorSpec::intensity`].
    pub fn intensity(mut self, intensity: u32, period: Duration) -> Self {
        self.sup = self.sup.intensity(intensity, period);
        self
    }

    /// See [`SupervisorSpec::window`].
    pub fn window(mut self, window: IntensityWindow) -> Self {
        self.sup = self.sup.window(window);
        self
    }

    /// See [`SupervisorSpec::max_children`].
    pub fn max_children(mut self, max: usize) -> Self {
        self.sup = self.sup.max_children(max);
        self
    }
}

/// Starts a simple supervisor (no children yet).
pub async fn start_simple<Arg: Clone + Send + Sync + 'static, A: Actor>(
    spec: SimpleSpec<Arg, A>,
) -> Result<SimpleSupervisorRef<Arg, A::Msg>, SupervisorError> {
    let SimpleSpec { factory, restart, shutdown, mailbox, id, sup } = spec;
    if id.is_empty() || id.contains('/') {
        return Err(SupervisorError::InvalidSpec {
            field: "SimpleSpec::id".into(),
            problem: format!("must be non-empty and contain no '/' (it is every child's metrics label), got {id:?}"),
        });
    }
    let probe =
        ChildSpec::worker_or_ignore("template", || None::<A>).restart(restart).shutdown(shutdown).template(id.clone());
    ChildSpec::from(probe).validate()?;
    let make: Make<Arg, A::Msg> = Arc::new(move |arg: Arg| {
        let f = factory.clone();
        let w = ChildSpec::worker_or_ignore("", move || f(arg.clone()))
            .template(id.clone())
            .restart(restart)
            .shutdown(shutdown)
            .mailbox(mailbox);
        let handle = w.handle();
        (w.into(), handle)
    });
    Ok(SimpleSupervisorRef { sup: super::start(sup).await?, make })
}

/// A handle to a simple supervisor.
#[must_use]
pub struct SimpleSupervisorRef<Arg, M> {
    sup: SupervisorRef,
    make: Make<Arg, M>,
}

impl<Arg, M> Clone for SimpleSupervisorRef<Arg, M> {
    fn clone(&self) -> Self {
        Self { sup: self.sup.clone(), make: self.make.clone() }
    }
}

impl<Arg: Send + 'static, M: Send + 'static> SimpleSupervisorRef<Arg, M> {
    /// Starts a child from `arg` (OTP `start_child(Sup, Args)`); `Ok(None)` when the factory
    /// returned ignore. A restart of this child uses the same `arg`.
    pub async fn start_child(&self, arg: Arg) -> Result<Option<ActorRef<M>>, SupervisorError> {
        let (spec, handle) = (self.make)(arg);
        Ok(match self.sup.start_child(spec).await? {
            Some(_) => handle.latest(),
            None => None,
        })
    }

    /// Stops the child that is actor `id` and forgets it (OTP `terminate_child(Sup, Pid)`);
    /// `NoSuchChild` when it is not a running child.
    pub async fn terminate_child(&self, id: ActorId) -> Result<(), SupervisorError> {
        self.sup.actor().ask(|r| SupervisorMsg(Cmd::TerminateActor(id, r)), self.sup.call_timeout()).await?
    }

    /// The children, in start order (ids are generated: `child-N`).
    pub async fn which_children(&self) -> Result<Vec<ChildInfo>, SupervisorError> {
        self.sup.which_children().await
    }

    /// See [`SupervisorRef::count_children`].
    pub async fn count_children(&self) -> Result<ChildCount, SupervisorError> {
        self.sup.count_children().await
    }

    /// Stops it: all children at once, then the supervisor. Returns its exit reason.
    pub async fn stop(&self) -> ExitReason {
        self.sup.stop().await
    }

    /// Waits until it has stopped.
    pub async fn terminated(&self) -> ExitReason {
        self.sup.terminated().await
    }

    /// The supervisor as an untyped ref (to link, monitor, or supervise it).
    #[must_use]
    pub fn any(&self) -> AnyRef {
        self.sup.any()
    }

    /// The supervisor's actor ref.
    #[must_use]
    pub fn actor(&self) -> &ActorRef<SupervisorMsg> {
        self.sup.actor()
    }
}
