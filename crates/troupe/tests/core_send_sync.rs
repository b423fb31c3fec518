//! Compile-time checks that the public handles, errors and futures of the core are `Send`
//! (and `Sync` where they are shared): an application can hold them in other tasks and
//! `tokio::spawn` the futures. A change that breaks one fails to compile this file.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use troupe::pool::{self, Pool, PoolSpec};
use troupe::supervisor::{self, ChildRef, SimpleSupervisorRef, SupervisorError, SupervisorMsg, SupervisorRef};
use troupe::{
    Actor, ActorError, ActorId, ActorRef, AnyRef, AskError, Ctx, ExitReason, LinkError, RegistryError, ReplyTo,
    SendError, SendErrorKind, System,
};

fn require_send<T: Send>() {}
fn require_sync<T: Sync>() {}
fn require_handle<T: Send + Sync + Clone + 'static>() {}
fn require_error<E: std::error::Error + Send + Sync + 'static>() {}
fn require_send_future<F: Future + Send>(_: &F) {}

enum Msg {
    Get(ReplyTo<u32>),
}

struct Worker;
impl Actor for Worker {
    type Msg = Msg;
    async fn handle(&mut self, Msg::Get(r): Msg, _: &mut Ctx<Self>) {
        r.send(1);
    }
}

#[test]
fn handles_are_send_sync_and_clone() {
    require_handle::<ActorRef<Msg>>();
    require_handle::<AnyRef>();
    require_handle::<ChildRef<Msg>>();
    require_handle::<SupervisorRef>();
    require_handle::<ActorRef<SupervisorMsg>>();
    require_handle::<SimpleSupervisorRef<u32, Msg>>();
    require_handle::<Pool<Msg>>();
    require_send::<System>();
    require_sync::<System>();
    require_send::<ReplyTo<u32>>();
    require_sync::<ReplyTo<u32>>();
    require_handle::<ActorId>();
    require_handle::<ExitReason>();
}

#[test]
fn errors_are_send_sync_static_errors() {
    require_error::<ActorError>();
    require_error::<AskError>();
    require_error::<SendError<Msg>>();
    require_error::<SendError<()>>();
    require_error::<RegistryError>();
    require_error::<LinkError>();
    require_error::<SupervisorError>();
    require_send::<SendErrorKind>();
}

/// Never called: it only has to compile (the compiler type-checks dead code too), which
/// proves each future is `Send`.
async fn futures_are_send(
    r: ActorRef<Msg>,
    any: AnyRef,
    sys: System,
    sup: SupervisorRef,
    child: ChildRef<Msg>,
    p: Pool<Msg>,
) {
    let t = Duration::from_secs(1);
    require_send_future(&r.ask(Msg::Get, t));
    require_send_future(&r.send_wait(Msg::Get(todo_reply())));
    require_send_future(&r.terminated());
    require_send_future(&any.terminated());
    require_send_future(&sys.shutdown());
    require_send_future(&supervisor::start(supervisor::SupervisorSpec::new(supervisor::Strategy::OneForOne)));
    require_send_future(&sup.which_children());
    require_send_future(&sup.count_children());
    require_send_future(&sup.terminate_child("w"));
    require_send_future(&sup.restart_child("w"));
    require_send_future(&sup.delete_child("w"));
    require_send_future(&sup.get_childspec("w"));
    require_send_future(&sup.start_child(supervisor::ChildSpec::worker("w", || Worker)));
    require_send_future(&sup.stop());
    require_send_future(&child.ask(Msg::Get, t));
    require_send_future(&child.current(t));
    require_send_future(&pool::start(PoolSpec::new(2, |_| Worker)));
    require_send_future(&p.ask(Msg::Get, t));
    require_send_future(&p.stop());
    require_send_future(&supervisor::start_simple(supervisor::SimpleSpec::new(|_: u32| Worker)));
    require_send_future(&troupe::compute(|| 1));
}

fn todo_reply() -> ReplyTo<u32> {
    ReplyTo::from_fn(|_| {})
}
