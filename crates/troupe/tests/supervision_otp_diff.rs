//! Differential test against Erlang/OTP's own `supervisor`: the same scenarios (seeded random
//! ones and hand-written edge cases) run on OTP, through `peers/erlang/otpdiff/otpdiff.escript`,
//! and on Troupe, through `otpdiff/troupe_runner.rs`; the normalised traces (each step's result, the
//! children's starts, failed starts and graceful stops in order, the settled children after each
//! step, the supervisor's death) must be identical. The scenario language is described in the
//! escript and in `peers/erlang/otpdiff/README.md`.
//!
//! Without `escript` on PATH the test says so and passes, unless `TROUPE_TEST_REQUIRE_ERLANG=1` (CI
//! sets it), when it fails. `OTPDIFF_SCENARIOS=n` changes the number of random scenarios
//! (default 1,000); `OTPDIFF_SEED=s` the first seed.

mod otpdiff;

use std::collections::HashMap;

use otpdiff::edge_cases::edge_cases;
use otpdiff::scenario::{random_scenario, render, Scenario, Step};

/// How many more times a scenario timed against the clock runs when its traces differ.
const TIMED_RETRIES: usize = 4;
use otpdiff::troupe_runner::run_on_troupe;

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
            std::env::var("TROUPE_TEST_REQUIRE_ERLANG").as_deref() != Ok("1"),
            "TROUPE_TEST_REQUIRE_ERLANG=1 but escript is not on PATH (bash scripts/install-erlang.sh)"
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
        let mut ours = run_on_troupe(sc).await;
        let mut theirs = otp.get(&sc.name).cloned().unwrap_or_default();
        // A scenario timed against the clock's second boundary (`tick`, `at`) has margins of
        // 300 ms or more; a machine stalled longer than that on either side misplaces a
        // restart. It runs again on both sides, a few times, before its difference counts.
        let timed = sc.steps.iter().any(|s| matches!(s, Step::Tick));
        for _ in 0..TIMED_RETRIES {
            if !timed || ours == theirs {
                break;
            }
            eprintln!("{}: differs (a stall may have misplaced a timed step); running it again", sc.name);
            theirs = run_on_otp(std::slice::from_ref(sc)).remove(&sc.name).unwrap_or_default();
            ours = run_on_troupe(sc).await;
        }
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
