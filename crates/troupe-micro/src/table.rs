//! The human-readable form of a micro-benchmark run: one row per benchmark and metric, one
//! column per runtime, and "troupe vs best peer" as a ratio where > 1 means Troupe wins
//! (throughput: troupe / best peer; time and bytes: best peer / troupe). The header states the
//! library versions, the repetitions and the machine, as every comparison table must.

use std::io::{self, Write};

use crate::bench::{Bench, Record};
use crate::driver::Problem;

const METRICS: [&str; 12] = [
    "time_ms",
    "msgs_per_s",
    "bytes_per_actor",
    "spawn_ms",
    // `timers` (crate::timers): Troupe's send_after, then the tokio sleep reference.
    "arm_per_s",
    "late_p50_us",
    "late_p99_us",
    "late_max_us",
    "sleep_arm_per_s",
    "sleep_late_p50_us",
    "sleep_late_p99_us",
    "sleep_late_max_us",
];

pub(crate) fn render(
    records: &[Record],
    runtimes: &[String],
    benches: &[Bench],
    reps: u32,
    problems: &[Problem],
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "micro-benchmarks: median [min-max] of {reps} measured reps, each after 1 warm-up, the runtimes taking \
         turns per rep (memory: 1 run in a fresh process); ! = spread (max-min)/median over {:.0}%",
        crate::SPREAD_FLAG_PCT
    )?;
    writeln!(out, "machine: {}", machine())?;
    writeln!(out, "libraries: {}", env!("TROUPE_MICRO_VERSIONS"))?;
    let threads: Vec<String> =
        runtimes.iter().filter_map(|rt| crate::threads(rt).map(|(n, rule)| format!("{rt} {n} ({rule})"))).collect();
    writeln!(out, "threads: {}", threads.join("; "))?;
    let mut header = vec!["bench".to_string(), "metric".to_string()];
    header.extend(runtimes.iter().cloned());
    header.push("troupe vs best peer".into());
    let mut rows = vec![header];
    for b in benches {
        for m in METRICS {
            let cell = |rt: &str| records.iter().find(|r| r.bench == b.name() && r.metric == m && r.runtime == rt);
            if !runtimes.iter().any(|rt| cell(rt).is_some()) {
                continue;
            }
            let mut row = vec![b.name().to_string(), m.to_string()];
            row.extend(runtimes.iter().map(|rt| cell(rt).map_or("-".into(), fmt_value)));
            row.push(ratio(records, b.name(), m).map_or("-".into(), |x| format!("{x:.2}x")));
            rows.push(row);
        }
    }
    write_aligned(&rows, out)?;
    if let Some(line) = rtt_line(records) {
        writeln!(out, "{line}")?;
    }
    if !problems.is_empty() {
        writeln!(out, "not run:")?;
        for p in problems {
            match p.bench {
                Some(b) => writeln!(out, "  {}", Problem::line_of(&p.runtime, Some(b), &p.error))?,
                None => writeln!(out, "  {}: {}", p.runtime, p.error)?,
            }
        }
    }
    Ok(())
}

/// troupe / best peer for rates, best peer / troupe for times and bytes; > 1 means Troupe wins.
/// Values that are not positive (a negative resident-set delta after a garbage collection, say)
/// are measurement artefacts and never count as the best peer.
fn ratio(records: &[Record], bench: &str, metric: &str) -> Option<f64> {
    let of = |r: &&Record| r.bench == bench && r.metric == metric;
    let troupe = records.iter().filter(of).find(|r| r.runtime == "troupe")?.value;
    let peers = records.iter().filter(of).filter(|r| r.runtime != "troupe" && r.value > 0.0).map(|r| r.value);
    if Record::higher_is_better(metric) {
        let best = peers.fold(f64::NAN, f64::max);
        (best > 0.0).then(|| troupe / best)
    } else {
        let best = peers.fold(f64::NAN, f64::min);
        (troupe > 0.0 && best.is_finite()).then(|| best / troupe)
    }
}

/// The median, then `[min-max]` when there were several repetitions, then `!` when they spread
/// over [`crate::SPREAD_FLAG_PCT`].
fn fmt_value(r: &Record) -> String {
    let mut s = fmt_number(&r.metric, r.value);
    if let (Some(lo), Some(hi)) = (r.min, r.max) {
        if r.samples.len() > 1 {
            s = format!("{s} [{}-{}]", fmt_bare(&r.metric, lo), fmt_bare(&r.metric, hi));
        }
    }
    if r.unsteady() {
        s.push_str(" !");
    }
    s
}

fn fmt_number(metric: &str, v: f64) -> String {
    let rate = Record::higher_is_better(metric);
    match metric {
        _ if rate && v >= 1e6 => format!("{:.2}M/s", v / 1e6),
        _ if rate && v >= 1e3 => format!("{:.1}k/s", v / 1e3),
        _ if rate => format!("{v:.0}/s"),
        "bytes_per_actor" => format!("{v:.0} B"),
        m if m.ends_with("_us") => format!("{v:.0} us"),
        _ => format!("{v:.1} ms"),
    }
}

/// [`fmt_number`] without the unit, for the range.
fn fmt_bare(metric: &str, v: f64) -> String {
    let s = fmt_number(metric, v);
    s.trim_end_matches("/s").trim_end_matches(" ms").trim_end_matches(" us").trim_end_matches(" B").to_owned()
}

fn write_aligned(rows: &[Vec<String>], out: &mut dyn Write) -> io::Result<()> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| if c < 2 { format!("{s:<w$}", w = widths[c]) } else { format!("{s:>w$}", w = widths[c]) })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
        if i == 0 {
            writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "))?;
        }
    }
    Ok(())
}

/// Round trips over this many ns mark a repetition run in the slow state of a VM whose two
/// vCPUs sometimes share no cache (docs/lab.md, "Reading them on a small VM").
pub(crate) const SLOW_RTT_NS: u32 = 150;

/// What the round trips timed before the repetitions read (`Record::core_rtt_ns`, of the
/// `time_ms` lines, one per repetition), if any were: their range and how many were slow.
fn rtt_line(records: &[Record]) -> Option<String> {
    let all: Vec<Option<u32>> =
        records.iter().filter(|r| r.metric == "time_ms").flat_map(|r| r.core_rtt_ns.iter().copied()).collect();
    let timed: Vec<u32> = all.iter().flatten().copied().collect();
    if all.is_empty() {
        return None;
    }
    let (lo, hi) = (timed.iter().min(), timed.iter().max());
    let slow = timed.iter().filter(|&&n| n > SLOW_RTT_NS).count();
    Some(match (lo, hi) {
        (Some(lo), Some(hi)) => format!(
            "core-to-core round trip before each repetition: {lo}-{hi} ns; {slow} of {} repetitions over \
             {SLOW_RTT_NS} ns (the slow state: `core_rtt_ns` in each JSON line says which){}",
            all.len(),
            if timed.len() < all.len() { format!("; {} not timed", all.len() - timed.len()) } else { String::new() }
        ),
        _ => format!("core-to-core round trip before each repetition: not timed ({} repetitions)", all.len()),
    })
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores available, {} {}", std::env::consts::OS, std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_round_trips_before_the_repetitions_are_summed_up_under_the_table() {
        let mut a = rec("troupe", "time_ms", 1.0);
        a.core_rtt_ns = vec![Some(64), Some(251), None];
        let mut b = rec("actix", "time_ms", 1.0);
        b.core_rtt_ns = vec![Some(70), Some(66), Some(211)];
        let mut rate = rec("troupe", "msgs_per_s", 1.0);
        rate.core_rtt_ns = vec![Some(999)];
        assert_eq!(
            rtt_line(&[a.clone(), b, rate]).unwrap(),
            "core-to-core round trip before each repetition: 64-251 ns; 2 of 6 repetitions over 150 ns \
             (the slow state: `core_rtt_ns` in each JSON line says which); 1 not timed"
        );
        assert_eq!(rtt_line(&[rec("troupe", "time_ms", 1.0)]), None, "none timed, no line");
        a.core_rtt_ns = vec![None];
        assert_eq!(
            rtt_line(&[a]).unwrap(),
            "core-to-core round trip before each repetition: not timed (1 repetitions)"
        );
    }

    fn rec(rt: &str, metric: &str, value: f64) -> Record {
        Record {
            bench: "pingpong".into(),
            runtime: rt.into(),
            metric: metric.into(),
            value,
            unit: String::new(),
            params: BTreeMap::new(),
            ..Record::default()
        }
    }

    #[test]
    fn cells_show_median_range_and_the_spread_flag() {
        let mut r = rec("troupe", "msgs_per_s", 0.0);
        r.set_samples(vec![3.8e6, 3.7e6, 3.9e6]);
        assert_eq!(fmt_value(&r), "3.80M/s [3.70M-3.90M]");
        r.set_samples(vec![3.0e6, 3.8e6, 3.7e6]);
        assert_eq!(fmt_value(&r), "3.70M/s [3.00M-3.80M] !");
        let mut t = rec("troupe", "time_ms", 0.0);
        t.set_samples(vec![62.0]);
        assert_eq!(fmt_value(&t), "62.0 ms", "one repetition has no range");
    }

    #[test]
    fn ratio_above_one_means_troupe_wins() {
        let rs = vec![
            rec("troupe", "time_ms", 50.0),
            rec("actix", "time_ms", 100.0),
            rec("kameo", "time_ms", 200.0),
            rec("troupe", "msgs_per_s", 3e6),
            rec("actix", "msgs_per_s", 2e6),
        ];
        assert_eq!(ratio(&rs, "pingpong", "time_ms"), Some(2.0));
        assert_eq!(ratio(&rs, "pingpong", "msgs_per_s"), Some(1.5));
        assert_eq!(ratio(&rs[1..], "pingpong", "time_ms"), None);
        let with_artefact = vec![rec("troupe", "time_ms", 50.0), rec("akka", "time_ms", -10.0)];
        assert_eq!(ratio(&with_artefact, "pingpong", "time_ms"), None);
    }
}
