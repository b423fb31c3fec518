//! The energy sweep and comparison reports, from the run folders below a sweep or comparison
//! folder (`runs/<point>/` or `<runtime>/<point>/`).
//!
//! Rules:
//! 1. `energy_all.csv` holds every measured repetition of every run (the seed's columns plus
//!    `runtime,meter`); `energy_post.csv` the seed's post-processing of it (rule 2 of
//!    [`super::post`]); the grid's CSV (`sweep.csv` or `compare.csv`) one line per run with its
//!    status and reason.
//! 2. Plots: per workload and mode, energy and time against the parameter (in the grid's
//!    order of increasing arguments), one line per runtime; a runtime without a figure at a
//!    point has a gap there.
//! 3. The ratio table: per workload, mode and parameter, Troupe's energy and time over each
//!    other runtime's (post-processed means), with the meter named; for ping workloads the
//!    energy per round trip too. The targets are checked where both runtimes have a
//!    figure: ping_pong Troupe's J per round trip at most half of CAF's; prime within 10% of CAF
//!    (a ratio of at most 1.1: using less than CAF meets it).
//! 4. A table never mixes meter sources: when the runs used different sources the report says
//!    so and compares only rows of the same source.

use std::collections::BTreeSet;
use std::path::Path;

use super::post::{self, Averaged, Row};
use troupe_lab::error::Result;
use troupe_lab::report::grid::{run_rows, RunRow};
use troupe_lab::report::html::{link, Page};
use troupe_lab::report::plot::{svg, Chart, Series};
use troupe_lab::report::{csv_text, write};

/// One run folder of the grid, with its repetitions' rows.
struct RunInfo {
    run: RunRow,
    rows: Vec<Row>,
}

fn load(dir: &Path) -> Vec<RunInfo> {
    run_rows(dir)
        .into_iter()
        .map(|run| {
            let rows = post::read_csv(&run.dir.join("energy.csv")).unwrap_or_default();
            RunInfo { run, rows }
        })
        .collect()
}

fn param_key(p: &str) -> Vec<u64> {
    p.split_whitespace().filter_map(|x| x.parse().ok()).collect()
}

fn round_trips(module: &str, parameter: &str) -> Option<f64> {
    let v = param_key(parameter);
    match module {
        "ping_pong" => Some(v.first()? * v.get(1)?),
        "ping_pong_lb" | "ping_pong_lb_prime" => Some(v.get(1)? * v.get(2)?),
        _ => None,
    }
    .map(|n| n as f64)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_else(|| "-".into())
}

/// The target for a workload, checked on Troupe/CAF ratios (rule 3).
fn target(module: &str, energy_ratio_caf: Option<f64>) -> String {
    match (module, energy_ratio_caf) {
        ("ping_pong", Some(r)) => format!("{} (<= 0.5 of CAF)", if r <= 0.5 { "met" } else { "not met" }),
        ("prime", Some(r)) => format!("{} (at most 10% above CAF)", if r <= 1.1 { "met" } else { "not met" }),
        (_, None) if module == "ping_pong" || module == "prime" => "no CAF figure".into(),
        _ => "-".into(),
    }
}

/// Writes the grid report into `dir`; returns the ratio table as text lines.
pub fn write_grid(dir: &Path, csv_name: &str, title: &str) -> Result<Vec<String>> {
    let runs = load(dir);
    let rows: Vec<Row> = runs.iter().flat_map(|r| r.rows.iter().cloned()).collect();
    write(dir, "energy_all.csv", &post::csv(&rows)?)?;
    let avg = post::postprocess(&rows, post::KEEP);
    let avg_rows = avg.iter().map(|a| {
        vec![
            a.runtime.clone(),
            a.module.clone(),
            a.function.clone(),
            a.parameter.clone(),
            a.meter.clone(),
            a.rows_in.to_string(),
            a.n.to_string(),
            a.runtime_s.to_string(),
            a.samples.to_string(),
            a.avg_uw.to_string(),
            a.uj.to_string(),
        ]
    });
    let post_header = [
        "runtime",
        "Module",
        "Function",
        "Parameter",
        "meter",
        "rows",
        "kept",
        "Runtime (s)",
        "Samples",
        "Average (uW)",
        "Consumption (uJ)",
    ];
    write(dir, "energy_post.csv", &csv_text(&post_header, avg_rows)?)?;
    let run_rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let s = &r.run.summary;
            let g = |k: &str| s.get(k).map(|v| v.to_string().trim_matches('"').to_string()).unwrap_or_default();
            vec![
                r.run.rel.clone(),
                r.run.runtime.clone(),
                g("program"),
                g("mode"),
                g("parameter"),
                r.run.status.clone(),
                g("meter"),
                g("energy_uj"),
                g("runtime_s"),
                g("uj_per_round_trip"),
                g("cpu_s"),
                g("peak_rss_bytes"),
                r.run.reason.clone(),
            ]
        })
        .collect();
    let run_header = [
        "run",
        "runtime",
        "program",
        "mode",
        "parameter",
        "status",
        "meter",
        "energy_uj",
        "runtime_s",
        "uj_per_round_trip",
        "cpu_s",
        "peak_rss_bytes",
        "reason",
    ];
    write(dir, csv_name, &csv_text(&run_header, run_rows.clone())?)?;

    let meters: BTreeSet<&str> = avg.iter().map(|a| a.meter.as_str()).collect();
    let runtimes: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in &runs {
            if !v.contains(&r.run.runtime) {
                v.push(r.run.runtime.clone());
            }
        }
        v.sort_by_key(|r| (r != "troupe", r.clone()));
        v
    };
    let mut p = Page::new(title);
    p.p(&format!(
        "{} runs on {}; meter source{}: {}.{}",
        runs.len(),
        runtimes.join(", "),
        if meters.len() == 1 { "" } else { "s" },
        meters.iter().copied().collect::<Vec<_>>().join(", "),
        if meters.contains("estimate") {
            " An estimate is the process tree's CPU time x watts per core: not a measurement."
        } else {
            ""
        }
    ));
    if meters.len() > 1 {
        p.p("The runs used different meter sources: ratios below compare rows of the same source only.");
    }
    // Rule 2: plots per (module, mode).
    let groups: BTreeSet<(String, String)> = avg.iter().map(|a| (a.module.clone(), a.function.clone())).collect();
    let mut lines = Vec::new();
    let mut table = Vec::new();
    for (module, mode) in &groups {
        let mut params: Vec<String> = avg
            .iter()
            .filter(|a| &a.module == module && &a.function == mode)
            .map(|a| a.parameter.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        params.sort_by_key(|p| param_key(p));
        let find = |rt: &str, param: &str, meter: &str| -> Option<&Averaged> {
            avg.iter().find(|a| {
                a.runtime == rt
                    && &a.module == module
                    && &a.function == mode
                    && a.parameter == param
                    && a.meter == meter
            })
        };
        for (what, f, unit) in [
            ("Energy", (|a: &Averaged| a.uj / 1e6) as fn(&Averaged) -> f64, "J"),
            ("Time", |a: &Averaged| a.runtime_s, "s"),
        ] {
            let mut series = Vec::new();
            for rt in &runtimes {
                for m in &meters {
                    let pts: Vec<(f64, f64)> = params
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (i as f64 + 1.0, find(rt, p, m).map_or(f64::NAN, f)))
                        .collect();
                    if pts.iter().any(|p| p.1.is_finite()) {
                        let name = if meters.len() > 1 { format!("{rt} ({m})") } else { rt.clone() };
                        series.push(Series { markers: true, ..Series::line(name, pts) });
                    }
                }
            }
            let chart = svg(
                &Chart {
                    title: format!("{what}: {module}, {mode}"),
                    x_label: "parameter (see the table: 1 = first)".into(),
                    y_label: unit.into(),
                    series,
                    y_range: None,
                },
                640,
                300,
            );
            let name = format!("energy-{}-{module}-{mode}.svg", what.to_lowercase());
            write(dir, &name, &chart)?;
            p.figure(
                &chart,
                &format!(
                    "{what} per repetition (post-processed mean) for {module} {mode}; parameters: {}",
                    params
                        .iter()
                        .enumerate()
                        .map(|(i, p)| format!("{} = \"{p}\"", i + 1))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        // Rule 3.
        for param in &params {
            for m in &meters {
                let t = find("troupe", param, m);
                let mut row = vec![module.clone(), mode.clone(), param.clone(), m.to_string()];
                let mut text = format!("{module} {mode} \"{param}\" [{m}]:");
                for rt in &runtimes {
                    let a = find(rt, param, m);
                    row.push(format!("{} J / {} s", fmt(a.map(|a| a.uj / 1e6), 4), fmt(a.map(|a| a.runtime_s), 4)));
                    text.push_str(&format!(
                        " {rt} {} J {} s",
                        fmt(a.map(|a| a.uj / 1e6), 4),
                        fmt(a.map(|a| a.runtime_s), 4)
                    ));
                }
                let rt_trips = round_trips(module, param);
                for other in runtimes.iter().filter(|r| *r != "troupe") {
                    let o = find(other, param, m);
                    let e = ratio(t.map(|a| a.uj), o.map(|a| a.uj));
                    let s = ratio(t.map(|a| a.runtime_s), o.map(|a| a.runtime_s));
                    row.push(format!("{} / {}", fmt(e, 3), fmt(s, 3)));
                    text.push_str(&format!("; troupe/{other} energy {} time {}", fmt(e, 3), fmt(s, 3)));
                }
                if let Some(n) = rt_trips {
                    let per: Vec<String> = runtimes
                        .iter()
                        .map(|rt| format!("{rt} {}", fmt(find(rt, param, m).map(|a| a.uj / n), 4)))
                        .collect();
                    row.push(per.join(", "));
                    text.push_str(&format!("; uJ per round trip: {}", per.join(", ")));
                } else {
                    row.push("-".into());
                }
                let caf = ratio(t.map(|a| a.uj), find("caf", param, m).map(|a| a.uj));
                row.push(target(module, caf));
                text.push_str(&format!("; target: {}", target(module, caf)));
                table.push(row);
                lines.push(text);
            }
        }
    }
    let mut header: Vec<String> = ["workload", "mode", "parameter", "meter"].iter().map(|s| s.to_string()).collect();
    header.extend(runtimes.iter().map(|r| format!("{r} energy / time")));
    header.extend(runtimes.iter().filter(|r| *r != "troupe").map(|r| format!("troupe/{r} energy / time")));
    header.push("uJ per round trip".into());
    header.push("target".into());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    p.h2("Ratios");
    p.p("Post-processed means per repetition (seed 002: rows <= 0 dropped, 1.5 IQR outliers dropped, the 10 closest to the median averaged). A ratio below 1 means Troupe used less.");
    p.table(&header_refs, &table);
    p.h2("All runs");
    let linked: Vec<Vec<String>> = run_rows
        .into_iter()
        .map(|mut r| {
            r[0] = link(&format!("{}/report.html", r[0]), &r[0]);
            r
        })
        .collect();
    p.table(&run_header, &linked);
    p.p(&format!(
        "Files: {}, {}, {}.",
        link("energy_all.csv", "energy_all.csv"),
        link("energy_post.csv", "energy_post.csv"),
        link(csv_name, csv_name)
    ));
    write(dir, "report.html", &p.finish())?;
    Ok(lines)
}
