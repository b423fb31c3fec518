//! Differential test against Erlang/OTP's own `supervisor`: the same scenarios (seeded random
//! ones and hand-written edge cases) run on OTP, through `peers/erlang/otpdiff/otpdiff.escript`,
//! and on Troupe, through the runner below; the normalised traces (each step's result, the
//! children's starts, failed starts and graceful stops in order, the settled children after each
//! step, the supervisor's death) must be identical. The scenario language is described in the
//! escript and in `peers/erlang/otpdiff/README.md`.
//!
//! Without `escript` on PATH the test says so and passes, unless `TROUPE_REQUIRE_ERLANG=1` (CI
//! sets it), when it fails. `OTPDIFF_SCENARIOS=n` changes the number of random scenarios
//! (default 1,000); `OTPDIFF_SEED=s` the first seed.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use troupe::supervisor::{
    self, AutoShutdown, ChildInfo, ChildKind, ChildRef, ChildSpec, Restart, Shutdown, SimpleSpec, Strategy,
    SupervisorError, SupervisorMsg, SupervisorRef, SupervisorSpec,
};
use troupe::{Actor, ActorError, AnyRef, Ctx, ExitReason, ExitSignal};

// ---------------------------------------------------------------------------------------------
// Scenarios

#[derive(Clone, Debug)]
struct Child {
    id: String,
    restart: &'static str,
    shutdown: &'static str,
    /// A child supervisor (shutdown infinity) with these worker children.
    nested: Option<Nested>,
}

#[derive(Clone, Debug)]
struct Nested {
    strategy: &'static str,
    intensity: u32,
    children: Vec<Child>,
}

#[derive(Clone, Debug)]
enum Step {
    /// A simple supervisor's `start_child` with this name as its argument.
    StartSimple(String),
    Crash(String, &'static str),
    Terminate(String),
    Restart(String),
    Delete(String),
    StartChild(Child),
    Stop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Fail,
    Ignore,
}

#[derive(Clone, Debug)]
struct Scenario {
    name: String,
    strategy: &'static str,
    intensity: u32,
    period: u64,
    /// never | any_significant | all_significant.
    auto: &'static str,
    /// A simple_one_for_one supervisor with this template (restart, shutdown) instead of
    /// `strategy` and `children`.
    simple: Option<(&'static str, &'static str)>,
    children: Vec<Child>,
    /// Per id: the start numbers (1-based, counted per id over the scenario) that fail or
    /// return ignore.
    fails: HashMap<String, Vec<(usize, Outcome)>>,
    steps: Vec<Step>,
}

const STRATEGIES: [&str; 3] = ["one_for_one", "one_for_all", "rest_for_one"];
const RESTARTS: [&str; 3] = ["permanent", "transient", "temporary"];
const SHUTDOWNS: [&str; 3] = ["brutal", "5000", "infinity"];
const REASONS: [&str; 5] = ["normal", "shutdown", "shutdown_term", "boom", "killed"];
const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const NESTED_IDS: [&str; 2] = ["x", "y"];

fn pick<T: Copy>(rng: &mut StdRng, xs: &[T]) -> T {
    xs[rng.gen_range(0..xs.len())]
}

/// A random worker; significant (a restart type with a trailing `*`) only when `significant_ok`.
fn random_child(rng: &mut StdRng, id: &str, significant_ok: bool) -> Child {
    let mut restart = pick(rng, &RESTARTS);
    if significant_ok && restart != "permanent" && rng.gen_bool(0.5) {
        restart = if restart == "transient" { "transient*" } else { "temporary*" };
    }
    Child { id: id.to_owned(), restart, shutdown: pick(rng, &SHUTDOWNS), nested: None }
}

/// A simple_one_for_one scenario: children w1, w2... started, crashed and terminated.
fn random_simple_scenario(seed: u64, rng: &mut StdRng) -> Scenario {
    let fail_p = pick(rng, &[0.0, 0.1, 0.25]);
    let mut fails = HashMap::new();
    let mut started: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    for _ in 0..rng.gen_range(2..=9) {
        if started.is_empty() || rng.gen_bool(0.4) {
            let name = format!("w{}", started.len() + 1);
            let outcomes = (1..=6)
                .filter_map(|n| {
                    if rng.gen_bool(fail_p) {
                        Some((n, Outcome::Fail))
                    } else if n == 1 && rng.gen_bool(0.1) {
                        // Only a first start may return ignore: OTP 25 keeps a child whose
                        // restart returned ignore as `undefined` and then fails at shutdown
                        // (later OTP drops it, as Troupe does).
                        Some((n, Outcome::Ignore))
                    } else {
                        None
                    }
                })
                .collect();
            fails.insert(name.clone(), outcomes);
            started.push(name.clone());
            steps.push(Step::StartSimple(name));
        } else {
            let name = started[rng.gen_range(0..started.len())].clone();
            steps.push(if rng.gen_bool(0.7) { Step::Crash(name, pick(rng, &REASONS)) } else { Step::Terminate(name) });
        }
    }
    steps.push(Step::Stop);
    Scenario {
        name: format!("seed-{seed}"),
        strategy: "simple_one_for_one",
        intensity: rng.gen_range(0..=4),
        period: 5,
        auto: "never",
        simple: Some((pick(rng, &RESTARTS), pick(rng, &SHUTDOWNS))),
        children: Vec::new(),
        fails,
        steps,
    }
}

fn random_scenario(seed: u64) -> Scenario {
    let mut rng = StdRng::seed_from_u64(seed);
    if rng.gen_bool(0.2) {
        return random_simple_scenario(seed, &mut rng);
    }
    let auto = pick(&mut rng, &["never", "never", "never", "any_significant", "all_significant"]);
    let sig = auto != "never";
    let n = rng.gen_range(1..=4);
    let mut children: Vec<Child> = IDS[..n].iter().map(|id| random_child(&mut rng, id, sig)).collect();
    // A third of the scenarios have a child supervisor "s" with workers "x" (and "y").
    let nested = rng.gen_bool(1.0 / 3.0);
    if nested {
        let workers = NESTED_IDS[..rng.gen_range(1..=2)].iter().map(|id| random_child(&mut rng, id, false)).collect();
        let sup = Child {
            id: "s".into(),
            restart: pick(&mut rng, &RESTARTS),
            shutdown: "infinity",
            nested: Some(Nested {
                strategy: pick(&mut rng, &STRATEGIES),
                intensity: rng.gen_range(0..=2),
                children: workers,
            }),
        };
        let at = rng.gen_range(0..=children.len());
        children.insert(at, sup);
    }
    let fail_p = pick(&mut rng, &[0.0, 0.1, 0.25]);
    let ignore_p = pick(&mut rng, &[0.0, 0.0, 0.1]);
    let fails = IDS
        .iter()
        .chain(&NESTED_IDS)
        .map(|id| {
            let outcomes = (1..=8)
                .filter_map(|n| {
                    if rng.gen_bool(fail_p) {
                        Some((n, Outcome::Fail))
                    } else if rng.gen_bool(ignore_p) {
                        Some((n, Outcome::Ignore))
                    } else {
                        None
                    }
                })
                .collect();
            (id.to_string(), outcomes)
        })
        .collect();
    let mut steps = Vec::new();
    for _ in 0..rng.gen_range(2..=8) {
        let id = pick(&mut rng, &IDS[..(n + 1).min(IDS.len())]).to_owned();
        if nested && rng.gen_bool(0.4) {
            // A crash of a worker of the child supervisor. (Not of the child supervisor itself:
            // killed, its workers die concurrently with its restart, in an order OTP does not
            // fix either; asked to stop, OTP's supervisor has no such request.)
            let target = pick(&mut rng, &NESTED_IDS);
            steps.push(Step::Crash(target.into(), pick(&mut rng, &REASONS)));
            continue;
        }
        steps.push(match rng.gen_range(0..100) {
            0..=49 => Step::Crash(id, pick(&mut rng, &REASONS)),
            50..=59 => Step::Terminate(id),
            60..=71 => Step::Restart(id),
            72..=79 => Step::Delete(id),
            _ => Step::StartChild(random_child(&mut rng, &id, sig)),
        });
    }
    steps.push(Step::Stop);
    Scenario {
        name: format!("seed-{seed}"),
        strategy: pick(&mut rng, &STRATEGIES),
        intensity: rng.gen_range(0..=4),
        period: 5,
        auto,
        simple: None,
        children,
        fails,
        steps,
    }
}

/// Hand-written edge cases: the divergences issue 17 reported, and the corners of each rule.
fn edge_cases() -> Vec<Scenario> {
    let c = |id: &str, restart: &'static str, shutdown: &'static str| Child {
        id: id.into(),
        restart,
        shutdown,
        nested: None,
    };
    let f = |pairs: &[(&str, &[usize])]| {
        pairs.iter().map(|(id, n)| (id.to_string(), n.iter().map(|n| (*n, Outcome::Fail)).collect())).collect()
    };
    let ig = |pairs: &[(&str, &[usize])]| -> HashMap<String, Vec<(usize, Outcome)>> {
        pairs.iter().map(|(id, n)| (id.to_string(), n.iter().map(|n| (*n, Outcome::Ignore)).collect())).collect()
    };
    let s = |name: &str, strategy, intensity, children, fails, steps| Scenario {
        name: name.into(),
        strategy,
        intensity,
        period: 5,
        auto: "never",
        simple: None,
        children,
        fails,
        steps,
    };
    use Step::*;
    let auto = |mut sc: Scenario, auto: &'static str| {
        sc.auto = auto;
        sc
    };
    vec![
        auto(
            s(
                "any_significant_exit_shuts_down",
                "one_for_one",
                3,
                vec![c("a", "permanent", "5000"), c("t", "transient*", "5000")],
                f(&[]),
                vec![Crash("t".into(), "boom"), Crash("t".into(), "normal"), Stop],
            ),
            "any_significant",
        ),
        auto(
            s(
                "all_significant_exits_shut_down_after_the_last",
                "one_for_all",
                3,
                vec![c("t", "transient*", "5000"), c("u", "temporary*", "5000")],
                f(&[]),
                vec![
                    Crash("t".into(), "shutdown"),
                    StartChild(c("v", "temporary*", "brutal")),
                    Terminate("v".into()),
                    StartChild(c("w", "temporary*", "brutal")),
                    Crash("u".into(), "boom"),
                    Crash("w".into(), "killed"),
                    Stop,
                ],
            ),
            "all_significant",
        ),
        s(
            "one_for_all_restart_failure_restarts_the_whole_group",
            "one_for_all",
            10,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "brutal"), c("c", "permanent", "infinity")],
            f(&[("b", &[2])]),
            vec![Crash("a".into(), "boom"), Stop],
        ),
        s(
            "rest_for_one_restart_failure",
            "rest_for_one",
            10,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "5000"), c("c", "transient", "5000")],
            f(&[("c", &[2, 3])]),
            vec![Crash("b".into(), "killed"), Crash("a".into(), "boom"), Stop],
        ),
        s(
            "retries_exceed_the_intensity",
            "one_for_one",
            2,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "5000")],
            f(&[("b", &[2, 3, 4, 5])]),
            vec![Crash("b".into(), "boom"), Stop],
        ),
        s(
            "transient_shutdown_term_is_not_restarted",
            "one_for_all",
            5,
            vec![c("a", "transient", "5000"), c("b", "permanent", "5000")],
            f(&[]),
            vec![Crash("a".into(), "shutdown_term"), Crash("b".into(), "shutdown_term"), Stop],
        ),
        s(
            "already_started_and_already_present",
            "one_for_one",
            5,
            vec![c("a", "permanent", "5000")],
            f(&[]),
            vec![
                StartChild(c("a", "temporary", "5000")),
                Terminate("a".into()),
                StartChild(c("a", "permanent", "5000")),
                Restart("a".into()),
                Restart("a".into()),
                Delete("a".into()),
                Delete("a".into()),
                StartChild(c("a", "temporary", "brutal")),
                Crash("a".into(), "boom"),
                Terminate("a".into()),
                Stop,
            ],
        ),
        s(
            "temporary_siblings_are_dropped_by_a_group_restart",
            "rest_for_one",
            5,
            vec![c("a", "permanent", "5000"), c("b", "temporary", "5000"), c("c", "permanent", "brutal")],
            f(&[]),
            vec![StartChild(c("d", "temporary", "infinity")), Crash("a".into(), "normal"), Stop],
        ),
        s(
            "a_failing_start_fails_the_supervisor",
            "one_for_one",
            1,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "5000"), c("c", "permanent", "5000")],
            f(&[("b", &[1])]),
            vec![Stop],
        ),
        s(
            "ignore_at_start_in_start_child_and_in_restarts",
            "one_for_all",
            10,
            vec![c("a", "permanent", "5000"), c("b", "transient", "5000"), c("c", "temporary", "5000")],
            ig(&[("a", &[1]), ("b", &[2]), ("c", &[1]), ("d", &[1, 2])]),
            vec![
                Restart("a".into()),
                StartChild(c("d", "permanent", "5000")),
                Restart("d".into()),
                StartChild(c("e", "temporary", "5000")),
                Crash("a".into(), "boom"),
                Crash("b".into(), "boom"),
                Stop,
            ],
        ),
        s(
            "a_child_supervisor_that_gives_up_escalates",
            "one_for_one",
            3,
            vec![
                c("a", "permanent", "5000"),
                Child {
                    id: "s".into(),
                    restart: "permanent",
                    shutdown: "infinity",
                    nested: Some(Nested {
                        strategy: "one_for_all",
                        intensity: 1,
                        children: vec![c("x", "permanent", "5000"), c("y", "transient", "brutal")],
                    }),
                },
                c("b", "permanent", "5000"),
            ],
            f(&[("y", &[3])]),
            vec![
                Crash("x".into(), "boom"),
                Crash("y".into(), "boom"),
                Crash("x".into(), "killed"),
                Terminate("s".into()),
                Restart("s".into()),
                Stop,
            ],
        ),
        s(
            "intensity_zero",
            "one_for_one",
            0,
            vec![c("a", "permanent", "5000"), c("b", "transient", "brutal")],
            f(&[]),
            vec![Crash("b".into(), "normal"), Crash("a".into(), "shutdown"), Stop],
        ),
    ]
}

fn render(sc: &Scenario) -> String {
    let child = |c: &Child| format!("{} {} {} {}", c.id, c.restart, c.shutdown, fails_text(sc, &c.id));
    let auto = if sc.auto == "never" { String::new() } else { format!(" {}", sc.auto) };
    let mut out = match sc.simple {
        Some((r, sd)) => format!("scenario {}\nsimple {r} {sd} {} {}\n", sc.name, sc.intensity, sc.period),
        None => format!("scenario {}\nsup {} {} {}{auto}\n", sc.name, sc.strategy, sc.intensity, sc.period),
    };
    for c in &sc.children {
        match &c.nested {
            None => {
                let _ = writeln!(out, "child {}", child(c));
            }
            Some(n) => {
                let _ = writeln!(out, "supchild {} {} {} {} {}", c.id, c.restart, n.strategy, n.intensity, sc.period);
                for w in &n.children {
                    let _ = writeln!(out, "nested {} {}", c.id, child(w));
                }
            }
        }
    }
    for s in &sc.steps {
        let _ = writeln!(out, "step {}", step_text(s, &child, &|id| fails_text(sc, id)));
    }
    out.push_str("end\n");
    out
}

fn fails_text(sc: &Scenario, id: &str) -> String {
    match sc.fails.get(id) {
        Some(v) if !v.is_empty() => v
            .iter()
            .map(|(n, o)| if *o == Outcome::Ignore { format!("{n}i") } else { n.to_string() })
            .collect::<Vec<_>>()
            .join(","),
        _ => "-".into(),
    }
}

fn step_text(s: &Step, child: &dyn Fn(&Child) -> String, fails: &dyn Fn(&str) -> String) -> String {
    match s {
        Step::Crash(id, r) => format!("crash {id} {r}"),
        Step::Terminate(id) => format!("terminate {id}"),
        Step::Restart(id) => format!("restart {id}"),
        Step::Delete(id) => format!("delete {id}"),
        Step::StartChild(c) => format!("start_child {}", child(c)),
        Step::Stop => "stop".into(),
        Step::StartSimple(name) => format!("start_child {name} {}", fails(name)),
    }
}

// ---------------------------------------------------------------------------------------------
// The Troupe runner

type Log = Arc<Mutex<Vec<String>>>;

/// Start counts and the start numbers that fail or ignore, per id, shared by every incarnation.
#[derive(Default)]
struct Starts {
    counts: Mutex<HashMap<String, Arc<AtomicUsize>>>,
    fails: HashMap<String, Vec<(usize, Outcome)>>,
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
        outcome => {
            Some(OtpChild { id: id.clone(), log: log.clone(), fail: outcome == Some(Outcome::Fail), names: None })
        }
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
            if k.restarting || k.actor.as_ref().is_some_and(|a| !a.is_alive()) {
                settled = false;
            }
            let alive_sup = k.kind == ChildKind::Supervisor && k.actor.as_ref().is_some_and(AnyRef::is_alive);
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
        for n in (0..=10_000).rev() {
            match sup.which_children().await {
                Ok(kids) => {
                    let (settled, text) = self.look(&kids).await;
                    if !settled && n > 0 {
                        tokio::task::yield_now().await;
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
    let starts = Arc::new(Starts { counts: Mutex::default(), fails: sc.fails.clone() });
    let mut run = Run { out: format!("scenario {}\n", sc.name), log: log.clone(), sups: Sups::default() };
    let (l, n) = (log.clone(), names.clone());
    let spec = SimpleSpec::new_or_ignore(move |name: String| match starts.next(&name) {
        Some(Outcome::Ignore) => {
            l.lock().push(format!("{name}:ignored"));
            None
        }
        outcome => {
            Some(OtpChild { id: name, log: l.clone(), fail: outcome == Some(Outcome::Fail), names: Some(n.clone()) })
        }
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
            for n in (0..=10_000).rev() {
                match sup.which_children().await {
                    Ok(kids) => {
                        let unsettled =
                            kids.iter().any(|k| k.restarting || k.actor.as_ref().is_some_and(|a| !a.is_alive()));
                        if unsettled && n > 0 {
                            tokio::task::yield_now().await;
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

async fn run_on_troupe(sc: &Scenario) -> String {
    if let Some(template) = sc.simple {
        return run_simple_on_troupe(sc, template).await;
    }
    let log: Log = Arc::default();
    let starts = Arc::new(Starts { counts: Mutex::default(), fails: sc.fails.clone() });
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
    let child_line = |c: &Child| format!("{} {} {} {}", c.id, c.restart, c.shutdown, fails_text(sc, &c.id));
    for step in &sc.steps {
        let text = step_text(step, &child_line, &|id| fails_text(sc, id));
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
        run.line(format!("{text} => {res}"));
        if !run.settle_and_print(&sup).await {
            return run.out;
        }
    }
    run.out
}

// ---------------------------------------------------------------------------------------------
// The comparison

fn escript_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/erlang/otpdiff/otpdiff.escript")
}

fn has_escript() -> bool {
    std::process::Command::new("escript").arg("-h").output().is_ok()
}

/// Runs every scenario on OTP (one escript run) and returns each one's trace by name.
fn run_on_otp(scenarios: &[Scenario]) -> HashMap<String, String> {
    let dir = std::env::temp_dir().join(format!("troupe-otpdiff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenarios.txt");
    std::fs::write(&file, scenarios.iter().map(render).collect::<String>()).unwrap();
    let out = std::process::Command::new("escript").arg(escript_path()).arg(&file).output().expect("run escript");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "otpdiff.escript failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut traces = HashMap::new();
    for chunk in text.split("scenario ").filter(|c| !c.is_empty()) {
        let name = chunk.lines().next().unwrap().to_owned();
        traces.insert(name, format!("scenario {chunk}"));
    }
    traces
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn troupe_supervisors_match_otp_trace_for_trace() {
    if !has_escript() {
        assert!(
            std::env::var("TROUPE_REQUIRE_ERLANG").as_deref() != Ok("1"),
            "TROUPE_REQUIRE_ERLANG=1 but escript is not on PATH (bash scripts/install-erlang.sh)"
        );
        eprintln!("SKIPPED: escript not on PATH; install Erlang/OTP with scripts/install-erlang.sh");
        return;
    }
    let n: u64 = std::env::var("OTPDIFF_SCENARIOS").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let first: u64 = std::env::var("OTPDIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut scenarios = edge_cases();
    scenarios.extend((first..first + n).map(random_scenario));
    let otp = run_on_otp(&scenarios);
    let mut diverged = Vec::new();
    for sc in &scenarios {
        let ours = run_on_troupe(sc).await;
        let theirs = otp.get(&sc.name).cloned().unwrap_or_default();
        if ours != theirs {
            diverged.push(format!("--- {} diverged\n{}--- OTP:\n{theirs}--- Troupe:\n{ours}", sc.name, render(sc)));
        }
    }
    eprintln!("{} scenarios, {} diverged", scenarios.len(), diverged.len());
    assert!(
        diverged.is_empty(),
        "{} of {} scenarios diverged; first:\n{}",
        diverged.len(),
        scenarios.len(),
        diverged[0]
    );
}
