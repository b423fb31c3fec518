//! The core alone: run, sweep, compare and report with `testkit::Noop` and no real workload.
//! The systems under test are shell scripts following the environment contract (a "troupe"
//! one through `TroupeExe`, a peer runtime `shell` under a temporary project root), so what is
//! checked is the core's machinery: folders, manifests, statuses, `summary.json`, the generic
//! reports and the rebuild of each from the recorded files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use troupe_lab::child::Stop;
use troupe_lab::compare::{self, CompareSpec, RunContext};
use troupe_lab::config::{Config, ConfigBuilder};
use troupe_lab::manifest::{Manifest, Status};
use troupe_lab::registry::Registry;
use troupe_lab::run::{self, RunRequest, TroupeExe};
use troupe_lab::sweep::{self, SweepObserver, SweepSpec};
use troupe_lab::testkit::Noop;

/// A system under test in `sh`: `run_started`, `ticks - short` tick events, and `run_finished`
/// unless `finish` is false.
fn script(short: u32, finish: bool) -> String {
    let finished = if finish { r#"line run_finished '"dropped_events":0,"errors":0'"# } else { "exit 0" };
    format!(
        r#"set -eu
ticks=$(sed -E 's/.*"ticks":([0-9]+).*/\1/' "$TROUPE_CONFIG")
line() {{ printf '{{"ts_us":%s,"run":"%s","rt":"sh","node":"sub","ev":"%s"%s}}\n' "$(date +%s%6N)" "$TROUPE_RUN_ID" "$1" "${{2:+,$2}}" >> "$TROUPE_EVENTS"; }}
line run_started '"workload":"noop"'
i={short}
while [ "$i" -lt "$ticks" ]; do line tick "\"n\":$i"; i=$((i + 1)); done
{finished}
"#
    )
}

fn sh(short: u32, finish: bool) -> TroupeExe {
    TroupeExe { program: PathBuf::from("/bin/sh"), args: vec!["-c".into(), script(short, finish)] }
}

fn config(sets: &[&str]) -> Config {
    let mut b = ConfigBuilder::new(&Noop);
    for s in sets {
        b.apply_set(s);
    }
    b.build().unwrap()
}

fn registry() -> Registry {
    Registry::new(vec![&Noop])
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_complete_run_is_ok_and_its_report_rebuilds_from_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let req = RunRequest::new(&Noop, config(&["ticks=4"]), "troupe", dir.clone(), sh(0, true));
    let out = run::run(&req, &Stop::new()).unwrap();
    assert_eq!(out.manifest.status, Status::Ok, "{:?}", out.manifest.reason);
    assert_eq!((out.manifest.workload.as_str(), out.manifest.run_id.as_str()), ("noop", "run"));
    let s = summary(&dir);
    assert_eq!((s["ticks"].as_u64(), s["expected_ticks"].as_u64()), (Some(4), Some(4)), "{s}");
    assert_eq!((s["status"].as_str(), s["workload"].as_str()), (Some("ok"), Some("noop")));
    assert!(std::fs::read_to_string(dir.join("report.html")).unwrap().contains("4 of 4"));
    for f in ["config.json", "schedule.jsonl", "events.jsonl", "manifest.json"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    // The report comes back from the recorded files alone, through the registry's workload.
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let w = registry().get(&Manifest::read(&dir).unwrap().workload).unwrap();
    let (m, _, st) = troupe_lab::run_folder::rebuild_run(w, &dir, None).unwrap();
    assert_eq!((m.status, st.unwrap().headline()), (Status::Ok, "4 ticks".to_string()));
    assert_eq!(summary(&dir)["ticks"].as_u64(), Some(4));
}

#[test]
fn a_run_short_of_ticks_is_degraded_and_one_without_its_end_is_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let short = tmp.path().join("short");
    let out =
        run::run(&RunRequest::new(&Noop, config(&["ticks=3"]), "troupe", short.clone(), sh(1, true)), &Stop::new())
            .unwrap();
    assert_eq!(out.manifest.status, Status::Degraded);
    assert_eq!(out.manifest.reason.as_deref(), Some("degraded: 1 of 3 ticks missing"));
    assert_eq!(summary(&short)["degraded"], serde_json::json!(["1 of 3 ticks missing"]));

    let cut = tmp.path().join("cut");
    let out =
        run::run(&RunRequest::new(&Noop, config(&[]), "troupe", cut.clone(), sh(0, false)), &Stop::new()).unwrap();
    assert_eq!(out.manifest.status, Status::Failed);
    assert!(out.manifest.reason.as_deref().unwrap_or("").contains("no run_finished"), "{:?}", out.manifest.reason);

    // A used folder is refused before anything starts (rule 1).
    let e = run::run(&RunRequest::new(&Noop, config(&[]), "troupe", cut, sh(0, true)), &Stop::new()).unwrap_err();
    assert!(e.to_string().contains("already holds a run"), "{e}");
}

#[derive(Default)]
struct Seen {
    finished: Vec<(String, Status)>,
}

impl SweepObserver for Seen {
    fn planned(&mut self, _: usize, _: usize) {}
    fn started(&mut self, _: &sweep::Point) {}
    fn finished(&mut self, p: &sweep::Point, o: &run::RunOutcome) {
        self.finished.push((p.name.clone(), o.manifest.status));
    }
}

#[test]
fn a_sweep_runs_every_point_and_writes_the_generic_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let spec = SweepSpec {
        workload: &Noop,
        config_file: None,
        sets: vec!["ticks=1,2".into()],
        runtimes: vec!["troupe".into()],
        reps: 1,
    };
    let grid = sweep::expand(&spec).unwrap();
    assert_eq!(grid.file.workload, "noop");
    let mut seen = Seen::default();
    let s = sweep::run(&grid, &dir, &sh(0, true), None, &[], &Stop::new(), &mut seen).unwrap();
    assert_eq!((s.ok, s.failed), (2, 0));
    assert_eq!(seen.finished.len(), 2);
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "point,runtime,rep,status,expected_ticks,ticks", "{csv}");
    assert!(lines[1] == "troupe_ticks-1,troupe,1,ok,1,1", "{csv}");
    assert!(lines[2] == "troupe_ticks-2,troupe,1,ok,2,2", "{csv}");
    // Rebuilt through the registry from the folder alone.
    std::fs::remove_file(dir.join("sweep.csv")).unwrap();
    assert_eq!(sweep::write_report(&registry(), &dir).unwrap(), 2);
    assert_eq!(std::fs::read_to_string(dir.join("sweep.csv")).unwrap(), csv);
    // A second sweep over the same folder has nothing left to do.
    let again = sweep::run(&grid, &dir, &sh(0, true), None, &[], &Stop::new(), &mut Seen::default()).unwrap();
    assert_eq!((again.ok, again.skipped), (0, 2));
}

fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_comparison_runs_troupe_and_a_peer_on_one_schedule_and_counts_the_degraded_one() {
    let tmp = tempfile::tempdir().unwrap();
    // A project root with a peer runtime `shell` whose noop program loses one tick.
    let root = tmp.path().join("project");
    executable(&root.join("peers/shell/noop/build"), "#!/bin/sh\nexit 0\n");
    executable(&root.join("peers/shell/noop/run"), &format!("#!/bin/sh\n# one tick short\n{}", script(1, true)));
    executable(&root.join("peers/shell/version"), "#!/bin/sh\necho shell 1.0\n");
    let spec = CompareSpec {
        workload: &Noop,
        config_file: None,
        sets: vec!["ticks=2".into()],
        runtimes: vec!["troupe".into(), "shell".into()],
        focus: None,
        reps: 1,
    };
    let plan = compare::plan(&spec).unwrap();
    let dir = tmp.path().join("cmp");
    let ctx = RunContext {
        troupe: sh(0, true),
        project_root: Some(root),
        command: vec!["test".into()],
        deadline_slack: Duration::from_secs(60),
    };
    let s = compare::run(&plan, &dir, &ctx, &Stop::new(), &mut Seen::default()).unwrap();
    assert_eq!((s.ok, s.degraded, s.failed), (1, 1, 0));
    let csv = std::fs::read_to_string(dir.join("compare.csv")).unwrap();
    assert!(csv.contains(",troupe,1,ok,2,2"), "{csv}");
    assert!(csv.contains(",shell,1,degraded: 1 of 2 ticks missing,2,1"), "{csv}");
    // Both runtimes got the same schedule file, byte for byte.
    let point = &plan.points[0].name;
    let sched = std::fs::read(dir.join("schedules").join(format!("{point}.jsonl"))).unwrap();
    for rt in ["troupe", "shell"] {
        assert_eq!(std::fs::read(dir.join(rt).join(point).join("schedule.jsonl")).unwrap(), sched, "{rt}");
    }
    let peer = Manifest::read(&dir.join("shell").join(point)).unwrap();
    assert_eq!(peer.runtime_version, "shell 1.0");
    assert_eq!(compare::write_report(&registry(), &dir).unwrap().len(), 2);
}

#[test]
fn the_registry_refuses_an_unknown_workload_with_the_names_it_has() {
    let e = registry().get("nop").unwrap_err().to_string();
    assert!(e.contains("did you mean `noop`?") && e.contains("available: noop"), "{e}");
    let e = registry().by_role("chat").unwrap_err().to_string();
    assert!(e.contains("programs: noop"), "{e}");
    // A folder of another workload is not read as this one's.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    run::run(&RunRequest::new(&Noop, config(&[]), "troupe", dir.clone(), sh(0, true)), &Stop::new()).unwrap();
    let mut m = Manifest::read(&dir).unwrap();
    m.workload = "chat".into();
    m.write(&dir).unwrap();
    let e = troupe_lab::run_folder::load_run(&Noop, &dir, None).unwrap_err().to_string();
    assert!(e.contains("a run of workload \"chat\", read as one of \"noop\""), "{e}");
}
