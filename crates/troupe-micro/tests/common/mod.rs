//! Shared by the per-runtime tests: tiny parameters for every benchmark and the checks that a
//! runtime's result lines are well formed (the contract's fields, units and rate metrics).

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use troupe_micro::{Bench, Params, Record};

/// Parameters small enough that every benchmark finishes in milliseconds.
pub fn tiny(bench: Bench) -> Params {
    let o: BTreeMap<String, u64> = [
        ("pingpong.n", 200),
        ("count.n", 1000),
        ("fjthrput.n", 100),
        ("fjthrput.actors", 4),
        ("fjcreate.n", 200),
        ("threadring.actors", 5),
        ("threadring.n", 300),
        ("chameneos.chameneos", 5),
        ("chameneos.n", 300),
        ("big.n", 50),
        ("big.actors", 6),
        ("fib.n", 10),
        ("skynet.depth", 3),
        ("skynet.width", 4),
        ("memory.n", 500),
        ("timers.n", 300),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    bench.params(&o).expect("tiny parameters are valid")
}

/// Benchmarks with a natural rate report `msgs_per_s` next to `time_ms`.
pub fn has_rate(bench: Bench) -> bool {
    !matches!(bench, Bench::FjCreate | Bench::Fib | Bench::Skynet | Bench::Memory | Bench::Timers)
}

/// Runs every benchmark but `memory` and `timers` (each checked by its own test) on `runtime`
/// at tiny parameters and checks the lines.
pub fn all_benches_well_formed(runtime: &str) {
    for bench in Bench::ALL.into_iter().filter(|b| !matches!(b, Bench::Memory | Bench::Timers)) {
        let p = tiny(bench);
        let recs =
            troupe_micro::run_in_process(runtime, bench, &p, 2).unwrap_or_else(|e| panic!("{runtime} {bench}: {e}"));
        check_lines(runtime, bench, &p, 2, &recs);
    }
}

/// The lines of one benchmark: right names, units, params with reps, positive values, and a
/// JSON form that parses back to the same record with the contract's field order.
pub fn check_lines(runtime: &str, bench: Bench, p: &Params, reps: u64, recs: &[Record]) {
    let metrics: Vec<&str> = recs.iter().map(|r| r.metric.as_str()).collect();
    let want: Vec<&str> = if has_rate(bench) { vec!["time_ms", "msgs_per_s"] } else { vec!["time_ms"] };
    assert_eq!(metrics, want, "{runtime} {bench}");
    let params = p.with_reps(reps as u32);
    assert_eq!(params.get("reps"), Some(&reps));
    for r in recs {
        assert_eq!(r.bench, bench.name());
        assert_eq!(r.runtime, runtime);
        assert_eq!(r.params, params, "{runtime} {bench}");
        assert!(r.value.is_finite() && r.value > 0.0, "{runtime} {bench} {}: {}", r.metric, r.value);
        let unit = if r.metric == "time_ms" { "ms" } else { "msg/s" };
        assert_eq!(r.unit, unit);
        let line = r.to_json();
        assert!(
            line.starts_with(&format!("{{\"bench\":\"{}\",\"runtime\":\"{runtime}\",\"metric\":", bench.name())),
            "{line}"
        );
        assert!(!line.contains('\n'));
        let back: Record = serde_json::from_str(&line).expect("a result line parses");
        assert_eq!(&back, r);
    }
}

/// `memory` measured in this process: the metrics, units and params, and a spawn time above
/// zero. The resident-set delta is polluted here (other tests of the binary run beside it), so
/// its bounds are checked in a fresh child process by the `micro_memory` test.
pub fn memory_well_formed(runtime: &str) {
    let recs = troupe_micro::memory_in_this_process(runtime, 500).unwrap_or_else(|e| panic!("{runtime} memory: {e}"));
    let metrics: Vec<(&str, &str)> = recs.iter().map(|r| (r.metric.as_str(), r.unit.as_str())).collect();
    let mut expected = vec![("bytes_per_actor", "B"), ("spawn_ms", "ms")];
    if runtime == "troupe" {
        expected.insert(0, ("bytes_per_actor_after_stop", "B"));
        expected.insert(1, ("bytes_per_actor_leaked", "B"));
    }
    assert_eq!(metrics, expected);
    for r in &recs {
        assert_eq!(r.params.get("n"), Some(&500));
        assert_eq!(r.params.get("reps"), Some(&1));
        assert!(r.value.is_finite(), "{runtime} {}: {}", r.metric, r.value);
    }
    let spawn = recs.iter().find(|r| r.metric == "spawn_ms").expect("spawn_ms");
    assert!(spawn.value > 0.0 && spawn.value < 60_000.0, "{runtime}: spawning 500 actors took {} ms", spawn.value);
}
