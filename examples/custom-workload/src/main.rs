//! A lab workload of your own, in one file: an `echo` service under a supervisor, asked once a
//! millisecond while the schedule kills it; the lab core runs it, checks its events and writes
//! `summary.json` and a report, exactly as for the built-in workloads. Copy it to start yours
//! (docs/adding-a-workload.md walks through it).
//!
//! Run with `cargo run -p example-custom-workload -- [OUT_DIR] [KEY=VALUE ...]`, e.g.
//! `cargo run -p example-custom-workload -- lab-runs/echo requests=500 kills=3`. The program is
//! also its own system under test: the lab starts it again as `... exec echo`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use troupe::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorSpec};
use troupe::{Actor, Ctx, ReplyTo};
use troupe_lab::config::{Config, ConfigBuilder, CrossIssue, KeySpec, Schema, SEED};
use troupe_lab::events::{writer::EventWriter, Event};
use troupe_lab::int_key;
use troupe_lab::registry::Registry;
use troupe_lab::run::{RunRequest, TroupeExe};
use troupe_lab::schedule::{self, FaultAction};
use troupe_lab::workload::{Checker, Conform, Faults, Reports, RunAnalysis, Spec, System};

/// Role 1, the keys: every key has a type, a range, a default (checked at compile time) and a
/// line of doc.
const KEYS: &[KeySpec] = &[
    SEED,
    int_key!("requests", 1, 100_000, 300, "requests, one a millisecond"),
    int_key!("kills", 0, 100, 2, "times the echo actor is killed"),
];
fn cross_rules(_: &Config) -> Vec<CrossIssue> {
    Vec::new()
}
static SCHEMA: Schema = Schema { workload: "echo", keys: KEYS, cross_check: cross_rules };

/// The workload: a unit struct implementing the six roles.
struct EchoWorkload;

impl Spec for EchoWorkload {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn about(&self) -> &'static str {
        "echo: a supervised echo actor asked once a millisecond while it is killed"
    }
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }
}

/// Role 2, the faults: a pure function of the config, kills spread evenly over the window.
impl Faults for EchoWorkload {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        let (n, kills) = (cfg.int("requests") as u64, cfg.int("kills") as u64);
        (1..=kills)
            .map(|i| FaultAction {
                at_ms: n * i / (kills + 1),
                id: format!("k{i}"),
                kind: "kill".into(),
                restart: true,
                ..Default::default()
            })
            .collect()
    }
}

/// The system under test's actor.
struct Echo;
impl Actor for Echo {
    type Msg = (u64, ReplyTo<u64>);
    async fn handle(&mut self, (n, reply): Self::Msg, _: &mut Ctx<Self>) {
        reply.send(n);
    }
}

/// Role 3, the system under test: a Troupe program that follows the environment contract.
impl System for EchoWorkload {
    fn roles(&self) -> &'static [&'static str] {
        &["echo"]
    }
    fn exec(&self, _role: &str) -> troupe_lab::Result<i32> {
        let cfg = troupe_lab::config::from_env(&EchoWorkload)?;
        let plan = schedule::read(&PathBuf::from(std::env::var("TROUPE_SCHEDULE").unwrap_or_default()))?;
        let w = EventWriter::from_env("troupe", "sub")?;
        let em = w.emitter();
        em.emit("run_started", json!({"workload": "echo", "config": cfg.to_json()}));
        let rt = tokio::runtime::Runtime::new().map_err(|e| troupe_lab::Error::other(e.to_string()))?;
        let errors = rt.block_on(async {
            let spec = ChildSpec::worker("echo", || Echo).restart(Restart::Permanent);
            let echo = spec.handle();
            let root = SupervisorSpec::new(Strategy::OneForOne).intensity(100, Duration::from_secs(1)).child(spec);
            let Ok(sup) = supervisor::start(root).await else { return 1 };
            let (start, mut faults) = (Instant::now(), plan.iter().peekable());
            for n in 0..cfg.int("requests") as u64 {
                tokio::time::sleep_until((start + Duration::from_millis(n)).into()).await;
                if let Some(f) = faults.next_if(|f| f.at_ms <= n) {
                    let Some(old) = echo.get() else { return 1 };
                    old.kill();
                    em.emit("fault_injected", json!({"id": f.id, "target": "echo", "kind": "kill"}));
                    old.terminated().await;
                    // Wait (bounded) for the supervisor's new incarnation.
                    if echo.current_after(old.id(), Duration::from_secs(5)).await.is_ok() {
                        em.emit("restarted", json!({"target": "echo", "attempt": 1}));
                    }
                }
                let answer = match echo.get() {
                    Some(r) => r.ask(|reply| (n, reply), Duration::from_millis(200)).await.ok(),
                    None => None,
                };
                em.emit(if answer == Some(n) { "reply" } else { "lost" }, json!({ "n": n }));
            }
            sup.stop().await;
            0
        });
        let (dropped, write_errors) = w.finish(json!({ "errors": errors }));
        Ok(i32::from(errors > 0 || dropped > 0 || write_errors > 0))
    }
    fn expected_duration(&self, cfg: &Config) -> Duration {
        Duration::from_millis(cfg.int("requests") as u64) + Duration::from_secs(5)
    }
}

/// Role 4's result: what one run's events say.
#[derive(Debug)]
struct EchoStats {
    replies: u64,
    lost: u64,
    kills: u64,
    restarts: u64,
    planned: u64,
    finished: bool,
}

impl Checker for EchoWorkload {
    type Analysis = EchoStats;
    fn check(&self, _: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> EchoStats {
        let count = |ev: &str| events.iter().filter(|e| e.ev == ev).count() as u64;
        EchoStats {
            replies: count("reply"),
            lost: count("lost"),
            kills: count("fault_injected"),
            restarts: count("restarted"),
            planned: sched.len() as u64,
            finished: count("run_finished") > 0,
        }
    }
}

/// Role 5: the core's default page and grid tables are enough here.
impl Reports for EchoWorkload {}

/// Role 6: no conformance rules yet (`troupe lab conform` refuses the workload).
impl Conform for EchoWorkload {}

impl RunAnalysis for EchoStats {
    fn completeness_problem(&self, _: &Config) -> Option<String> {
        (!self.finished).then(|| "no run_finished: the system under test did not end its run".into())
    }
    /// Every failure is counted: a kill not carried out, an actor not restarted, a request lost.
    fn degradations(&self, _: &Config) -> Vec<String> {
        let mut out = Vec::new();
        if self.kills < self.planned {
            out.push(format!("{} of {} kills not carried out", self.planned - self.kills, self.planned));
        }
        if self.restarts < self.kills {
            out.push(format!("{} of {} kills not followed by a restart", self.kills - self.restarts, self.kills));
        }
        if self.lost > 0 {
            out.push(format!("{} requests lost", self.lost));
        }
        out
    }
    fn summary_rows(&self) -> Vec<(String, String)> {
        vec![
            ("replies".into(), format!("{} ({} lost)", self.replies, self.lost)),
            ("kills".into(), format!("{} of {} planned, {} restarted", self.kills, self.planned, self.restarts)),
        ]
    }
    fn summary_json(&self) -> serde_json::Value {
        json!({"replies": self.replies, "lost": self.lost, "kills": self.kills, "restarts": self.restarts, "planned_kills": self.planned})
    }
    fn headline(&self) -> String {
        format!("{} replies, {} lost", self.replies, self.lost)
    }
}

fn main() {
    let registry = Registry::new(vec![&EchoWorkload]);
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("exec") {
        let role = args.get(1).map(String::as_str).unwrap_or("echo");
        let code = registry.by_role(role).and_then(|w| w.exec(role)).unwrap_or_else(|e| {
            eprintln!("echo: {e}");
            1
        });
        std::process::exit(code);
    }
    let out = args.first().filter(|a| !a.contains('=')).map_or_else(|| PathBuf::from("lab-runs/echo"), PathBuf::from);
    let mut b = ConfigBuilder::new(&EchoWorkload);
    args.iter().filter(|a| a.contains('=')).for_each(|s| _ = b.apply_set(s));
    let cfg = b.build().unwrap_or_else(|e| {
        eprintln!("echo: {e}");
        std::process::exit(2)
    });
    let exe =
        TroupeExe { program: std::env::current_exe().expect("own path"), args: vec!["exec".into(), "echo".into()] };
    match troupe_lab::run::run(
        &RunRequest::new(&EchoWorkload, cfg, "troupe", out, exe),
        &troupe_lab::child::Stop::new(),
    ) {
        Ok(o) => {
            let status = troupe_lab::report::status_text(&o.manifest);
            println!("{}: {status}; {}", o.dir.display(), o.stats.map(|s| s.headline()).unwrap_or_default());
            std::process::exit(if o.manifest.status.completed() { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("echo: {e}");
            std::process::exit(1);
        }
    }
}
