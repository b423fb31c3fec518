//! The Elixir chat peer (`peers/elixir/chat`) against the lab's own chat analysis: the peer is
//! built with its build script, run on a config and the schedule the lab computes for it
//! (`msg_type = random`: kills and poison messages, every chat at once), in one process and distributed (a node per
//! group), and its event file must make a complete run for `ChatStats` with every planned fault
//! carried out, detected by each client of its chat, followed by that client's rejoin and the
//! chat's restart.
//!
//! Without `elixir` on PATH the test says so and passes, unless `TROUPE_TEST_REQUIRE_ERLANG=1`
//! (set by `scripts/test.sh` after it has installed every peer's toolchain, Elixir's included):
//! then a missing toolchain fails it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use troupe_lab::child::{self, ChildSpec, Ending, Stop};
use troupe_lab_workloads::chat::analysis::ChatStats;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn have_elixir() -> bool {
    std::process::Command::new("elixir").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn run_script(program: PathBuf, env: Vec<(String, String)>, dir: &Path, name: &str, limit: u64) -> (Ending, String) {
    let spec = ChildSpec {
        program,
        args: vec![],
        env,
        cwd: None,
        stdout: dir.join(format!("{name}-stdout.txt")),
        stderr: dir.join(format!("{name}-stderr.txt")),
    };
    let ending = child::run(&spec, Duration::from_secs(limit), &Stop::new()).unwrap();
    let err = std::fs::read_to_string(dir.join(format!("{name}-stderr.txt"))).unwrap_or_default();
    (ending, err)
}

#[test]
fn elixir_chat_peer_single_makes_a_complete_run_for_the_lab() {
    check_run(&["deployment=single"], 1);
}

#[test]
fn elixir_chat_peer_distributed_makes_a_complete_run_for_the_lab() {
    // 12 clients, 5 per process: 3 client nodes, each with its throughput and run_finished.
    // 2 server nodes, 3 client nodes and the discovery node.
    check_run(&["deployment=distributed", "num_supervisor=2", "chats_per_sup=2", "clients_per_process=5"], 6);
}

/// Runs the peer with the base config plus `sets`; `nodes` is how many nodes must finish.
fn check_run(sets: &[&str], nodes: usize) {
    if !have_elixir() {
        let msg = "elixir is not on PATH (install it with: bash scripts/install-elixir.sh)";
        assert!(std::env::var_os("TROUPE_TEST_REQUIRE_ERLANG").is_none(), "TROUPE_TEST_REQUIRE_ERLANG is set: {msg}");
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let peer = root().join("peers/elixir/chat");
    let dir = tempfile::tempdir().unwrap();
    // One build for both tests (they run in parallel; two `mix compile`s would share _build).
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let (ending, err) = run_script(peer.join("build"), vec![], dir.path(), "build", 600);
        match ending {
            Ending::Exited(s) if s.success() => Ok(()),
            other => Err(format!("build failed: {other:?}\n{err}")),
        }
    });
    if let Err(e) = built {
        panic!("{e}");
    }

    let mut b = troupe_lab_workloads::registry().builder("chat").unwrap();
    for s in [
        "chats_per_sup=4",
        "clients_per_server=3",
        "test_duration_secs=3",
        "warmup_s=1",
        "fault_pause_ms=700",
        // Every chat fails at 700, 1400, 2100 and 2800 ms: the last faults are recovered from
        // well inside the 3 s window (a fault in the window's last instants may be detected
        // after the run ends, which the lab allows and this test would not).
        "fault_phase=aligned",
        "msg_type=random",
    ]
    .iter()
    .chain(sets)
    {
        b.apply_set(s);
    }
    let cfg = b.build().unwrap();
    let sched = troupe_lab::workload::schedule_of(&troupe_lab_workloads::chat::Chat, &cfg);
    assert_eq!(sched.len(), 16, "4 chats failing every 700 ms for 3 s");
    assert!(sched.iter().any(|a| a.kind == "kill") && sched.iter().any(|a| a.kind == "error"));
    let (cfg_path, sched_path, ev_path) =
        (dir.path().join("config.json"), dir.path().join("schedule.jsonl"), dir.path().join("events.jsonl"));
    std::fs::write(&cfg_path, cfg.to_json().to_string()).unwrap();
    troupe_lab::schedule::write(&sched_path, &sched).unwrap();
    let env = vec![
        ("TROUPE_CONFIG".to_string(), cfg_path.display().to_string()),
        ("TROUPE_SCHEDULE".to_string(), sched_path.display().to_string()),
        ("TROUPE_EVENTS".to_string(), ev_path.display().to_string()),
        ("TROUPE_RUN_ID".to_string(), "lab-test".to_string()),
    ];
    let (ran, err) = run_script(peer.join("run"), env, dir.path(), "run", 120);
    assert!(matches!(ran, Ending::Exited(s) if s.success()), "run failed: {ran:?}\n{err}");

    let events = troupe_lab::events::read(&ev_path).unwrap();
    assert!(events.iter().all(|e| e.rt == "elixir" && e.raw["run"] == "lab-test"));
    let finished: std::collections::BTreeSet<&str> =
        events.iter().filter(|e| e.ev == "run_finished").map(|e| e.node.as_str()).collect();
    assert_eq!(finished.len(), nodes, "nodes that finished: {finished:?}");
    let st = ChatStats::compute(&cfg, &events, &sched);
    assert_eq!(st.completeness_problem(&cfg), None);
    let planned = sched.len() as u64;
    assert_eq!((st.injected, st.planned_faults, st.skipped_faults, st.errors), (planned, planned, 0, 0));
    assert_eq!(st.restarts, planned, "every kill and poison message restarts its chat");
    let det = st.detection_ms.clone().expect("detections");
    let rec = st.reconnection_ms.clone().expect("reconnections");
    assert_eq!(det.n as u64, planned * 3, "each fault is detected by its chat's 3 clients");
    assert_eq!(rec.n as u64, planned * 3, "and each of them rejoins");
    assert!(det.max < 1000.0 && rec.max < 1000.0, "detection {det:?}, reconnection {rec:?}");
}
