//! The energy meter (`troupe_lab::meter`): the RAPL powercap reader on a fake powercap tree
//! (domains, wrap-around, a counter that reads 0 J not counted as working, a counter that
//! vanishes), the probe's order and labels, the process-tree reader on a fake `/proc`, the
//! integration of samples over an interval (estimate and Scaphandre share), the lab's `energy`
//! events, and the sampler on a real child process.

use std::path::Path;
use std::time::{Duration, Instant};

use troupe_lab::meter::energy::{append_energy_events, energy_over, value_at};
use troupe_lab::meter::procfs::{host_busy_ms, parse_stat, tree_usage, TreeTracker};
use troupe_lab::meter::rapl::{self, increment, Powercap};
use troupe_lab::meter::sampler::{read_samples, Sample, Sampler, SamplerOptions};
use troupe_lab::meter::{choose, perf, probe, Counter, MeterError, ProbePaths, Source};

fn domain(root: &Path, dir: &str, name: &str, uj: u64, max: u64) {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
    std::fs::write(d.join("energy_uj"), format!("{uj}\n")).unwrap();
    std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
}

fn set(root: &Path, dir: &str, uj: u64) {
    std::fs::write(root.join(dir).join("energy_uj"), format!("{uj}\n")).unwrap();
}

fn fake_powercap() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    domain(t.path(), "intel-rapl:0", "package-0", 1_000, 10_000);
    domain(t.path(), "intel-rapl:0:0", "core", 500, 10_000);
    domain(t.path(), "intel-rapl:0:1", "dram", 100, 5_000);
    domain(t.path(), "intel-rapl:1", "psys", 7, 10_000);
    t
}

#[test]
fn powercap_reads_package_and_dram_only() {
    let t = fake_powercap();
    let mut pc = Powercap::open(t.path()).unwrap();
    let names: Vec<&str> = pc.domains().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec!["package-0", "dram"]);
    set(t.path(), "intel-rapl:0", 1_600);
    set(t.path(), "intel-rapl:0:1", 150);
    set(t.path(), "intel-rapl:0:0", 9_999); // core: ignored
    assert_eq!(pc.read_uj().unwrap(), 650.0);
}

#[test]
fn powercap_handles_wrap_around() {
    assert_eq!(increment(9_900, 100, 10_000), 200);
    assert_eq!(increment(100, 300, 10_000), 200);
    let t = fake_powercap();
    let mut pc = Powercap::open(t.path()).unwrap();
    set(t.path(), "intel-rapl:0", 9_000);
    assert_eq!(pc.read_uj().unwrap(), 8_000.0);
    // The package counter wraps past its 10,000 uJ range: 9,000 -> 10,000 -> 0 -> 500.
    set(t.path(), "intel-rapl:0", 500);
    assert_eq!(pc.read_uj().unwrap(), 9_500.0);
    // The DRAM counter wraps on its own range (5,000).
    set(t.path(), "intel-rapl:0:1", 50);
    assert_eq!(pc.read_uj().unwrap(), 9_500.0 + 4_950.0);
}

#[test]
fn a_counter_reading_zero_joules_does_not_count_as_working() {
    let t = fake_powercap();
    let err = rapl::probe(t.path(), || {}).unwrap_err();
    assert!(err.to_string().contains("read 0 J"), "{err}");
    let paths = ProbePaths { powercap: t.path().into(), perf_pmu: t.path().join("none") };
    let p = probe(&paths, || {});
    assert_eq!(p.source, Source::Estimate);
    assert!(!p.findings[0].works && p.findings[0].detail.contains("0 J"), "{:?}", p.findings);
    // The same tree with a counter that moves during the probe works.
    let p = probe(&paths, || set(t.path(), "intel-rapl:0", 2_000));
    assert_eq!(p.source, Source::Rapl);
    assert!(matches!(p.counter, Some(Counter::Rapl(_))));
    assert!(p.findings[0].works);
}

/// A `power` PMU as the kernel describes it on a RAPL machine, with a type number no PMU has.
fn fake_power_pmu() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("power");
    std::fs::create_dir_all(d.join("events")).unwrap();
    std::fs::create_dir_all(d.join("format")).unwrap();
    for (file, text) in [
        ("type", "4000000"),
        ("cpumask", "0"),
        ("format/event", "config:0-7"),
        ("events/energy-pkg", "event=0x02"),
        ("events/energy-pkg.scale", "2.3283064365386962890625e-10"),
        ("events/energy-ram", "event=0x03"),
        ("events/energy-ram.scale", "2.3283064365386962890625e-10"),
    ] {
        std::fs::write(d.join(file), format!("{text}\n")).unwrap();
    }
    t
}

#[test]
fn perf_pmu_description_is_read_from_sysfs() {
    let t = fake_power_pmu();
    let spec = perf::describe(t.path()).unwrap();
    assert_eq!(spec.pmu_type, 4_000_000);
    assert_eq!(spec.cpus, vec![0]);
    let names: Vec<&str> = spec.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["energy-pkg", "energy-ram"]);
    assert_eq!((spec.events[0].config, spec.events[1].config), (2, 3));
    assert!((spec.events[0].scale - 2f64.powi(-32)).abs() < 1e-20);
    // A malformed scale is refused naming the file.
    std::fs::write(t.path().join("power/events/energy-pkg.scale"), "zero\n").unwrap();
    let err = perf::describe(t.path()).unwrap_err().to_string();
    assert!(err.contains("energy-pkg.scale"), "{err}");
    // No PMU at all says which file is absent.
    let err = perf::describe(&t.path().join("none")).unwrap_err().to_string();
    assert!(err.contains("energy-pkg") && err.contains("absent"), "{err}");
}

#[test]
fn probe_order_and_labels() {
    let none = ProbePaths { powercap: "/nonexistent/powercap".into(), perf_pmu: "/nonexistent/pmu".into() };
    let p = probe(&none, || {});
    let order: Vec<Source> = p.findings.iter().map(|f| f.source).collect();
    assert_eq!(order, vec![Source::Rapl, Source::Perf, Source::Estimate]);
    assert_eq!(p.source, Source::Estimate);
    assert_eq!(p.source.name(), "estimate");
    assert!(p.findings[2].detail.contains("not a measurement"));
    // Asking for RAPL where it does not work is refused with the probe's reason.
    let err = choose(probe(&none, || {}), "rapl").unwrap_err();
    assert!(matches!(err, MeterError::Unavailable { .. }));
    assert!(err.to_string().contains("meter=auto"), "{err}");
    // A perf PMU that cannot be opened (the fake one: its type number is no PMU of this
    // kernel, or the PMU is absent) is reported with the reason, and the estimate runs.
    let t = fake_power_pmu();
    let p = probe(&ProbePaths { powercap: "/nonexistent".into(), perf_pmu: t.path().into() }, || {});
    assert!(!p.findings[1].works && p.findings[1].detail.contains("perf_event_open"), "{:?}", p.findings[1]);
    let err = choose(probe(&ProbePaths { powercap: "/nonexistent".into(), perf_pmu: t.path().into() }, || {}), "perf")
        .unwrap_err();
    assert!(err.to_string().contains("perf_event_open"), "{err}");
    assert_eq!(p.source, Source::Estimate);
}

#[test]
fn a_vanished_counter_fails_the_reading_with_its_path() {
    let t = fake_powercap();
    let mut pc = Powercap::open(t.path()).unwrap();
    std::fs::remove_file(t.path().join("intel-rapl:0/energy_uj")).unwrap();
    let err = pc.read_uj().unwrap_err();
    assert!(matches!(err, MeterError::Counter { .. }));
    assert!(err.to_string().contains("intel-rapl:0/energy_uj"), "{err}");
}

/// A `/proc/<pid>/stat` line: (pid, ppid, utime, stime, cutime, cstime, rss pages).
fn stat_line(comm: &str, (pid, ppid, ut, st, cut, cst, rss): (u32, u32, u64, u64, u64, u64, u64)) -> String {
    format!("{pid} ({comm}) S {ppid} 1 1 0 -1 4194560 100 0 0 0 {ut} {st} {cut} {cst} 20 0 4 0 100 1000000 {rss} 0 0 0")
}

#[test]
fn process_tree_sums_descendants_only() {
    let parsed = parse_stat(&stat_line("a b) (c", (7, 1, 3, 4, 5, 6, 9))).unwrap();
    assert_eq!((parsed.pid, parsed.ppid, parsed.own_ticks, parsed.child_ticks, parsed.rss_pages), (7, 1, 7, 11, 9));
    let t = tempfile::tempdir().unwrap();
    let procs = [
        (10, 1, 100, 50, 20, 0, 10),   // the root: 150 own + 20 reaped children
        (11, 10, 30, 10, 0, 0, 5),     // a child
        (12, 11, 5, 5, 0, 0, 1),       // a grandchild
        (13, 1, 1000, 1000, 0, 0, 99), // not in the tree
    ];
    for p in procs {
        let d = t.path().join(p.0.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stat"), stat_line("x", p)).unwrap();
    }
    std::fs::create_dir_all(t.path().join("self")).unwrap();
    let u = tree_usage(t.path(), 10, 100.0, 4096).unwrap();
    assert_eq!(u.procs, 3);
    assert_eq!(u.cpu_ms, (150 + 20 + 40 + 10) as f64 * 10.0);
    assert_eq!(u.rss_bytes, 16 * 4096);
    assert!(tree_usage(t.path(), 99, 100.0, 4096).is_none());
    let stat = "cpu  100 0 50 1000 20 0 5 25 0 0\ncpu0 1 2 3 4\n";
    assert_eq!(host_busy_ms(stat, 100.0), Some((100.0 + 50.0 + 5.0) * 10.0));
}

fn sample(ts_us: i64, cpu_ms: f64, busy: f64, uj: Option<f64>) -> Sample {
    Sample { ts_us, cpu_ms, rss_bytes: 1_000, procs: 1, host_busy_ms: busy, energy_uj: uj, ..Sample::default() }
}

#[test]
fn integration_over_an_interval() {
    let s = vec![sample(0, 0.0, 0.0, None), sample(1_000_000, 500.0, 0.0, None), sample(2_000_000, 1500.0, 0.0, None)];
    assert_eq!(value_at(&s, 500_000, |s| s.cpu_ms), 250.0);
    assert_eq!(value_at(&s, -5, |s| s.cpu_ms), 0.0);
    assert_eq!(value_at(&s, 9_000_000, |s| s.cpu_ms), 1500.0);
    // From 0.5 s to 1.5 s: 250 -> 1000 ms of CPU = 0.75 s x 4 W = 3 J.
    let e = energy_over(&s, Source::Estimate, 500_000, 1_500_000, 4.0).unwrap();
    assert!((e.uj - 3_000_000.0).abs() < 1e-3, "{e:?}");
    assert!((e.cpu_s - 0.75).abs() < 1e-9);
    assert_eq!((e.samples, e.runtime_s, e.share), (1, 1.0, 1.0));
}

#[test]
fn rapl_energy_is_shared_by_cpu_time() {
    // The host used 10 J and 2,000 ms of busy CPU over the second; the tree 500 ms: a quarter.
    let s = vec![sample(0, 0.0, 0.0, Some(0.0)), sample(1_000_000, 500.0, 2000.0, Some(10_000_000.0))];
    let e = energy_over(&s, Source::Rapl, 0, 1_000_000, 99.0).unwrap();
    assert!((e.share - 0.25).abs() < 1e-12);
    assert!((e.uj - 2_500_000.0).abs() < 1e-6, "{e:?}");
    // The share never exceeds 1.
    let s = vec![sample(0, 0.0, 0.0, Some(0.0)), sample(1_000_000, 900.0, 300.0, Some(1_000.0))];
    let e = energy_over(&s, Source::Rapl, 0, 1_000_000, 99.0).unwrap();
    assert_eq!((e.share, e.uj), (1.0, 1_000.0));
}

#[test]
fn a_counter_failing_mid_run_fails_the_later_repetitions() {
    let mut s = vec![
        sample(0, 0.0, 0.0, Some(0.0)),
        sample(1_000_000, 100.0, 200.0, Some(1_000.0)),
        sample(2_000_000, 200.0, 400.0, None),
    ];
    s[2].error = Some("permission denied".into());
    assert!(energy_over(&s, Source::Rapl, 0, 900_000, 1.0).is_ok());
    let err = energy_over(&s, Source::Rapl, 500_000, 1_500_000, 1.0).unwrap_err();
    assert!(err.to_string().contains("permission denied"), "{err}");
}

#[test]
fn the_lab_appends_one_energy_event_per_work_event() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    std::fs::write(dir.join("meter.json"), r#"{"source":"estimate","watts_per_core":2.0}"#).unwrap();
    let lines: Vec<String> = [sample(0, 0.0, 0.0, None), sample(2_000_000, 2000.0, 0.0, None)]
        .iter()
        .map(|s| serde_json::to_string(s).unwrap())
        .collect();
    std::fs::write(dir.join("resources.jsonl"), lines.join("\n") + "\n").unwrap();
    let ev = dir.join("events.raw.jsonl");
    std::fs::write(
        &ev,
        concat!(
            r#"{"ts_us":1,"run":"r","rt":"x","node":"n","ev":"run_started"}"#,
            "\n",
            r#"{"ts_us":2,"run":"r","rt":"x","node":"n","ev":"work","rep":0,"start_us":0,"end_us":1000000,"result":5}"#,
            "\n"
        ),
    )
    .unwrap();
    assert_eq!(append_energy_events(dir, &ev, "r", "x").unwrap(), 1);
    let evs = troupe_lab::events::read(&ev).unwrap();
    let e = evs.iter().find(|e| e.ev == "energy").expect("an energy event");
    assert_eq!(e.str("source"), "estimate");
    assert_eq!(e.node, "lab");
    assert_eq!(e.int("rep"), 0);
    // One CPU second at 2 W.
    assert!((e.raw["uj"].as_f64().unwrap() - 2_000_000.0).abs() < 1e-3);
    assert_eq!(e.raw["runtime_s"].as_f64(), Some(1.0));
    // No work event: nothing appended.
    let ev2 = dir.join("other.jsonl");
    std::fs::write(&ev2, "").unwrap();
    assert_eq!(append_energy_events(dir, &ev2, "r", "x").unwrap(), 0);
}

#[test]
fn every_report_gets_the_resource_charts_once() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    // Without samples nothing happens.
    troupe_lab::meter::charts::add_to_report(dir).unwrap();
    assert!(!dir.join("resources-cpu.svg").exists());
    let lines: Vec<String> =
        [sample(0, 0.0, 0.0, None), sample(100_000, 50.0, 0.0, None), sample(200_000, 150.0, 0.0, None)]
            .iter()
            .map(|s| serde_json::to_string(s).unwrap())
            .collect();
    std::fs::write(dir.join("resources.jsonl"), lines.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("report.html"), "<html><body><p>page</p></body></html>\n").unwrap();
    troupe_lab::meter::charts::add_to_report(dir).unwrap();
    troupe_lab::meter::charts::add_to_report(dir).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<h2>Resources</h2>").count(), 1, "{html}");
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.trim_end().ends_with("</body></html>"));
    assert!(dir.join("resources-cpu.svg").exists() && dir.join("resources-rss.svg").exists());
}

#[test]
fn the_sampler_follows_a_real_child_tree() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("resources.jsonl");
    // A shell that spins in a child for a while (bounded: at most 3 s of wall time).
    let mut child =
        std::process::Command::new("sh").args(["-c", "timeout 3 sh -c 'while :; do :; done' ; true"]).spawn().unwrap();
    let s = Sampler::start(SamplerOptions {
        pid: child.id(),
        interval: Duration::from_millis(20),
        proc_root: "/proc".into(),
        out: out.clone(),
        counter: None,
        spawned_us: Some(troupe_lab::events::writer::now_us()),
        scrape: None,
        work_events: None,
    })
    .unwrap();
    // Wait (bounded) until the samples show the grandchild's CPU time.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = read_samples(&out).unwrap_or_default();
        if got.iter().any(|s| s.cpu_ms >= 100.0 && s.procs >= 2) || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait().unwrap();
    s.finish().unwrap();
    let got = read_samples(&out).unwrap();
    assert!(got.len() >= 3, "{got:?}");
    assert_eq!((got[0].cpu_ms, got[0].procs), (0.0, 0), "the line before the spawn: {:?}", got[0]);
    assert!(got.iter().any(|s| s.procs >= 2 && s.rss_bytes > 0), "the tree's descendants were not seen: {got:?}");
    assert!(got.windows(2).all(|w| w[1].cpu_ms >= w[0].cpu_ms && w[1].ts_us >= w[0].ts_us));
    let last = got.last().unwrap();
    assert!(last.last, "the last sample is marked");
    assert!(last.cpu_ms >= 100.0, "the spinning grandchild's CPU time is counted: {last:?}");
    assert!(last.energy_uj.is_none(), "no RAPL here: no energy figure in the samples");
}

/// Writes a fake `/proc/<pid>/stat` for each of `procs` and removes every other pid's folder.
fn fake_procs(root: &Path, procs: &[(u32, u32, u64, u64, u64, u64, u64)]) {
    for e in std::fs::read_dir(root).unwrap().flatten() {
        std::fs::remove_dir_all(e.path()).unwrap();
    }
    for &p in procs {
        let d = root.join(p.0.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stat"), stat_line("x", p)).unwrap();
    }
}

#[test]
fn the_tracked_tree_keeps_the_time_of_processes_that_left_it() {
    let t = tempfile::tempdir().unwrap();
    let mut tr = TreeTracker::default();
    let read = |tr: &mut TreeTracker| tr.read(t.path(), 10, 100.0, 4096).unwrap();
    // The root, a child and a grandchild: (100 + 30 + 10) ticks of 10 ms.
    fake_procs(t.path(), &[(10, 1, 100, 0, 0, 0, 1), (11, 10, 30, 0, 0, 0, 1), (12, 11, 10, 0, 0, 0, 1)]);
    assert_eq!((read(&mut tr).cpu_ms, read(&mut tr).procs), (1400.0, 3));
    // The grandchild ends at 15 ticks and its parent reaps it: the parent's reaped time shows
    // all 15, of which 10 were counted already; the parent itself ran 10 more.
    fake_procs(t.path(), &[(10, 1, 100, 0, 0, 0, 1), (11, 10, 40, 0, 15, 0, 1)]);
    let u = read(&mut tr);
    assert_eq!((u.cpu_ms, u.procs), (1550.0, 2), "nothing counted twice, the tail counted once");
    // A grandchild the tree reads, then its parent exits (reaped by the root, 42 ticks in all)
    // and the grandchild is orphaned: it leaves the tree and what it was counted with stays in
    // the sum, where a plain sum over the live tree drops it.
    fake_procs(t.path(), &[(10, 1, 100, 0, 0, 0, 1), (11, 10, 40, 0, 15, 0, 1), (13, 11, 20, 0, 0, 0, 1)]);
    assert_eq!(read(&mut tr).cpu_ms, 1750.0);
    fake_procs(t.path(), &[(10, 1, 100, 0, 42 + 15, 0, 1), (13, 1, 25, 0, 0, 0, 1)]);
    assert_eq!(read(&mut tr).cpu_ms, 1770.0, "the child's 2-tick tail, through the root's reaped time");
    assert_eq!(tree_usage(t.path(), 10, 100.0, 4096).unwrap().cpu_ms, 1570.0);
    // A child the tree never saw, reaped by the root, is counted through the root's reaped time.
    fake_procs(t.path(), &[(10, 1, 100, 0, 57 + 7, 0, 1)]);
    assert_eq!(read(&mut tr).cpu_ms, 1840.0);
    // A pid used again by a new process (another start time) is a new process.
    let mut again = stat_line("x", (11, 10, 3, 0, 0, 0, 1));
    again = again.replace(" 100 1000000 ", " 900 1000000 ");
    fake_procs(t.path(), &[(10, 1, 100, 0, 64, 0, 1)]);
    std::fs::create_dir_all(t.path().join("11")).unwrap();
    std::fs::write(t.path().join("11/stat"), again).unwrap();
    assert_eq!(read(&mut tr).cpu_ms, 1870.0);
    fake_procs(t.path(), &[]);
    assert!(tr.read(t.path(), 10, 100.0, 4096).is_none());
    assert_eq!(tr.cpu_ms(), 1870.0, "the sum outlives the tree");
}

#[test]
fn the_sampler_reads_right_after_each_work_line() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("resources.jsonl");
    let events = t.path().join("events.jsonl");
    // A program that ends a repetition, lives on for a while, and exits. The sampler's interval
    // is far longer than the program, so only the work line can bring a reading in between.
    let script = format!(
        "echo '{{\"ev\":\"run_started\"}}' > {e}; sleep 0.2; echo '{{\"ev\": \"work\", \"rep\": 0}}' >> {e}; sleep 2",
        e = events.display()
    );
    let mut child = std::process::Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let s = Sampler::start(SamplerOptions {
        pid: child.id(),
        interval: Duration::from_secs(600),
        proc_root: "/proc".into(),
        out: out.clone(),
        counter: None,
        spawned_us: Some(troupe_lab::events::writer::now_us()),
        scrape: None,
        work_events: Some(events.clone()),
    })
    .unwrap();
    child.wait().unwrap();
    s.finish().unwrap();
    let got = read_samples(&out).unwrap();
    let work: Vec<&Sample> = got.iter().filter(|s| s.work).collect();
    assert_eq!(work.len(), 1, "one reading for the one work line: {got:?}");
    assert!(work[0].procs >= 1, "taken while the program still lived: {got:?}");
    assert_eq!(got.len(), 4, "the zero line, the first reading, the work reading, the last: {got:?}");
}
