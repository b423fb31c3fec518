//! The conformance driver (`troupe_lab::conform::driver`) with `testkit::Noop` and systems under
//! test in `sh`: a "troupe" one that follows Noop's contract, a peer `shell` that writes its
//! ticks backwards (breaking `noop.1`), and a peer `gone` whose toolchain is missing. Checks the
//! verdicts, the folders, `conform.json` and `conform.md`, and that nothing is skipped.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use troupe_lab::child::Stop;
use troupe_lab::compare::RunContext;
use troupe_lab::conform::driver::{self, ConformSpec};
use troupe_lab::conform::Verdict;
use troupe_lab::run::TroupeExe;
use troupe_lab::sweep::{Point, SweepObserver};
use troupe_lab::testkit::Noop;

/// A system under test in `sh`: `run_started`, the config's ticks (backwards when `reverse`),
/// `run_finished`.
fn script(reverse: bool) -> String {
    let order = if reverse { "seq $((ticks - 1)) -1 0" } else { "seq 0 $((ticks - 1))" };
    format!(
        r#"set -eu
ticks=$(sed -E 's/.*"ticks":([0-9]+).*/\1/' "$TROUPE_CONFIG")
line() {{ printf '{{"ts_us":%s,"run":"%s","rt":"sh","node":"sub","ev":"%s"%s}}\n' "$(date +%s%6N)" "$TROUPE_RUN_ID" "$1" "${{2:+,$2}}" >> "$TROUPE_EVENTS"; }}
line run_started '"workload":"noop"'
if [ "$ticks" -gt 0 ]; then for i in $({order}); do line tick "\"n\":$i"; done; fi
line run_finished '"dropped_events":0,"errors":0'
"#
    )
}

fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A project root with the peers `shell` (ticks backwards) and `gone` (toolchain missing).
fn project(root: &Path) {
    executable(&root.join("peers/shell/noop/build"), "#!/bin/sh\nexit 0\n");
    executable(&root.join("peers/shell/noop/run"), &format!("#!/bin/sh\n{}", script(true)));
    executable(
        &root.join("peers/gone/noop/build"),
        "#!/bin/sh\necho 'gone is not installed: run install-gone.sh' >&2\nexit 3\n",
    );
    executable(&root.join("peers/gone/noop/run"), "#!/bin/sh\nexit 1\n");
}

fn ctx(root: PathBuf) -> RunContext {
    RunContext {
        troupe: TroupeExe { program: PathBuf::from("/bin/sh"), args: vec!["-c".into(), script(false)] },
        project_root: Some(root),
        command: vec!["test".into()],
        deadline_slack: Duration::from_secs(60),
    }
}

#[derive(Default)]
struct Seen {
    started: Vec<String>,
}

impl SweepObserver for Seen {
    fn planned(&mut self, _: usize, _: usize) {}
    fn started(&mut self, p: &Point) {
        self.started.push(p.name.clone());
    }
    fn finished(&mut self, _: &Point, _: &troupe_lab::run::RunOutcome) {}
}

fn spec(runtimes: &[&str], scenario: Option<&str>) -> ConformSpec {
    ConformSpec {
        workload: &Noop,
        runtimes: runtimes.iter().map(|s| s.to_string()).collect(),
        scenario: scenario.map(str::to_string),
    }
}

#[test]
fn rule_3_a_broken_rule_and_a_runtime_that_cannot_build_fail_and_nothing_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("project");
    project(&root);
    let plan = driver::plan(&spec(&["troupe", "shell", "gone"], None)).unwrap();
    let dir = tmp.path().join("conform");
    let mut seen = Seen::default();
    let o = driver::run(&plan, &dir, &ctx(root), &Stop::new(), &mut seen).unwrap();
    assert_eq!(seen.started.len(), 6, "every runtime on both scenarios: {:?}", seen.started);
    assert!(!o.passed(), "a FAIL means the check fails");

    // Troupe follows the contract: noop.1 passes on `three` and is n/a on `none`.
    assert_eq!(o.verdict(0, "troupe"), Verdict::Pass);
    assert_eq!(o.verdict(1, "troupe"), Verdict::Pass);
    assert_eq!(o.verdict(2, "troupe"), Verdict::na("not observable from events"));
    // The peer writing backwards fails noop.1, the evidence quoting the offending tick.
    match o.verdict(0, "shell") {
        Verdict::Fail { evidence } => {
            assert!(evidence.contains("ev=tick") && evidence.contains("node=sub"), "{evidence}")
        }
        v => panic!("expected a failure, got {v}"),
    }
    assert_eq!(o.verdict(1, "shell"), Verdict::Pass);
    // A runtime that cannot be built fails every rule, the reason as evidence.
    for i in 0..3 {
        match o.verdict(i, "gone") {
            Verdict::Fail { evidence } => assert!(evidence.contains("install-gone.sh"), "{evidence}"),
            v => panic!("rule {i}: expected a failure, got {v}"),
        }
    }
    let table = o.table();
    assert_eq!(table[0].split_whitespace().collect::<Vec<_>>(), ["rule", "troupe", "shell", "gone"]);
    assert_eq!(table[1].split_whitespace().collect::<Vec<_>>(), ["noop.1", "PASS", "FAIL", "FAIL"]);
    assert_eq!(table[3].split_whitespace().collect::<Vec<_>>(), ["noop.3", "n/a", "n/a", "FAIL"]);
    let fails = o.failure_lines();
    assert!(fails.iter().any(|l| l.starts_with("shell noop.1 [three]: ")), "{fails:?}");
    assert_eq!(fails.iter().filter(|l| l.starts_with("gone ")).count(), 6, "{fails:?}");

    // The folders: one ordinary run folder per scenario and runtime, the failed one included.
    for sc in ["three", "none"] {
        for rt in ["troupe", "shell", "gone"] {
            assert!(dir.join(sc).join(rt).join("manifest.json").is_file(), "{sc}/{rt}");
        }
    }
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("conform.json")).unwrap()).unwrap();
    assert_eq!(j["workload"], "noop");
    assert_eq!(j["passed"], false);
    assert_eq!(j["runtimes"], serde_json::json!(["troupe", "shell", "gone"]));
    assert_eq!(j["rules"][0]["id"], "noop.1");
    assert_eq!(j["rules"][0]["runtimes"]["troupe"]["verdict"], "pass");
    assert_eq!(j["rules"][0]["runtimes"]["troupe"]["scenarios"]["none"]["verdict"], "n/a");
    assert_eq!(j["rules"][0]["runtimes"]["shell"]["verdict"], "fail");
    assert_eq!(j["runs"].as_array().unwrap().len(), 6);
    assert!(j["runs"].as_array().unwrap().iter().any(|r| r["dir"] == "three/gone" && r["status"] == "failed"));
    let md = std::fs::read_to_string(dir.join("conform.md")).unwrap();
    assert!(md.contains("| noop.1 | PASS | FAIL | FAIL |") && md.contains("## Failures"), "{md}");

    // Rule 2: the folder is not reused.
    let plan = driver::plan(&spec(&["troupe"], None)).unwrap();
    let e = driver::run(&plan, &dir, &ctx(tmp.path().join("project")), &Stop::new(), &mut Seen::default()).unwrap_err();
    assert!(e.to_string().contains("choose another --out"), "{e}");
}

#[test]
fn rule_5_a_runtime_following_the_contract_passes_on_the_one_scenario_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = driver::plan(&spec(&["troupe"], Some("three"))).unwrap();
    assert_eq!(plan.scenarios.len(), 1);
    let dir = tmp.path().join("c");
    let o = driver::run(&plan, &dir, &ctx(tmp.path().to_path_buf()), &Stop::new(), &mut Seen::default()).unwrap();
    assert!(o.passed(), "{:?}", o.failure_lines());
    assert_eq!(o.runs.len(), 1);
    assert_eq!(o.runs[0].status, "ok");
    assert!(dir.join("three/troupe/events.jsonl").is_file());
}

#[test]
fn rule_1_an_unknown_scenario_is_refused_listing_the_known() {
    let e = driver::plan(&spec(&["troupe"], Some("thre"))).unwrap_err().to_string();
    assert!(e.contains("thre") && e.contains("did you mean `three`?") && e.contains("scenarios: three, none"), "{e}");
}
