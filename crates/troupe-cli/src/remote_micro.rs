//! The distribution benchmarks of `troupe lab micro`: `remote-pingpong`, `remote-latency`,
//! `contention` and `detection` (crate `troupe-remote`, `bench`). The far node is this same
//! binary started as `troupe node`, a separate OS process on loopback.

use troupe_remote::bench::{
    contention, detection, remote_latency, remote_pingpong, ContentionParams, DetectionParams, LatencyParams, Launcher,
    PingPongParams, Row,
};

/// The benchmark names this module answers for.
pub(crate) const NAMES: [&str; 4] = ["remote-pingpong", "remote-latency", "contention", "detection"];

/// Runs the named remote benchmarks; prints JSON lines, or a small table.
pub(crate) fn run(names: &[String], reps: Option<u32>, json: bool) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the troupe executable: {e}"))?;
    let launcher = Launcher { program: exe, args: vec!["node".into()] };
    for name in names {
        eprintln!("micro: {name} on troupe (two OS processes on loopback) ...");
        let rows: Vec<Row> = match name.as_str() {
            "remote-pingpong" => {
                let p = PingPongParams { reps: reps.unwrap_or(PingPongParams::default().reps), ..Default::default() };
                remote_pingpong(&launcher, &p)
            }
            "remote-latency" => {
                let p = LatencyParams { reps: reps.unwrap_or(LatencyParams::default().reps), ..Default::default() };
                remote_latency(&launcher, &p)
            }
            "contention" => contention(&launcher, &ContentionParams::default()),
            "detection" => {
                let p = DetectionParams { reps: reps.unwrap_or(DetectionParams::default().reps), ..Default::default() };
                detection(&launcher, &p)
            }
            other => return Err(format!("unknown remote benchmark {other:?}")),
        }
        .map_err(|e| format!("{name}: {e}"))?;
        for r in rows {
            if json {
                println!("{}", r.to_json());
            } else {
                println!("{:<16} {:<28} {:>14.3} {:<6} {}", r.bench, r.metric, r.value, r.unit, r.params);
            }
        }
    }
    Ok(())
}
