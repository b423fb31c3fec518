//! The scenario language of the differential test (see `peers/erlang/otpdiff/README.md`):
//! scenarios as data, the seeded random generator, and their text form for the escript.

use std::collections::HashMap;
use std::fmt::Write as _;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Clone, Debug)]
pub struct Child {
    pub id: String,
    pub restart: &'static str,
    pub shutdown: &'static str,
    /// A child supervisor (shutdown infinity) with these worker children.
    pub nested: Option<Nested>,
}

#[derive(Clone, Debug)]
pub struct Nested {
    pub strategy: &'static str,
    pub intensity: u32,
    pub children: Vec<Child>,
}

#[derive(Clone, Debug)]
pub enum Step {
    /// A simple supervisor's `start_child` with this name as its argument.
    StartSimple(String),
    Crash(String, &'static str),
    /// A crash, then one `which_children` that reaches the supervisor while its restart is
    /// under way (the restart's first failing start waits until the call is queued), printed as
    /// answered: whether a failed restart's retry goes behind a call already queued.
    CrashWhich(String, &'static str),
    /// Waits until the supervisors' clock (OTP: the monotonic clock) begins a whole second.
    Tick,
    /// Waits until this many milliseconds after the last `Tick`.
    At(u64),
    Terminate(String),
    Restart(String),
    Delete(String),
    StartChild(Child),
    Stop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Fail,
    Ignore,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub strategy: &'static str,
    pub intensity: u32,
    pub period: u64,
    /// never | any_significant | all_significant.
    pub auto: &'static str,
    /// A simple_one_for_one supervisor with this template (restart, shutdown) instead of
    /// `strategy` and `children`.
    pub simple: Option<(&'static str, &'static str)>,
    pub children: Vec<Child>,
    /// Per id: the start numbers (1-based, counted per id over the scenario) that fail or
    /// return ignore.
    pub fails: HashMap<String, Vec<(usize, Outcome)>>,
    pub steps: Vec<Step>,
}

pub const STRATEGIES: [&str; 3] = ["one_for_one", "one_for_all", "rest_for_one"];
pub const RESTARTS: [&str; 3] = ["permanent", "transient", "temporary"];
pub const SHUTDOWNS: [&str; 3] = ["brutal", "5000", "infinity"];
pub const REASONS: [&str; 5] = ["normal", "shutdown", "shutdown_term", "boom", "killed"];
pub const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
pub const NESTED_IDS: [&str; 2] = ["x", "y"];

pub fn pick<T: Copy>(rng: &mut StdRng, xs: &[T]) -> T {
    xs[rng.gen_range(0..xs.len())]
}

/// A random worker; significant (a restart type with a trailing `*`) only when `significant_ok`.
pub fn random_child(rng: &mut StdRng, id: &str, significant_ok: bool) -> Child {
    let mut restart = pick(rng, &RESTARTS);
    if significant_ok && restart != "permanent" && rng.gen_bool(0.5) {
        restart = if restart == "transient" { "transient*" } else { "temporary*" };
    }
    Child { id: id.to_owned(), restart, shutdown: pick(rng, &SHUTDOWNS), nested: None }
}

/// A simple_one_for_one scenario: children w1, w2... started, crashed and terminated.
pub fn random_simple_scenario(seed: u64, rng: &mut StdRng) -> Scenario {
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

pub fn random_scenario(seed: u64) -> Scenario {
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

pub fn render(sc: &Scenario) -> String {
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

pub fn fails_text(sc: &Scenario, id: &str) -> String {
    match sc.fails.get(id) {
        Some(v) if !v.is_empty() => v
            .iter()
            .map(|(n, o)| if *o == Outcome::Ignore { format!("{n}i") } else { n.to_string() })
            .collect::<Vec<_>>()
            .join(","),
        _ => "-".into(),
    }
}

pub fn step_text(s: &Step, child: &dyn Fn(&Child) -> String, fails: &dyn Fn(&str) -> String) -> String {
    match s {
        Step::Crash(id, r) => format!("crash {id} {r}"),
        Step::CrashWhich(id, r) => format!("crash_which {id} {r}"),
        Step::Tick => "tick".into(),
        Step::At(ms) => format!("at {ms}"),
        Step::Terminate(id) => format!("terminate {id}"),
        Step::Restart(id) => format!("restart {id}"),
        Step::Delete(id) => format!("delete {id}"),
        Step::StartChild(c) => format!("start_child {}", child(c)),
        Step::Stop => "stop".into(),
        Step::StartSimple(name) => format!("start_child {name} {}", fails(name)),
    }
}
