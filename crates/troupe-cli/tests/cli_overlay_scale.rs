//! `troupe lab run|sweep overlay-scale` through the real binary: the simulation is
//! deterministic (same config and seed, the same numbers), a sweep sets the overlays side by
//! side with the target check of issue 13, and a refused config starts nothing.

mod support;
use support::lab::{assert_success, output, read, sets, summary, text, TempLab};

#[test]
fn the_same_seed_gives_the_same_numbers_and_a_new_seed_others() {
    let tmp = tempfile::tempdir().unwrap();
    let mut got = Vec::new();
    for (name, seed) in [("a", "1"), ("b", "1"), ("c", "2")] {
        let out = tmp.path().join(name);
        let seed_set = format!("seed={seed}");
        let o = output(
            &["lab", "run", "overlay-scale", "--set", "nodes=32", "--set", &seed_set, "--out", out.to_str().unwrap()],
            tmp.path(),
        );
        assert_success(&o);
        let s = summary(&out);
        assert_eq!(s["status"], "ok", "{s}");
        assert!(s["bytes_total"].as_u64().unwrap() > 10_000, "{s}");
        assert!(s["messages_total"].as_u64().unwrap() > 100, "{s}");
        assert!(s["convergence_ms"].as_u64().is_some(), "32 nodes converge within 60 simulated s: {s}");
        assert!(out.join("overlay_traffic.csv").exists() && out.join("report.html").exists());
        got.push((s["bytes_total"].clone(), s["messages_total"].clone(), s["convergence_ms"].clone()));
    }
    assert_eq!(got[0], got[1], "same config and seed, same numbers");
    assert_ne!(got[0], got[2], "another seed, another HyParView overlay");
}

#[test]
fn a_sweep_sets_the_overlays_side_by_side_and_checks_the_target() {
    let lab = TempLab::new("sweep");
    let out = &lab.out;
    let mut args = vec!["lab", "sweep", "overlay-scale"];
    args.extend(sets(&["nodes=64", "overlay=full_mesh,hyparview", "duration_s=20"]));
    args.extend(["--out", out.to_str().unwrap()]);
    let o = output(&args, lab.path());
    assert_success(&o);
    let csv = read(&out.join("overlay_scale.csv"));
    let bytes = |overlay: &str| -> u64 {
        let line = csv.lines().find(|l| l.contains(&format!(",{overlay},64,"))).unwrap_or_else(|| panic!("{csv}"));
        line.split(',').nth(4).unwrap().parse().unwrap()
    };
    assert!(bytes("hyparview") < bytes("full_mesh"), "{csv}");
    let html = read(&out.join("report.html"));
    assert!(html.contains("Target met"), "the report states the target check");
    assert!(out.join("bytes.svg").exists() && out.join("convergence.svg").exists());
}

#[test]
fn a_zero_view_is_refused_before_anything_runs() {
    let lab = TempLab::new("never");
    let out = &lab.out;
    let o =
        output(&["lab", "run", "overlay-scale", "--set", "active_view=0", "--out", out.to_str().unwrap()], lab.path());
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("active_view") && err.contains("1..=64"), "{err}");
    assert!(!out.join("events.jsonl").exists(), "nothing ran");
}

#[test]
fn process_mode_runs_the_counter_on_real_node_processes_until_it_converges() {
    let lab = TempLab::new("processes");
    let out = &lab.out;
    let mut args = vec!["lab", "run", "overlay-scale"];
    args.extend(sets(&["mode=processes", "nodes=6", "overlay=hyparview", "period_ms=250", "duration_s=8"]));
    args.extend(["--out", out.to_str().unwrap()]);
    let o = output(&args, lab.path());
    assert_success(&o);
    let s = summary(out);
    assert_eq!(s["status"], "ok", "{s}");
    assert_eq!(s["mode"], "processes", "{s}");
    assert_eq!((s["nodes_started"].as_u64(), s["nodes_converged"].as_u64()), (Some(6), Some(6)), "{s}");
    assert!(s["convergence_ms"].as_u64().is_some(), "{s}");
    assert!(s["bytes_total"].as_u64().unwrap() > 0 && s["messages_total"].as_u64().unwrap() > 0, "{s}");
    assert!(s["counter_sent"].as_u64().unwrap() >= 6, "every node sent its state at least once: {s}");
    assert!(s["rss_kb_per_node"].as_u64().unwrap() > 0, "{s}");
    let events = read(&out.join("events.jsonl"));
    assert_eq!(events.matches("\"node_converged\"").count(), 6, "one per node");
}

#[test]
fn a_bogus_mode_is_refused_before_anything_runs() {
    let lab = TempLab::new("bogus");
    let out = &lab.out;
    let o = output(&["lab", "run", "overlay-scale", "--set", "mode=bogus", "--out", out.to_str().unwrap()], lab.path());
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("mode") && err.contains("sim, processes"), "{err}");
    assert!(!out.join("events.jsonl").exists(), "nothing ran");
}
