//! The runtime's own metrics in a real run's `resources.jsonl`: the lab gives the Troupe program
//! `TROUPE_OBSERVE_LISTEN`, `troupe lab exec` serves Prometheus text there
//! (crates/troupe-cli/src/lab/exec.rs), and the sampler writes its `troupe_*` series into the
//! samples (rule 5 of `troupe_lab::meter::sampler`).

mod support;

use support::lab::{assert_success, json, json_lines, run_with_env, TempLab};

#[test]
fn a_troupe_runs_samples_carry_its_troupe_series() {
    let lab = TempLab::new("observed");
    // 1 s of warm-up and 3 s of window: about 8 samples at the default 500 ms.
    let o = lab.run(
        &["lab", "run", "scp"],
        &[&["--set", "duration_s=3", "--set", "warmup_s=1", "--set", "pairs=4", "--set", "supervisors=1"]],
    );
    assert_success(&o);
    let meter = json(&lab.out.join("meter.json"));
    let url = meter["runtime_metrics"].as_str().expect("meter.json names the metrics address");
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/metrics"), "{url}");
    let samples = json_lines(&lab.out.join("resources.jsonl"));
    let scraped: Vec<&serde_json::Value> = samples.iter().filter(|s| s.get("runtime").is_some()).collect();
    assert!(scraped.len() >= 2, "fewer than 2 samples read the runtime's metrics: {samples:#?}");
    for s in &scraped {
        let r = s["runtime"].as_object().unwrap();
        assert!(!r.is_empty() && r.keys().all(|k| k.starts_with("troupe_")), "{s}");
        assert_eq!(r["troupe_lab_exec_info{role=\"scp\"}"], 1.0, "{s}");
    }
    let up = |s: &serde_json::Value| s["runtime"]["troupe_lab_exec_uptime_seconds"].as_f64().unwrap();
    assert!(up(scraped.last().unwrap()) > up(scraped[0]), "the uptime series did not move: {scraped:#?}");
    // The zero line before the child started and the last after it was reaped read nothing.
    assert!(samples.first().unwrap().get("runtime").is_none() && samples.last().unwrap().get("runtime").is_none());
}

/// `TROUPE_LAB_RUNTIME_METRICS=off`: no child is given an address, no sample reads anything.
#[test]
fn with_runtime_metrics_off_no_sample_reads_the_runtime() {
    let kv = ["duration_s=2", "warmup_s=1", "pairs=4", "supervisors=1"];
    let (o, _, lab) = run_with_env("scp", "unobserved", &kv, &[("TROUPE_LAB_RUNTIME_METRICS", "off")]);
    assert_success(&o);
    assert!(json(&lab.out.join("meter.json"))["runtime_metrics"].is_null());
    let samples = json_lines(&lab.out.join("resources.jsonl"));
    assert!(samples.len() >= 2, "{samples:#?}");
    assert!(samples.iter().all(|s| s.get("runtime").is_none() && s.get("runtime_scrape_error").is_none()));
}
