//! The `timers` benchmark (rules in `troupe-micro/src/timers.rs`) at a small `n`: through the
//! driver, every timer fires (rule 5: a missing one would be an error, not a line), both
//! variants report an arm rate and ordered lateness percentiles (rules 3, 4 and 6), and the
//! runtimes without the benchmark are said "not implemented for timers", with no row.

use std::collections::BTreeMap;

use troupe_micro::{Bench, ErrorKind, MicroOptions, Record};

fn opts(runtimes: &[&str], json: bool, n: u64) -> MicroOptions {
    MicroOptions {
        only: Some(vec!["timers".into()]),
        runtimes: runtimes.iter().map(|s| (*s).to_owned()).collect(),
        json,
        reps: Some(1),
        params: [("timers.n".to_string(), n)].into_iter().collect(),
        child_args: None,
        rep_probe: None,
    }
}

#[test]
fn rules_3_to_6_every_timer_fires_and_both_variants_report_rate_and_lateness() {
    let mut out = Vec::new();
    troupe_micro::run(&opts(&["troupe", "kameo"], true, 300), &mut out).expect("timers runs; kameo is no error");
    let recs: Vec<Record> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("only result lines on out"))
        .collect();
    assert!(recs.iter().all(|r| r.bench == "timers" && r.runtime == "troupe"), "troupe rows only: {recs:?}");
    let value = |m: &str| recs.iter().find(|r| r.metric == m).unwrap_or_else(|| panic!("no {m}: {recs:?}"));
    for p in ["", "sleep_"] {
        let arm = value(&format!("{p}arm_per_s"));
        assert_eq!(arm.unit, "timer/s");
        assert!(arm.value.is_finite() && arm.value > 0.0, "{arm:?}");
        let [p50, p99, max] = ["p50", "p99", "max"].map(|q| value(&format!("{p}late_{q}_us")));
        for r in [p50, p99, max] {
            assert_eq!(r.unit, "us");
            assert_eq!(r.params.get("n"), Some(&300));
            assert!(r.threads.is_some(), "the worker count is recorded");
            // Never early (rule 5), and within the run's bound of 30 s past the last deadline.
            assert!(r.value >= 0.0 && r.value < 31e6, "{r:?}");
        }
        assert!(p50.value <= p99.value && p99.value <= max.value, "{p}: {p50:?} {p99:?} {max:?}");
    }
    assert_eq!(recs.len(), 8, "four metrics per variant: {recs:?}");
}

#[test]
fn the_other_runtimes_say_not_implemented_for_timers() {
    let p = Bench::Timers.params(&BTreeMap::new()).unwrap();
    for rt in ["actix", "ractor", "kameo"] {
        let e = troupe_micro::run_in_process(rt, Bench::Timers, &p, 1).expect_err("troupe only");
        assert_eq!(e.kind, ErrorKind::NotImplemented);
        assert!(e.message.starts_with("not implemented for timers"), "{e}");
    }
    // In the table they are listed under "not run:", and the run is no failure.
    let mut out = Vec::new();
    troupe_micro::run(&opts(&["troupe", "actix"], false, 100), &mut out).expect("no failure");
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("not run:\n  actix timers: not implemented for timers"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("timers") && l.contains("late_p99_us")), "{text}");
}

#[test]
fn a_bad_timer_count_names_the_key_and_the_allowed_range() {
    for (n, says) in [(0, "timers: parameter n must be at least 1"), (20_000_000, "timers: n must be at most 10000000")]
    {
        let o: BTreeMap<String, u64> = [("timers.n".to_string(), n)].into_iter().collect();
        let e = Bench::Timers.params(&o).expect_err("out of range");
        assert_eq!(e.kind, ErrorKind::Usage);
        assert!(e.message.starts_with(says), "{e}");
    }
}
