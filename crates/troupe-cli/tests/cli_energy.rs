//! `troupe lab run energy` through the real binary: every program (prime, ping_pong,
//! ping_pong_lb, ping_pong_lb_prime) native and distributed on tiny parameters, checking
//! `energy.csv` (the seed's columns plus `runtime,meter`, one row per repetition,
//! `meter=estimate` on a machine without RAPL), `summary.json`, the results, the lab's
//! `energy` events and `resources.jsonl`; a comparison with its ratio table; bad input refused
//! before anything starts; a program refusing a config with exit 2; a crashing peer
//! reported with its exit status; and the RAPL path end to end on a fake powercap tree
//! (`TROUPE_POWERCAP_ROOT`) whose counter a thread bumps: the meter is `rapl`, the counter's
//! wrap-around is followed, `meter=rapl` is refused where it does not work, and a counter that
//! vanishes mid-run fails the repetitions it no longer covers without mixing sources.

use std::time::Duration;

mod support;
use support::lab::{
    assert_code, assert_success, ctx, events, fake_project, json_lines, manifest, read, summary, text, troupe, wait,
    TempLab,
};

/// Whether this machine has working RAPL counters (then the meter is `rapl`, not `estimate`).
fn meter_here() -> &'static str {
    let p = troupe_lab::meter::probe(&troupe_lab::meter::ProbePaths::default(), || {
        std::thread::sleep(std::time::Duration::from_millis(200))
    });
    p.source.name()
}

const TINY: &[&str] =
    &["--set", "clients=3", "--set", "msgs=40", "--set", "servers=2", "--set", "range=3000", "--set", "reps=2"];

fn run(workload: &str, mode: &str) {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "run", "energy"],
        &[&["--set", &format!("workload={workload}"), "--set", &format!("mode={mode}")], TINY],
    );
    let ctx = format!("{workload} {mode}: {}\n{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let meter = meter_here();
    assert!(text(&o.stdout).contains(meter), "the summary line names the meter: {ctx}");
    assert_eq!(manifest(out)["status"], "ok", "{ctx}");
    // energy.csv: the seed's columns plus runtime,meter; one row per repetition.
    let csv = read(&out.join("energy.csv"));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "Module,Function,Parameter,Runtime (s),Samples,Average (uW),Consumption (uJ),Sampling interval (ns),\
             File,runtime,meter"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    for r in &rows {
        assert_eq!((r[0], r[1], r[9], r[10]), (workload, mode, "troupe", meter), "{csv}");
        assert!(r[3].parse::<f64>().unwrap() > 0.0, "runtime > 0: {csv}");
        assert!(r[6].parse::<f64>().unwrap() >= 0.0, "energy >= 0: {csv}");
        assert_eq!(r[7], "50000000");
    }
    let expected_param = match workload {
        "prime" => "3000",
        "ping_pong" => "3 40",
        "ping_pong_lb" => "2 3 40",
        _ => "2 3 40 3000",
    };
    assert_eq!(rows[0][2], expected_param);
    // summary.json
    let s = summary(out);
    for key in ["energy_uj", "runtime_s", "cpu_s", "peak_rss_bytes", "meter"] {
        assert!(!s[key].is_null(), "summary.json lacks {key}: {s}");
    }
    assert_eq!(s["meter"], meter);
    assert_eq!(
        (s["workload"].as_str(), s["program"].as_str(), s["mode"].as_str()),
        (Some("energy"), Some(workload), Some(mode))
    );
    assert_eq!(s["estimate"], meter == "estimate");
    // A run of a few milliseconds may end before the sampler's first reading on a loaded
    // machine (then it saw a zombie: RSS 0); `resources_follow_a_longer_run` checks the RSS.
    assert!(s["peak_rss_bytes"].as_u64().is_some(), "{s}");
    let expected_result = if workload == "prime" { 430 } else { 120 };
    assert_eq!(s["results"], serde_json::json!([expected_result, expected_result]), "{s}");
    if workload == "prime" {
        assert!(s["uj_per_round_trip"].is_null());
    } else {
        assert!(s["uj_per_round_trip"].as_f64().is_some(), "{s}");
    }
    // The program's work events and the lab's energy events, one per repetition.
    let evs = events(&out.join("events.jsonl"));
    let works: Vec<_> = evs.iter().filter(|e| e["ev"] == "work").collect();
    let energy: Vec<_> = evs.iter().filter(|e| e["ev"] == "energy").collect();
    assert_eq!((works.len(), energy.len()), (2, 2), "{ctx}");
    assert!(energy.iter().all(|e| e["source"] == meter && e["node"] == "lab"));
    // Every run folder gets the sampler's resources.jsonl.
    let res = read(&out.join("resources.jsonl"));
    assert!(res.lines().count() >= 2, "{res}");
    let last = json_lines(&out.join("resources.jsonl")).pop().unwrap();
    assert_eq!(last["last"], true);
    assert!(last["cpu_ms"].as_f64().unwrap() > 0.0, "{res}");
    let html = read(&out.join("report.html"));
    assert!(html.contains("<svg") && html.contains(meter), "report.html has plots and names the meter");
}

#[test]
fn prime_native_and_distributed() {
    run("prime", "native");
    run("prime", "distributed");
}

#[test]
fn ping_pong_native_and_distributed() {
    run("ping_pong", "native");
    run("ping_pong", "distributed");
}

#[test]
fn ping_pong_lb_native_and_distributed() {
    run("ping_pong_lb", "native");
    run("ping_pong_lb", "distributed");
}

#[test]
fn ping_pong_lb_prime_native_and_distributed() {
    run("ping_pong_lb_prime", "native");
    run("ping_pong_lb_prime", "distributed");
}

#[test]
fn resources_follow_a_longer_run() {
    longer_run("native");
    longer_run("distributed");
}

fn longer_run(mode: &str) {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "run", "energy", "--set", &format!("mode={mode}")],
        &[&["--set", "workload=prime", "--set", "range=1000000", "--set", "reps=1", "--set", "sample_ms=10"]],
    );
    assert_success(&o);
    let s = summary(out);
    assert_eq!(s["results"], serde_json::json!([78_498]), "{s}");
    assert!(s["peak_rss_bytes"].as_u64().unwrap() > 1_000_000, "{s}");
    assert!(s["energy_uj"].as_f64().unwrap() > 0.0, "{s}");
    assert!(s["cpu_s"].as_f64().unwrap() > 0.0, "{s}");
    // The run's totals from the sampler, which every workload's summary carries.
    assert!(s["resources"]["cpu_s"].as_f64().unwrap() >= s["cpu_s"].as_f64().unwrap(), "{s}");
    assert!(s["resources"]["peak_rss_bytes"].as_u64().unwrap() > 1_000_000, "{s}");
    assert!(s["resources"]["wall_s"].as_f64().unwrap() > 0.0, "{s}");
    let res = read(&out.join("resources.jsonl"));
    assert!(res.lines().count() >= 3, "{res}");
    if mode == "distributed" {
        // The node process is a descendant of the run process: the meter saw two processes.
        assert!(
            json_lines(&out.join("resources.jsonl")).iter().any(|l| l["procs"].as_u64() >= Some(2)),
            "the node process was not in the metered tree: {res}"
        );
    }
    assert!(out.join("resources-cpu.svg").exists() && out.join("resources-rss.svg").exists());
    let html = read(&out.join("report.html"));
    assert_eq!(html.matches("<h2>Resources</h2>").count(), 1, "the page shows the tree's CPU and RSS once");
}

#[test]
fn compare_writes_the_ratio_table() {
    let lab = TempLab::new("cmp");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "compare", "energy", "--runtimes", "troupe"],
        &[
            &["--set", "workload=prime,ping_pong"],
            TINY,
            // Repetitions long enough that the meter sees each (the seed drops rows of 0 uJ).
            &["--set", "range=200000", "--set", "msgs=2000"],
        ],
    );
    let ctx = ctx(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert!(text(&o.stdout).contains("ping_pong native \"3 2000\""), "{ctx}");
    let all = read(&out.join("energy_all.csv"));
    assert_eq!(all.lines().count(), 1 + 4, "two runs x two repetitions: {all}");
    let post = read(&out.join("energy_post.csv"));
    assert_eq!(post.lines().count(), 1 + 2, "{post}");
    let cmp = read(&out.join("compare.csv"));
    assert_eq!(cmp.lines().count(), 1 + 2, "{cmp}");
    assert!(cmp.contains(",troupe,prime,native,200000,ok,estimate,") || meter_here() != "estimate", "{cmp}");
    let html = read(&out.join("report.html"));
    assert!(html.contains("Ratios") && html.contains(meter_here()), "{html}");
    assert!(out.join("energy-energy-ping_pong-native.svg").exists());
    assert!(out.join("energy-time-prime-native.svg").exists());
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    for (set, word) in [
        ("workload=pingpong", "workload"),
        ("mode=cluster", "mode"),
        ("clients=0", "clients"),
        ("range=1", "range"),
        ("reps=0", "reps"),
    ] {
        let out = tmp.path().join(set.replace('=', "-"));
        let o = troupe().args(["lab", "run", "energy", "--out", out.to_str().unwrap(), "--set", set]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{set}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains(word), "{set}: {}", text(&o.stderr));
        assert!(!out.join("manifest.json").exists(), "{set}: nothing may start");
    }
}

#[test]
fn the_program_refuses_a_config_it_cannot_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("config.json");
    std::fs::write(&cfg, r#"{"workload":"ping_pong","mode":"cluster"}"#).unwrap();
    let o = troupe()
        .args(["lab", "exec", "energy"])
        .env("TROUPE_CONFIG", &cfg)
        .env("TROUPE_EVENTS", tmp.path().join("events.jsonl"))
        .env("TROUPE_RUN_ID", "x")
        .output()
        .unwrap();
    assert_code(&o, 2);
    let err = text(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("mode") && err.contains("native, distributed"), "{err}");
}

#[test]
fn a_crashing_peer_is_reported_with_its_exit_status() {
    let lab = TempLab::new("run");
    let home = lab.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    fake_project(&home, "energy", &[("crashy", "exit 0", "echo 'crashing on purpose' >&2\nexit 7")]);
    let o = lab.troupe(&["lab", "run", "energy", "--runtime", "crashy"]).env("TROUPE_HOME", &home).output().unwrap();
    assert_code(&o, 1);
    let m = manifest(&lab.out);
    assert_eq!(m["status"], "failed");
    assert!(m["reason"].as_str().unwrap().contains("exited with status 7"), "{m}");
}

/// A fake powercap tree whose package counter a thread bumps every 5 ms (wrapping at its
/// range), until `stop` is set or 60 s passed; `vanish` removes the counter file instead.
struct FakeRapl {
    root: tempfile::TempDir,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    vanish: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeRapl {
    fn start() -> FakeRapl {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("intel-rapl:0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), "package-0\n").unwrap();
        std::fs::write(d.join("max_energy_range_uj"), "1000000\n").unwrap();
        std::fs::write(d.join("energy_uj"), "0\n").unwrap();
        let (stop, vanish) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (s, v) = (Arc::clone(&stop), Arc::clone(&vanish));
        let thread = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut uj = 0u64;
            while !s.load(Ordering::SeqCst) && started.elapsed() < std::time::Duration::from_secs(60) {
                if v.load(Ordering::SeqCst) {
                    let _ = std::fs::remove_file(d.join("energy_uj"));
                } else {
                    // 5 ms at 14 W = 70,001 uJ; the counter wraps at 1,000,000 (every ~70 ms;
                    // a step that does not divide the range, so no whole number of wraps
                    // between two readings can look like 0 J).
                    uj = (uj + 70_001) % 1_000_000;
                    let tmp = d.join("energy_uj.tmp");
                    std::fs::write(&tmp, format!("{uj}\n")).unwrap();
                    std::fs::rename(&tmp, d.join("energy_uj")).unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        FakeRapl { root, stop, vanish, thread: Some(thread) }
    }
}

impl Drop for FakeRapl {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_working_rapl_counter_is_the_meter_and_is_shared_out() {
    let rapl = FakeRapl::start();
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab
        .troupe(&["lab", "run", "energy", "--set", "meter=rapl"])
        .env("TROUPE_POWERCAP_ROOT", rapl.root.path())
        .args(["--set", "workload=prime", "--set", "range=1000000", "--set", "reps=2", "--set", "sample_ms=10"])
        .output()
        .unwrap();
    drop(rapl);
    assert_success(&o);
    let s = summary(out);
    assert_eq!((s["meter"].as_str(), s["estimate"].as_bool()), (Some("rapl"), Some(false)), "{s}");
    let csv = read(&out.join("energy.csv"));
    assert_eq!(csv.lines().filter(|l| l.ends_with(",troupe,rapl")).count(), 2, "{csv}");
    let evs = events(&out.join("events.jsonl"));
    for e in evs.iter().filter(|e| e["ev"] == "energy") {
        assert_eq!(e["source"], "rapl");
        let share = e["share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{e}");
        assert!(e["uj"].as_f64().unwrap() >= 0.0, "{e}");
    }
    // The samples carry the host counter, wrap-around included (it wrapped every ~70 ms).
    let last = json_lines(&out.join("resources.jsonl")).pop().unwrap();
    assert!(last["energy_uj"].as_f64().unwrap() > 1_000_000.0, "{last}");
}

#[test]
fn rapl_asked_for_where_it_does_not_work_is_refused() {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab
        .troupe(&["lab", "run", "energy", "--set", "meter=rapl", "--set", "reps=1"])
        .env("TROUPE_POWERCAP_ROOT", lab.path().join("no-powercap"))
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    let m = manifest(out);
    assert_eq!(m["status"], "failed");
    assert!(m["reason"].as_str().unwrap().contains("meter=auto"), "{m}");
    assert!(!out.join("events.jsonl").exists() || events(&out.join("events.jsonl")).is_empty(), "nothing ran");
}

#[test]
fn a_counter_that_vanishes_mid_run_fails_the_repetitions_it_no_longer_covers() {
    let rapl = FakeRapl::start();
    let lab = TempLab::new("run");
    let out = &lab.out;
    let mut child = lab
        .troupe(&["lab", "run", "energy"])
        .env("TROUPE_POWERCAP_ROOT", rapl.root.path())
        .args(["--set", "workload=prime", "--set", "range=1000000", "--set", "reps=20", "--set", "sample_ms=10"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) for the sampler's tenth reading, then take the counter away.
    wait(Duration::from_secs(60), || {
        std::fs::read_to_string(out.join("resources.jsonl")).map_or(0, |t| t.lines().count()) >= 10
    });
    rapl.vanish.store(true, std::sync::atomic::Ordering::SeqCst);
    let status = child.wait().unwrap();
    drop(rapl);
    assert_eq!(status.code(), Some(1), "a run with failed repetitions fails");
    let m = manifest(out);
    let reason = m["reason"].as_str().unwrap();
    assert!(reason.contains("meter failed") && reason.contains("energy_uj"), "{reason}");
    let energy: Vec<_> = events(&out.join("events.jsonl")).into_iter().filter(|e| e["ev"] == "energy").collect();
    assert_eq!(energy.len(), 20);
    assert!(energy.iter().all(|e| e["source"] == "rapl"), "sources are never mixed");
    assert!(energy.iter().any(|e| e["uj"].is_null() && e["error"].as_str().is_some()));
    let csv = read(&out.join("energy.csv"));
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",troupe,rapl")), "{csv}");
}

#[test]
fn sweep_plots_energy_and_time_per_parameter() {
    let lab = TempLab::new("sweep");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "sweep", "energy", "--set", "clients=2,3"],
        &[&["--set", "msgs=40", "--set", "reps=2", "--set", "mode=native,distributed"]],
    );
    assert_success(&o);
    let sweep = read(&out.join("sweep.csv"));
    assert_eq!(sweep.lines().count(), 1 + 4, "{sweep}");
    let all = read(&out.join("energy_all.csv"));
    assert_eq!(all.lines().count(), 1 + 8, "four runs x two repetitions: {all}");
    for mode in ["native", "distributed"] {
        for what in ["energy", "time"] {
            let svg = out.join(format!("energy-{what}-ping_pong-{mode}.svg"));
            assert!(svg.exists(), "{}", svg.display());
        }
    }
    let html = read(&out.join("report.html"));
    assert!(html.contains("2 40") && html.contains("3 40"), "the parameters are named");
}
