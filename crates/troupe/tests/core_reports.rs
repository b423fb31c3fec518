//! Crash and supervisor reports (`reports.rs` rules 1-3): `tracing` events for a crash, a child
//! terminated, restarted, the escalation and the shutdown; actor panics kept off the process's
//! panic hook, other panics still reaching it. One test, in its own binary: the panic hook is
//! process-wide.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use troupe::testkit::TestProbe;
use troupe::{Actor, Ctx, ExitReason, Spawn};

/// Collects what the fmt subscriber writes.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Crasher;

impl Actor for Crasher {
    type Msg = &'static str;
    async fn handle(&mut self, m: &'static str, _: &mut Ctx<Self>) {
        panic!("{m}");
    }
}

#[test]
fn crashes_and_supervision_are_reported_and_actor_panics_skip_the_hook() {
    let hooked = Arc::new(AtomicUsize::new(0));
    let seen = hooked.clone();
    std::panic::set_hook(Box::new(move |info| {
        seen.fetch_add(1, Ordering::SeqCst);
        eprintln!("{info}");
    }));
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let t = Duration::from_secs(10);
        // A crash of a registered actor: one crash report naming it.
        let a = troupe::spawn(Crasher);
        troupe::register("reports-crasher", &a).unwrap();
        a.send("first crash").unwrap();
        assert!(matches!(a.terminated().await, ExitReason::Panicked(_)));
        // A named actor: the name is in its report, and readable while it lives.
        let named = troupe::spawn_with(Crasher, Spawn::new().name("named-one"));
        assert_eq!(named.any().name().as_deref(), Some("named-one"));
        named.send("named crash").unwrap();
        named.terminated().await;

        // A supervised child crashing twice with intensity 1: terminated, restarted, terminated,
        // escalation, shutdown.
        let spec = ChildSpec::worker("crasher", || Crasher);
        let child = spec.handle();
        let sup = supervisor::start(
            SupervisorSpec::new(Strategy::OneForOne).intensity(1, Duration::from_secs(5)).child(spec),
        )
        .await
        .unwrap();
        let mut probe = TestProbe::<()>::new();
        probe.monitor(&sup.any());
        let first = child.current(t).await.unwrap();
        assert_eq!(first.any().name().as_deref(), Some("crasher"));
        first.send("in the tree").unwrap();
        let second = child.current_after(first.id(), t).await.unwrap();
        second.send("again").unwrap();
        assert_eq!(probe.expect_down(t).await.reason, ExitReason::Shutdown);
    });
    assert_eq!(hooked.load(Ordering::SeqCst), 0, "actor panics do not reach the panic hook");
    let _ = std::panic::catch_unwind(|| panic!("outside any actor"));
    assert_eq!(hooked.load(Ordering::SeqCst), 1, "other panics still do");

    let out = String::from_utf8(buf.0.lock().clone()).unwrap();
    let count = |what: &str| out.lines().filter(|l| l.contains(what)).count();
    assert_eq!(count("actor crashed"), 4, "{out}");
    assert!(out.contains("name=\"named-one\""), "{out}");
    assert!(out.contains("name=\"reports-crasher\""), "{out}");
    assert_eq!(count("name=\"crasher\""), 2, "a supervised child is named by its id: {out}");
    assert!(out.contains("first crash"), "{out}");
    assert_eq!(count("child terminated"), 2, "{out}");
    assert_eq!(count("child restarted"), 1, "{out}");
    assert_eq!(count("restart intensity exceeded"), 1, "{out}");
    assert_eq!(count("supervisor shut down"), 1, "{out}");
    assert!(out.contains("ERROR") && !out.contains("stack backtrace"), "{out}");
}
