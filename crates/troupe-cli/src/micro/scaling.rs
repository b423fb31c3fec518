//! `troupe lab micro --scaling 1,2,4,8,16`: the local micro-benchmarks (not memory, timers) at each
//! worker count, with every tokio-based runtime (troupe, ractor, kameo) on that many workers
//! and actix on its one thread, recorded and set side by side: `results.jsonl` and `run.json`
//! (as `--out` records a run), `scaling.csv` (`bench,runtime,metric,unit,workers,threads,value,
//! min,max`: `workers` is the count asked for, `threads` what the runtime ran on — actix's one),
//! one `scaling-<bench>.svg` per benchmark (value against threads, one line per runtime), and a
//! table that flags negative scaling: a runtime that does worse on more workers than on the
//! fewest it ran (issue 16 asks for none).

use std::collections::BTreeMap;
use std::path::Path;

use troupe_lab::machine::{self, LoadProbe};
use troupe_lab::report::plot::{self, Chart, Series};
use troupe_micro::{Bench, Record};

use super::common::{micro_code, record, MicroArgs};
use crate::code;
use crate::shared::default_out;

/// Runs the scaling set; the exit code.
pub(super) fn main(a: &MicroArgs, counts: &[u32], params: BTreeMap<String, u64>) -> i32 {
    if counts.is_empty() || counts.contains(&0) {
        eprintln!("troupe lab micro: --scaling takes worker counts of 1 or more, e.g. --scaling 1,2,4");
        return code::USAGE;
    }
    let locals: Vec<&str> =
        Bench::ALL.iter().filter(|b| !matches!(b, Bench::Memory | Bench::Timers)).map(|b| b.name()).collect();
    let only: Vec<String> = match &a.only {
        Some(names) => {
            if let Some(bad) = names.iter().find(|n| !locals.contains(&n.trim())) {
                eprintln!(
                    "troupe lab micro: --scaling runs the local throughput benchmarks only; `{bad}` is not one \
                     of them ({})",
                    locals.join(", ")
                );
                return code::USAGE;
            }
            names.clone()
        }
        None => locals.iter().map(|s| (*s).to_owned()).collect(),
    };
    let dir = a.out.clone().unwrap_or_else(|| default_out("micro-scaling"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("troupe lab micro: {}: {e}", dir.display());
        return code::FILES;
    }
    let probe = LoadProbe::start();
    let started = machine::rfc3339(machine::now_unix_ms());
    let mut lines = Vec::new();
    let mut records = Vec::new();
    let mut status = 0;
    for &n in counts {
        eprintln!("troupe lab micro: --scaling: {n} worker thread(s)");
        troupe_micro::set_worker_threads(Some(n));
        let opts = troupe_micro::MicroOptions {
            only: Some(only.clone()),
            runtimes: a.runtimes.clone(),
            json: true,
            reps: a.reps,
            params: params.clone(),
            child_args: None,
            rep_probe: Some(machine::core_round_trip_ns),
        };
        let mut buf = Vec::new();
        let r = troupe_micro::run(&opts, &mut buf);
        let text = String::from_utf8_lossy(&buf).into_owned();
        lines.extend(text.lines().map(str::to_owned));
        records.extend(text.lines().filter_map(|l| serde_json::from_str::<Record>(l).ok()).map(|r| (n, r)));
        if let Err(e) = r {
            eprintln!("troupe lab micro: at {n} thread(s): {e}");
            status = micro_code(&e.kind);
            break;
        }
    }
    troupe_micro::set_worker_threads(None);
    let load = probe.finish();
    if let Err(e) = record(&dir, &lines, &a.runtimes, &started, &load) {
        eprintln!("troupe lab micro: {}: {e}", dir.display());
        return code::FILES;
    }
    match write_outputs(&dir, &records) {
        Ok(table) => {
            if a.json {
                lines.iter().for_each(|l| println!("{l}"));
            } else {
                table.iter().for_each(|l| println!("{l}"));
                println!("load over the run: {}", load.summary());
            }
            eprintln!("troupe lab micro: scaling table, CSV and plots in {}", dir.display());
        }
        Err(e) => {
            eprintln!("troupe lab micro: {}: {e}", dir.display());
            return code::FILES;
        }
    }
    status
}

/// Whether a larger value is better for `unit` (throughputs) or a smaller one (times).
fn higher_is_better(unit: &str) -> bool {
    unit.contains("/s")
}

/// The worker count asked for -> record.
type ByCount<'a> = BTreeMap<u32, &'a Record>;
/// (bench, runtime) -> its records by worker count.
type Grid<'a> = BTreeMap<(String, String), ByCount<'a>>;

/// Writes `scaling.csv` and the plots; the table as lines.
fn write_outputs(dir: &Path, records: &[(u32, Record)]) -> std::io::Result<Vec<String>> {
    // A benchmark that reports a throughput (pingpong: msgs_per_s and time_ms) is set side by
    // side on its throughput; the others on their time.
    let has_rate: Vec<&str> =
        records.iter().filter(|(_, r)| higher_is_better(&r.unit)).map(|(_, r)| r.bench.as_str()).collect();
    let mut grid: Grid = BTreeMap::new();
    for (n, r) in records.iter().filter(|(_, r)| higher_is_better(&r.unit) || !has_rate.contains(&r.bench.as_str())) {
        grid.entry((r.bench.clone(), r.runtime.clone())).or_default().insert(*n, r);
    }
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x}"));
    let rows = grid.iter().flat_map(|((bench, rt), by)| {
        by.iter().map(move |(t, r)| {
            vec![
                bench.clone(),
                rt.clone(),
                r.metric.clone(),
                r.unit.clone(),
                t.to_string(),
                r.threads.map_or(String::new(), |x| x.to_string()),
                format!("{}", r.value),
                opt(r.min),
                opt(r.max),
            ]
        })
    });
    let csv = troupe_lab::report::csv_text(
        &["bench", "runtime", "metric", "unit", "workers", "threads", "value", "min", "max"],
        rows,
    )
    .map_err(std::io::Error::other)?;
    std::fs::write(dir.join("scaling.csv"), csv)?;
    let mut benches: BTreeMap<&str, Vec<(&str, &ByCount)>> = BTreeMap::new();
    for ((bench, rt), by) in &grid {
        benches.entry(bench.as_str()).or_default().push((rt.as_str(), by));
    }
    let mut table = vec![format!("{:<11} {:<8} {:>9}  {}", "bench", "runtime", "unit", "value at each worker count")];
    for (bench, rts) in &benches {
        let unit = rts.first().and_then(|(_, by)| by.values().next()).map_or("", |r| r.unit.as_str());
        let series = rts
            .iter()
            .map(|(rt, by)| {
                let mut s = Series::line(*rt, by.iter().map(|(t, r)| (f64::from(*t), r.value)).collect());
                s.markers = true;
                s
            })
            .collect();
        let chart = Chart {
            title: format!("{bench}: {unit} vs worker threads"),
            x_label: "worker threads (tokio-based runtimes; actix: one thread)".into(),
            y_label: unit.to_owned(),
            series,
            y_range: None,
        };
        std::fs::write(dir.join(format!("scaling-{bench}.svg")), plot::svg(&chart, 760, 380))?;
        for (rt, by) in rts {
            table.push(table_line(bench, rt, unit, by));
        }
    }
    Ok(table)
}

/// One table line: the value at each count, and `NEGATIVE` when some count > the fewest did
/// worse than the fewest.
fn table_line(bench: &str, rt: &str, unit: &str, by: &ByCount) -> String {
    let cells: Vec<String> = by.iter().map(|(t, r)| format!("{t}: {}", human(r.value))).collect();
    let base = by.values().next().map(|r| r.value);
    let worse = |v: f64| base.is_some_and(|b| if higher_is_better(unit) { v < b } else { v > b });
    let negative: Vec<String> = by.iter().skip(1).filter(|(_, r)| worse(r.value)).map(|(t, _)| t.to_string()).collect();
    let flag = if negative.is_empty() {
        String::new()
    } else {
        format!("  NEGATIVE scaling at {} thread(s)", negative.join(", "))
    };
    format!("{bench:<11} {rt:<8} {unit:>9}  {}{flag}", cells.join("  "))
}

fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}
