//! The energy workload's analysis without running anything: the seed's post-processing on
//! synthetic rows (rows <= 0 dropped, 1.5 IQR outliers, the 10 closest to the median,
//! averages per runtime/module/parameter, meters never mixed), the run statistics from
//! synthetic events (completeness, results checked, estimate labelled, summary keys), the
//! config's refusals, and the prime counts.

use serde_json::json;
use troupe_lab::events::parse_line;
use troupe_lab::workload::RunAnalysis;
use troupe_lab_workloads::energy::analysis::EnergyStats;
use troupe_lab_workloads::energy::post::{csv, filter_group, postprocess, quantile, read_csv, Row, HEADER, KEEP};
use troupe_lab_workloads::energy::primes::{count_sieve, count_trial, find_primes, is_prime};

fn row(rt: &str, param: &str, uj: f64, s: f64) -> Row {
    Row {
        module: "ping_pong".into(),
        function: "native".into(),
        parameter: param.into(),
        runtime_s: s,
        samples: 3,
        avg_uw: if s > 0.0 { uj / s } else { 0.0 },
        uj,
        interval_ns: 50_000_000,
        file: "f".into(),
        runtime: rt.into(),
        meter: "estimate".into(),
    }
}

#[test]
fn header_is_the_seeds_plus_runtime_and_meter() {
    assert_eq!(
        HEADER.join(","),
        "Module,Function,Parameter,Runtime (s),Samples,Average (uW),Consumption (uJ),Sampling interval (ns),File,runtime,meter"
    );
    let rows = vec![row("troupe", "50 2000", 10.0, 1.0)];
    let text = csv(&rows).unwrap();
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("energy.csv");
    std::fs::write(&p, &text).unwrap();
    assert_eq!(read_csv(&p).unwrap(), rows);
}

#[test]
fn quantiles_interpolate() {
    let v = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(quantile(&v, 0.5), 2.5);
    assert_eq!(quantile(&v, 0.25), 1.75);
    assert_eq!(quantile(&v, 0.0), 1.0);
    assert_eq!(quantile(&v, 1.0), 4.0);
}

#[test]
fn non_positive_rows_and_iqr_outliers_are_dropped() {
    let mut rows: Vec<Row> =
        [10.0, 11.0, 12.0, 10.5, 11.5, 1000.0].iter().map(|&e| row("troupe", "p", e, 1.0)).collect();
    rows.push(row("troupe", "p", 0.0, 1.0));
    rows.push(row("troupe", "p", 11.0, 0.0));
    rows.push(row("troupe", "p", -3.0, 1.0));
    let kept = filter_group(&rows, KEEP);
    let e: Vec<f64> = kept.iter().map(|r| r.uj).collect();
    assert_eq!(e, vec![10.0, 11.0, 12.0, 10.5, 11.5]);
}

#[test]
fn the_ten_closest_to_the_median_are_kept() {
    // 15 rows 1..=15 (no IQR outliers): median 8, the ten closest are 3..=12 or 4..=13 with a
    // tie at distance 5 (3 and 13) broken by order: 3 comes first.
    let rows: Vec<Row> = (1..=15).map(|e| row("troupe", "p", e as f64, 1.0)).collect();
    let kept = filter_group(&rows, 10);
    let e: Vec<f64> = kept.iter().map(|r| r.uj).collect();
    assert_eq!(e, (3..=12).map(|x| x as f64).collect::<Vec<_>>());
}

#[test]
fn averages_per_runtime_module_parameter_and_meter() {
    let mut rows = vec![
        row("troupe", "50 2000", 10.0, 1.0),
        row("troupe", "50 2000", 20.0, 3.0),
        row("caf", "50 2000", 40.0, 2.0),
        row("troupe", "100 2000", 5.0, 1.0),
    ];
    let mut rapl = row("troupe", "50 2000", 1000.0, 1.0);
    rapl.meter = "rapl".into();
    rows.push(rapl);
    let avg = postprocess(&rows, KEEP);
    assert_eq!(avg.len(), 4);
    let t = &avg[0];
    assert_eq!((t.runtime.as_str(), t.parameter.as_str(), t.meter.as_str()), ("troupe", "50 2000", "estimate"));
    assert_eq!((t.n, t.rows_in, t.uj, t.runtime_s), (2, 2, 15.0, 2.0));
    assert_eq!(avg[1].runtime, "caf");
    assert_eq!(avg[2].parameter, "100 2000");
    assert_eq!((avg[3].meter.as_str(), avg[3].uj), ("rapl", 1000.0));
}

fn cfg(sets: &[&str]) -> troupe_lab::config::Config {
    let mut b = troupe_lab_workloads::registry().builder("energy").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build().unwrap()
}

fn refused(sets: &[&str]) -> String {
    let mut b = troupe_lab_workloads::registry().builder("energy").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build().unwrap_err().to_string()
}

#[test]
fn config_refusals_name_the_key_and_what_is_allowed() {
    let e = refused(&["workload=pingpong"]);
    assert!(e.contains("workload") && e.contains("ping_pong_lb_prime"), "{e}");
    let e = refused(&["mode=cluster"]);
    assert!(e.contains("mode") && e.contains("native, distributed"), "{e}");
    let e = refused(&["clients=0"]);
    assert!(e.contains("clients") && e.contains("1..="), "{e}");
    let e = refused(&["range=1"]);
    assert!(e.contains("range") && e.contains("2..="), "{e}");
    let e = refused(&["meter=scaphandre"]);
    assert!(e.contains("meter") && e.contains("auto, rapl, perf, estimate"), "{e}");
    let e = refused(&["clients=100000", "msgs=100000"]);
    assert!(e.contains("round trips"), "{e}");
    let e = refused(&["sampel_ms=10"]);
    assert!(e.contains("sample_ms"), "did you mean: {e}");
    let c = cfg(&[]);
    assert_eq!(c.str("workload"), "ping_pong");
    assert_eq!(c.str("mode"), "native");
    assert_eq!(c.float("watts_per_core"), troupe_lab::meter::DEFAULT_WATTS_PER_CORE);
}

#[test]
fn prime_counts_agree() {
    for n in [2, 3, 4, 10, 100, 121, 1000, 7919, 10_201, 100_000] {
        assert_eq!(count_trial(n), count_sieve(n), "range {n}");
    }
    assert_eq!(count_sieve(2), 1);
    assert_eq!(count_sieve(100_000), 9_592);
}

/// primes.rs rule 1: the seed's `is_prime`: below 2 not prime, 2 prime, and the divisor bound is
/// floor(sqrt(n)) inclusive, so the squares of primes (4, 9, 121, 10,201) are found composite.
#[test]
fn rule_1_trial_division_is_the_seeds_is_prime() {
    for n in [i32::MIN, -7, 0, 1] {
        assert!(!is_prime(n), "{n}");
    }
    for n in [2, 3, 5, 7, 11, 101, 7919, 2_147_483_647] {
        assert!(is_prime(n), "{n}");
    }
    for n in [4, 9, 25, 49, 121, 10_201, 46_340 * 46_340] {
        assert!(!is_prime(n), "{n}");
    }
    // The counts the peers' smoke tests pin for each runtime's program (peers/lib/energy-smoke.sh).
    for (range, pi) in [(2, 1), (4, 2), (121, 30), (10_000, 1_229), (10_201, 1_252)] {
        assert_eq!(find_primes(range), pi, "pi({range})");
    }
}

fn ev(v: serde_json::Value) -> troupe_lab::events::Event {
    parse_line(&v.to_string()).unwrap()
}

fn events(result: i64, energy_error: Option<&str>, finished_errors: i64) -> Vec<troupe_lab::events::Event> {
    let base = |e: &str| json!({"ts_us": 1, "run": "r1", "rt": "caf", "node": "clients", "ev": e});
    let mut out = vec![ev(base("run_started"))];
    for rep in 0..2 {
        let mut w = base("work");
        w["rep"] = rep.into();
        w["start_us"] = 1_000_000.into();
        w["end_us"] = 3_000_000.into();
        w["result"] = result.into();
        out.push(ev(w));
        let mut e = json!({"ts_us": 3_000_000, "run": "r1", "rt": "caf", "node": "lab", "ev": "energy",
            "source": "estimate", "rep": rep, "uj": 4_000_000.0, "runtime_s": 2.0, "samples": 40, "cpu_s": 1.0,
            "peak_rss_bytes": 1_000_000});
        if let Some(msg) = energy_error {
            if rep == 1 {
                e["uj"] = serde_json::Value::Null;
                e["error"] = msg.into();
            }
        }
        out.push(ev(e));
    }
    let mut f = base("run_finished");
    f["dropped_events"] = 0.into();
    f["errors"] = finished_errors.into();
    out.push(ev(f));
    out
}

#[test]
fn run_statistics_from_events() {
    let c = cfg(&["clients=10", "msgs=100", "reps=2"]);
    let st = EnergyStats::compute(&c, &events(1000, None, 0));
    assert_eq!(st.completeness_problem(&c), None);
    let s = st.summary_json();
    for key in ["energy_uj", "runtime_s", "uj_per_round_trip", "cpu_s", "peak_rss_bytes", "meter"] {
        assert!(!s[key].is_null(), "summary.json lacks {key}: {s}");
    }
    assert_eq!(s["energy_uj"], 4_000_000.0);
    assert_eq!(s["uj_per_round_trip"], 4_000.0);
    assert_eq!(s["meter"], "estimate");
    assert_eq!(s["estimate"], true);
    assert!(st.headline().contains("estimate"), "{}", st.headline());
    let meter_row = st.summary_rows().into_iter().find(|r| r.0 == "meter").unwrap();
    assert!(meter_row.1.contains("not a measurement"), "{meter_row:?}");
    let rows = st.rows();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].parameter.as_str(), rows[0].meter.as_str(), rows[0].avg_uw),
        ("10 100", "estimate", 2_000_000.0)
    );
    assert_eq!(rows[1].file, "r1#1");
}

#[test]
fn wrong_results_failed_meters_and_errors_are_problems() {
    let c = cfg(&["clients=10", "msgs=100", "reps=2"]);
    let p = EnergyStats::compute(&c, &events(999, None, 0)).completeness_problem(&c).unwrap();
    assert!(p.contains("result 999, expected 1000"), "{p}");
    let st = EnergyStats::compute(&c, &events(1000, Some("counter vanished"), 0));
    let p = st.completeness_problem(&c).unwrap();
    assert!(p.contains("repetition 1: meter failed: counter vanished"), "{p}");
    assert_eq!(st.rows().len(), 1, "the failed repetition has no row");
    let p = EnergyStats::compute(&c, &events(1000, None, 1)).completeness_problem(&c).unwrap();
    assert!(p.contains("1 error"), "{p}");
    let p = EnergyStats::compute(&c, &events(1000, None, 0)[..2]).completeness_problem(&c).unwrap();
    assert!(p.contains("no work event for repetition 1") && p.contains("no run_finished"), "{p}");
    // A meter that read nothing is no 0 J row: the run fails, naming the repetition.
    let mut evs = events(1000, None, 0);
    for e in evs.iter_mut().filter(|e| e.ev == "energy" && e.int("rep") == 0) {
        let mut raw = e.raw.clone();
        raw["uj"] = 0.0.into();
        raw["samples"] = 0.into();
        *e = ev(raw);
    }
    let st = EnergyStats::compute(&c, &evs);
    let p = st.completeness_problem(&c).unwrap();
    assert!(p.contains("repetition 0: the meter read 0 uJ (0 samples inside it): not a measurement"), "{p}");
    assert_eq!(st.rows().len(), 1, "the unmeasured repetition has no row");
    // prime: the result must be pi(range).
    let c = cfg(&["workload=prime", "range=100", "reps=2"]);
    assert!(EnergyStats::compute(&c, &events(25, None, 0)).completeness_problem(&c).is_none());
    assert!(EnergyStats::compute(&c, &events(24, None, 0)).completeness_problem(&c).is_some());
}
