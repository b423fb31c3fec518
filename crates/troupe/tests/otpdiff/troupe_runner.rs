//! Runs a scenario on Troupe and writes the same normalised trace as the escript.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use troupe::supervisor::{
    self, AutoShutdown, ChildInfo, ChildKind, ChildRef, ChildSpec, Restart, Shutdown, SimpleSpec, Strategy,
    SupervisorError, SupervisorMsg, SupervisorRef, SupervisorSpec,
};
use troupe::{Actor, ActorError, AnyRef, Ctx, ExitReason, ExitSignal};

use super::scenario::{fails_text, step_text, Child, Outcome, Scenario, Step};

/// How many times the runner looks for a settled tree before it prints what it has.
const SETTLE_TRIES: usize = 20_000;

/// Between two looks at an unsettled tree (try `left` of [`SETTLE_TRIES`]): a yield for the
/// first thousand (a restart usually completes within a few), then 1 ms, so a loaded machine
/// gets about 19 s before an unsettled tree is printed (10,000 yields alone once printed a
/// nested supervisor mid-restart on a loaded CI machine).
async fn settle_pause(left: usize) {
    if left > SETTLE_TRIES - 1_000 {
        tokio::task::yield_now().await;
    } else {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

type Log = Arc<Mutex<Vec<String>>>;

/// Start counts and the start numbers that fail or ignore, per id, shared by every incarnation.
#[derive(Default)]
struct Starts {
    counts: Mutex<HashMap<String, Arc<AtomicUsize>>>,
    fails: HashMap<String, Vec<(usize, Outcome)>>,
    gate: Gate,
}

/// `crash_which`'s gate: once armed, the next failing start waits until the runner lets it go.
#[derive(Clone, Default)]
struct Gate(Arc<Mutex<GateState>>);

#[derive(Default)]
struct GateState {
    armed: bool,
    waiting: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Gate {
    fn arm(&self) {
        self.0.lock().armed = true;
    }

    /// For a failing start: when armed, disarms it and gives what to wait on.
    fn enter(&self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let mut g = self.0.lock();
        if !std::mem::take(&mut g.armed) {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        g.waiting = Some(tx);
        Some(rx)
    }

    fn is_waiting(&self) -> bool {
        self.0.lock().waiting.is_some()
    }

    /// Lets the waiting start go (if any) and disarms the gate.
    fn release(&self) {
        let mut g = self.0.lock();
        g.armed = false;
        if let Some(tx) = g.waiting.take() {
            let _ = tx.send(());
        }
    }
}

impl Starts {
    /// Counts a start of `id` and says what it must do.
    fn next(&self, id: &str) -> Option<Outcome> {
        let counter = self.counts.lock().entry(id.to_owned()).or_default().clone();
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        self.fails.get(id).and_then(|f| f.iter().find(|(m, _)| *m == n)).map(|(_, o)| *o)
    }
}

/// The child: fails the starts listed for its id (the factory returns ignore for those so
/// marked), logs its start and every graceful stop (as the escript's child, which traps exits so
/// `terminate` runs on every graceful stop).
struct OtpChild {
    id: String,
    log: Log,
    fail: bool,
    /// A simple supervisor's children register their name here (its children have no id).
    names: Option<Names>,
    gate: Gate,
}

type Names = Arc<Mutex<HashMap<troupe::ActorId, String>>>;

impl Actor for OtpChild {
    type Msg = ();

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        // As the escript's gen_server: it traps exits, and an exit signal from its parent ends
        // it with that reason, running `stopped` (gen_server's `terminate`).
        ctx.trap_exit(true);
        if let Some(names) = &self.names {
            names.lock().insert(ctx.id(), self.id.clone());
        }
        if self.fail {
            if let Some(go) = self.gate.enter() {
                let _ = tokio::time::timeout(Duration::from_secs(10), go).await;
            }
            self.log.lock().push(format!("{}:failed", self.id));
            return Err(ActorError::new("failed"));
        }
        self.log.lock().push(format!("{}:started", self.id));
        Ok(())
    }

    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}

    async fn on_exit(&mut self, sig: ExitSignal, ctx: &mut Ctx<Self>) {
        if Some(sig.from) == ctx.parent() {
            ctx.stop(sig.reason);
        }
    }

    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        self.log.lock().push(format!("{}:stopped:{}", self.id, reason_text(reason)));
    }
}

fn reason_text(r: &ExitReason) -> String {
    match r {
        ExitReason::Normal => "normal".into(),
        ExitReason::Shutdown => "shutdown".into(),
        ExitReason::ShutdownWith(_) => "shutdown_term".into(),
        ExitReason::Killed => "killed".into(),
        ExitReason::Error(m) | ExitReason::Panicked(m) => m.clone(),
        other => other.to_string(),
    }
}

fn reason_of(text: &str) -> ExitReason {
    match text {
        "normal" => ExitReason::Normal,
        "shutdown" => ExitReason::Shutdown,
        "shutdown_term" => ExitReason::ShutdownWith("x".into()),
        "killed" => ExitReason::Killed,
        other => ExitReason::Error(other.into()),
    }
}

/// The handles of child supervisors, by id, to look inside them.
type Sups = Arc<Mutex<HashMap<String, ChildRef<SupervisorMsg>>>>;

fn strategy(s: &str) -> Strategy {
    match s {
        "one_for_one" => Strategy::OneForOne,
        "one_for_all" => Strategy::OneForAll,
        _ => Strategy::RestForOne,
    }
}

fn child_spec(c: &Child, log: &Log, starts: &Arc<Starts>, sups: &Sups, period: u64) -> ChildSpec {
    let (id, log, starts) = (c.id.clone(), log.clone(), starts.clone());
    let significant = c.restart.ends_with('*');
    let restart = match c.restart.trim_end_matches('*') {
        "permanent" => Restart::Permanent,
        "transient" => Restart::Transient,
        _ => Restart::Temporary,
    };
    if let Some(n) = &c.nested {
        let mut spec = SupervisorSpec::new(strategy(n.strategy)).intensity(n.intensity, Duration::from_secs(period));
        for w in &n.children {
            spec = spec.child(child_spec(w, &log, &starts, sups, period));
        }
        let w = ChildSpec::supervisor(c.id.clone(), spec).restart(restart);
        sups.lock().insert(c.id.clone(), w.handle());
        return w.into();
    }
    let shutdown = match c.shutdown {
        "brutal" => Shutdown::Brutal,
        "infinity" => Shutdown::Infinity,
        ms => Shutdown::Timeout(Duration::from_millis(ms.parse().unwrap())),
    };
    let w = ChildSpec::worker_or_ignore(c.id.clone(), move || match starts.next(&id) {
        Some(Outcome::Ignore) => {
            log.lock().push(format!("{id}:ignored"));
            None
        }
        outcome => Some(OtpChild {
            id: id.clone(),
            log: log.clone(),
            fail: outcome == Some(Outcome::Fail),
            names: None,
            gate: starts.gate.clone(),
        }),
    });
    w.restart(restart).shutdown(shutdown).significant(significant).into()
}

struct Run {
    out: String,
    log: Log,
    sups: Sups,
}

impl Run {
    fn line(&mut self, l: impl AsRef<str>) {
        self.out.push_str(l.as_ref());
        self.out.push('\n');
    }

    fn print_log(&mut self) {
        let lines = std::mem::take(&mut *self.log.lock());
        for l in lines {
            self.line(format!("  log {l}"));
        }
    }

    /// The running child supervisor `id`, if any.
    fn nested(&self, id: &str) -> Option<SupervisorRef> {
        self.sups.lock().get(id).and_then(ChildRef::get).map(SupervisorRef::from_ref)
    }

    /// The running child `id`, looked for in the tree (one level of child supervisors).
    async fn running(&self, sup: &SupervisorRef, id: &str) -> Option<AnyRef> {
        let kids = sup.which_children().await.ok()?;
        if let Some(k) = kids.iter().find(|k| k.id == id) {
            return k.actor.clone();
        }
        for k in kids.iter().filter(|k| k.kind == ChildKind::Supervisor && k.actor.is_some()) {
            let Some(inner) = self.nested(&k.id) else { continue };
            if let Ok(inner_kids) = inner.which_children().await {
                if let Some(k) = inner_kids.into_iter().find(|k| k.id == id) {
                    return k.actor;
                }
            }
        }
        None
    }

    /// As the escript: nothing restarting, no listed child dead, here and in running child
    /// supervisors; and the children described, a child supervisor with its own in brackets.
    async fn look(&self, kids: &[ChildInfo]) -> (bool, String) {
        let mut settled = true;
        let mut parts = Vec::new();
        for k in kids {
            // Liveness is read once: a child supervisor that dies between two reads would
            // otherwise count as alive for the settle check and print as a plain `running`.
            let alive = k.actor.as_ref().map(AnyRef::is_alive);
            if k.restarting || alive == Some(false) {
                settled = false;
            }
            let alive_sup = k.kind == ChildKind::Supervisor && alive == Some(true);
            if alive_sup {
                let inner = match self.nested(&k.id) {
                    Some(n) => n.which_children().await.ok(),
                    None => None,
                };
                match inner {
                    Some(inner) => {
                        let (ok, text) = Box::pin(self.look(&inner)).await;
                        settled &= ok;
                        parts.push(format!("{}=running[{text}]", k.id));
                    }
                    None => {
                        settled = false;
                        parts.push(format!("{}=running[?]", k.id));
                    }
                }
                continue;
            }
            let st = if k.actor.is_some() {
                "running"
            } else if k.restarting {
                "restarting"
            } else {
                "undefined"
            };
            parts.push(format!("{}={st}", k.id));
        }
        (settled, parts.join(" "))
    }

    /// As the escript: asks `which_children` until settled, then prints the log and the
    /// children; false when the supervisor died.
    async fn settle_and_print(&mut self, sup: &SupervisorRef) -> bool {
        for n in (0..=SETTLE_TRIES).rev() {
            match sup.which_children().await {
                Ok(kids) => {
                    let (settled, text) = self.look(&kids).await;
                    if !settled && n > 0 {
                        settle_pause(n).await;
                        continue;
                    }
                    self.print_log();
                    self.line(format!("  which {text}"));
                    return true;
                }
                Err(_) => {
                    let reason = sup.terminated().await;
                    self.print_log();
                    self.line(format!("  down {}", reason_text(&reason)));
                    return false;
                }
            }
        }
        unreachable!()
    }
}

fn result<T>(r: Result<Option<T>, SupervisorError>) -> &'static str {
    match r {
        Ok(Some(_)) => "ok",
        Ok(None) => "ignore",
        Err(e) => error_text(&e),
    }
}

fn error_text(e: &SupervisorError) -> &'static str {
    match e {
        SupervisorError::AlreadyStarted { .. } => "already_started",
        SupervisorError::AlreadyPresent(_) => "already_present",
        SupervisorError::ChildRunning(_) => "running",
        SupervisorError::Restarting(_) => "restarting",
        SupervisorError::NoSuchChild(_) => "not_found",
        _ => "error",
    }
}

/// A simple_one_for_one scenario on Troupe's `start_simple`.
async fn run_simple_on_troupe(sc: &Scenario, (restart, shutdown): (&str, &str)) -> String {
    let log: Log = Arc::default();
    let names: Names = Arc::default();
    let starts = Arc::new(Starts { counts: Mutex::default(), fails: sc.fails.clone(), gate: Gate::default() });
    let mut run = Run { out: format!("scenario {}\n", sc.name), log: log.clone(), sups: Sups::default() };
    let (l, n) = (log.clone(), names.clone());
    let spec = SimpleSpec::new_or_ignore(move |name: String| match starts.next(&name) {
        Some(Outcome::Ignore) => {
            l.lock().push(format!("{name}:ignored"));
            None
        }
        outcome => Some(OtpChild {
            id: name,
            log: l.clone(),
            fail: outcome == Some(Outcome::Fail),
            names: Some(n.clone()),
            gate: Gate::default(),
        }),
    })
    .restart(match restart {
        "permanent" => Restart::Permanent,
        "transient" => Restart::Transient,
        _ => Restart::Temporary,
    })
    .shutdown(match shutdown {
        "brutal" => Shutdown::Brutal,
        "infinity" => Shutdown::Infinity,
        ms => Shutdown::Timeout(Duration::from_millis(ms.parse().unwrap())),
    })
    .intensity(sc.intensity, Duration::from_secs(sc.period));
    let sup = supervisor::start_simple(spec).await.unwrap();
    let name_of = |a: &AnyRef| names.lock().get(&a.id()).cloned().unwrap_or_else(|| "?".into());
    let running = |name: &str| {
        let sup = sup.clone();
        let name = name.to_owned();
        let names = names.clone();
        async move {
            let kids = sup.which_children().await.ok()?;
            kids.into_iter().filter_map(|k| k.actor).find(|a| names.lock().get(&a.id()) == Some(&name))
        }
    };
    run.line("START => ok");
    let mut alive = true;
    let mut steps = sc.steps.iter();
    loop {
        // Settle and print, as the escript does.
        if alive {
            alive = false;
            for n in (0..=SETTLE_TRIES).rev() {
                match sup.which_children().await {
                    Ok(kids) => {
                        let unsettled =
                            kids.iter().any(|k| k.restarting || k.actor.as_ref().is_some_and(|a| !a.is_alive()));
                        if unsettled && n > 0 {
                            settle_pause(n).await;
                            continue;
                        }
                        run.print_log();
                        // Every child the supervisor still holds: one that is not running has
                        // no name to show (OTP holds none such).
                        let mut parts: Vec<String> = kids
                            .iter()
                            .map(|k| match &k.actor {
                                Some(a) => format!("{}=running", name_of(a)),
                                None => "?=undefined".to_owned(),
                            })
                            .collect();
                        parts.sort();
                        run.line(format!("  which {}", parts.join(" ")));
                        alive = true;
                    }
                    Err(_) => {
                        let reason = sup.terminated().await;
                        run.log.lock().sort();
                        run.print_log();
                        run.line(format!("  down {}", reason_text(&reason)));
                    }
                }
                break;
            }
        }
        if !alive {
            return run.out;
        }
        let Some(step) = steps.next() else { return run.out };
        let text = step_text(step, &|_| String::new(), &|id| fails_text(sc, id));
        let res: &str = match step {
            Step::StartSimple(name) => match sup.start_child(name.clone()).await {
                Ok(Some(_)) => "ok",
                Ok(None) => "ignore",
                Err(e) => error_text(&e),
            },
            Step::Crash(name, reason) => match running(name).await {
                None => "not_running",
                Some(a) => {
                    match reason_of(reason) {
                        ExitReason::Killed => a.kill(),
                        r => a.stop(r),
                    }
                    a.terminated().await;
                    "ok"
                }
            },
            Step::Terminate(name) => match running(name).await {
                None => "not_found",
                Some(a) => match sup.terminate_child(a.id()).await {
                    Ok(()) => "ok",
                    Err(e) => error_text(&e),
                },
            },
            Step::Stop => {
                let reason = sup.stop().await;
                run.line(format!("{text} => stopped"));
                // All children stop at once: their ends come in no fixed order (on OTP either).
                run.log.lock().sort();
                run.print_log();
                run.line(format!("  down {}", reason_text(&reason)));
                return run.out;
            }
            other => panic!("{}: not a simple_one_for_one step: {other:?}", sc.name),
        };
        run.line(format!("{text} => {res}"));
    }
}

pub async fn run_on_troupe(sc: &Scenario) -> String {
    if let Some(template) = sc.simple {
        return run_simple_on_troupe(sc, template).await;
    }
    let log: Log = Arc::default();
    let starts = Arc::new(Starts { counts: Mutex::default(), fails: sc.fails.clone(), gate: Gate::default() });
    let sups = Sups::default();
    let mut run = Run { out: format!("scenario {}\n", sc.name), log: log.clone(), sups: sups.clone() };
    let auto = match sc.auto {
        "any_significant" => AutoShutdown::AnySignificant,
        "all_significant" => AutoShutdown::AllSignificant,
        _ => AutoShutdown::Never,
    };
    let mut spec = SupervisorSpec::new(strategy(sc.strategy))
        .intensity(sc.intensity, Duration::from_secs(sc.period))
        .auto_shutdown(auto);
    for c in &sc.children {
        spec = spec.child(child_spec(c, &log, &starts, &sups, sc.period));
    }
    let sup = match supervisor::start(spec).await {
        Ok(sup) => sup,
        Err(SupervisorError::StartFailed { child, .. }) => {
            run.line(format!("START => start_failed {child}"));
            run.print_log();
            return run.out;
        }
        Err(e) => panic!("{}: unexpected start error {e:?}", sc.name),
    };
    run.line("START => ok");
    run.settle_and_print(&sup).await;
    let mut mark: Option<Instant> = None;
    let child_line = |c: &Child| format!("{} {} {} {}", c.id, c.restart, c.shutdown, fails_text(sc, &c.id));
    for step in &sc.steps {
        let text = step_text(step, &child_line, &|id| fails_text(sc, id));
        let mut now = String::new();
        let res: &str = match step {
            Step::Crash(id, reason) => match run.running(&sup, id).await {
                None => "not_running",
                Some(a) => {
                    match reason_of(reason) {
                        ExitReason::Killed => a.kill(),
                        r => a.stop(r),
                    }
                    a.terminated().await;
                    "ok"
                }
            },
            Step::CrashWhich(id, reason) => match run.running(&sup, id).await {
                None => "not_running",
                Some(a) => {
                    starts.gate.arm();
                    match reason_of(reason) {
                        ExitReason::Killed => a.kill(),
                        r => a.stop(r),
                    }
                    a.terminated().await;
                    let asker = sup.clone();
                    let call = tokio::spawn(async move { asker.which_children().await });
                    // The gated start goes once the call is queued (bounded, as the escript).
                    for _ in 0..10_000 {
                        if starts.gate.is_waiting() && sup.actor().mailbox_len() > 0 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    starts.gate.release();
                    now = match call.await.unwrap() {
                        Ok(kids) => run.look(&kids).await.1,
                        Err(_) => "dead".into(),
                    };
                    "ok"
                }
            },
            Step::Tick => {
                let now = Instant::now();
                let boundary = now + supervisor::until_next_clock_second(now);
                tokio::time::sleep_until(boundary).await;
                mark = Some(boundary);
                "ok"
            }
            Step::At(ms) => {
                let mark = mark.expect("`at` follows a `tick`");
                tokio::time::sleep_until(mark + Duration::from_millis(*ms)).await;
                "ok"
            }
            Step::Terminate(id) => match sup.terminate_child(id).await {
                Ok(()) => "ok",
                Err(e) => error_text(&e),
            },
            Step::Restart(id) => result(sup.restart_child(id).await),
            Step::Delete(id) => match sup.delete_child(id).await {
                Ok(()) => "ok",
                Err(e) => error_text(&e),
            },
            Step::StartChild(c) => result(sup.start_child(child_spec(c, &log, &starts, &sups, sc.period)).await),
            Step::Stop => {
                let reason = sup.stop().await;
                run.line(format!("{text} => stopped"));
                run.print_log();
                run.line(format!("  down {}", reason_text(&reason)));
                return run.out;
            }
            Step::StartSimple(_) => panic!("{}: start_child NAME is for simple_one_for_one", sc.name),
        };
        match step {
            Step::CrashWhich(..) if res == "ok" => run.line(format!("{text} => ok now {now}")),
            _ => run.line(format!("{text} => {res}")),
        }
        if !run.settle_and_print(&sup).await {
            return run.out;
        }
    }
    run.out
}
