//! The `memory` benchmark through the driver, as `troupe lab micro` runs it: each runtime in a
//! fresh child process. This test binary has no libtest harness (`harness = false`) because
//! the child is this very executable started again: `main` calls `troupe_micro::run` first
//! thing, which in the child (env TROUPE_MICRO_CHILD set) measures and prints its line.

use std::process::ExitCode;

use troupe_micro::{MicroOptions, Record};

/// Idle actors per runtime: enough that the resident-set delta is the actors' (pages of 4 KiB
/// and the allocator's first arenas are noise at a few thousand), few enough to spawn in a
/// second even in a debug build.
const N: u64 = 20_000;

/// What one idle actor may cost, bytes: at least a mailbox and a state (a figure below this is a
/// broken measurement), at most 32 KiB (the heaviest Rust peer, ractor, is about 8 KiB in a debug
/// build; more means the measurement counts something else).
const PER_ACTOR: std::ops::RangeInclusive<f64> = 64.0..=32_768.0;

fn main() -> ExitCode {
    let opts = MicroOptions {
        only: Some(vec!["memory".into()]),
        runtimes: ["troupe", "actix", "ractor", "kameo"].map(String::from).to_vec(),
        json: true,
        reps: None,
        params: [("n".to_string(), N)].into_iter().collect(),
        child_args: Some(Vec::new()),
        rep_probe: None,
    };
    let mut out = Vec::new();
    let result = troupe_micro::run(&opts, &mut out);
    if std::env::var_os(troupe_micro::CHILD_ENV).is_some() {
        // The child: hand the lines to the parent and stop.
        print!("{}", String::from_utf8_lossy(&out));
        return if result.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let checks: Result<(), String> = (|| {
        result.map_err(|e| e.to_string())?;
        let text = String::from_utf8(out).map_err(|e| e.to_string())?;
        let recs: Vec<Record> =
            text.lines().map(|l| serde_json::from_str(l).map_err(|e| format!("{e}: {l}"))).collect::<Result<_, _>>()?;
        for rt in ["troupe", "actix", "ractor", "kameo"] {
            let mine: Vec<(&str, &str)> = recs
                .iter()
                .filter(|r| r.runtime == rt && r.bench == "memory")
                .map(|r| (r.metric.as_str(), r.unit.as_str()))
                .collect();
            let mut expected = vec![("bytes_per_actor", "B"), ("spawn_ms", "ms")];
            if rt == "troupe" {
                // Troupe also reports what stays resident after every actor stopped.
                expected.insert(0, ("bytes_per_actor_after_stop", "B"));
                expected.insert(1, ("bytes_per_actor_leaked", "B"));
            }
            if mine != expected {
                return Err(format!("{rt}: got {mine:?}\n{text}"));
            }
        }
        if recs.iter().any(|r| r.params.get("n") != Some(&N) || r.params.get("reps") != Some(&1)) {
            return Err(format!("wrong params:\n{text}"));
        }
        let value = |rt: &str, metric: &str| {
            recs.iter().find(|r| r.runtime == rt && r.metric == metric).map_or(f64::NAN, |r| r.value)
        };
        for rt in ["troupe", "actix", "ractor", "kameo"] {
            let b = value(rt, "bytes_per_actor");
            if !PER_ACTOR.contains(&b) {
                return Err(format!("{rt}: {b} B per idle actor is outside {PER_ACTOR:?}:\n{text}"));
            }
            let ms = value(rt, "spawn_ms");
            if !(f64::MIN_POSITIVE..60_000.0).contains(&ms) {
                return Err(format!("{rt}: spawning {N} actors took {ms} ms:\n{text}"));
            }
        }
        // The leak check: a second round of spawning and stopping N actors grows the resident
        // set by less than 64 B per actor over the first. An actor that leaves anything behind
        // (its cell is 144 B, its state and activation more) fails it; the allocator's own
        // noise between rounds measured -11 to +11 B per actor here.
        let kept = value("troupe", "bytes_per_actor_after_stop");
        let leaked = value("troupe", "bytes_per_actor_leaked");
        if kept.is_nan() || leaked.is_nan() || leaked >= 64.0 {
            return Err(format!("troupe grows by {leaked} B per actor per round of spawn-and-stop:\n{text}"));
        }
        Ok(())
    })();
    match checks {
        Ok(()) => {
            println!("memory_in_fresh_child_processes ... ok");
            println!("1 passed, 0 failed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("memory_in_fresh_child_processes ... FAILED: {e}");
            println!("0 passed, 1 failed");
            ExitCode::FAILURE
        }
    }
}
