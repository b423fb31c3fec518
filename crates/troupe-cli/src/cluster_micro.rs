//! The cluster benchmarks of `troupe lab micro` (crate `troupe-cluster`, module `bench`):
//! `cluster-join`, `cluster-detect`, `cluster-converge`, `overlay-scale`. Nodes are this same binary started
//! as `troupe node`, separate OS processes on loopback. Parameters by `--set`:
//! `cluster-join.nodes` (16), `cluster-detect.nodes` (5), `cluster-detect.akka` (0/1),
//! `cluster-detect.idle_s` (0), `cluster-converge.sim_nodes` (1000), `cluster-converge.seed`,
//! `overlay-scale.max_nodes` (1024: sizes 32, 64, ... up to it), `overlay-scale.seed`.
//! Troupe only: no peer runtime implements them.

use std::collections::BTreeMap;
use std::io::Write as _;

use troupe_remote::bench::{Launcher, Row};

/// The benchmark names this module answers for.
pub(crate) const NAMES: [&str; 4] = ["cluster-join", "cluster-detect", "cluster-converge", "overlay-scale"];

fn get(sets: &BTreeMap<String, u64>, bench: &str, key: &str, default: u64) -> u64 {
    sets.get(&format!("{bench}.{key}")).or_else(|| sets.get(key)).copied().unwrap_or(default)
}

/// Runs the named cluster benchmarks; prints JSON lines, or a table.
pub(crate) fn run(names: &[String], reps: Option<u32>, sets: &BTreeMap<String, u64>, json: bool) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let launcher = Launcher::command(exe, &["node"]);
    let reps = reps.unwrap_or(3).max(1);
    let mut rows: Vec<Row> = Vec::new();
    for name in names {
        let got = match name.as_str() {
            "cluster-join" => troupe_cluster::bench::join(&launcher, get(sets, name, "nodes", 16) as usize, reps),
            "cluster-detect" => troupe_cluster::bench::detect(
                &launcher,
                get(sets, name, "nodes", 5) as usize,
                reps,
                get(sets, name, "akka", 0) != 0,
                get(sets, name, "idle_s", 0),
            ),
            "overlay-scale" => {
                let max = get(sets, name, "max_nodes", 1024) as usize;
                let sizes: Vec<usize> = [32, 64, 128, 256, 512, 1024].into_iter().filter(|&n| n <= max).collect();
                Ok(troupe_cluster::bench::overlay_scale(&sizes, get(sets, name, "seed", 1)))
            }
            _ => {
                troupe_cluster::bench::converge(get(sets, name, "sim_nodes", 1000) as usize, get(sets, name, "seed", 1))
            }
        }
        .map_err(|e| format!("{name}: {e}"))?;
        if json {
            let mut out = std::io::stdout().lock();
            for r in &got {
                let _ = writeln!(out, "{}", r.to_json());
            }
        }
        rows.extend(got);
    }
    if !json {
        println!("{:<18} {:<18} {:>12} {:<6} params", "bench", "metric", "value", "unit");
        for r in &rows {
            println!("{:<18} {:<18} {:>12.1} {:<6} {}", r.bench, r.metric, r.value, r.unit, r.params);
        }
    }
    Ok(())
}
