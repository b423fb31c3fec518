//! The comparison's `report.html`: tables, charts, gaps, versions and settings (what each
//! part shows is listed in the parent module's rules). Pure rendering from the loaded rows.

use std::collections::BTreeSet;
use std::path::Path;

use super::super::config::ScpConfig;
use super::means::cell;
use super::{opt, point_label, rate_chart, ratio_key, ratio_label, Loaded, Row};
use troupe_lab::report::{self, html, plot};
use troupe_lab::stats::show_mean_ci as show;
use troupe_lab::stats::MeanCi;

/// The ratios (in first-seen order) and, per ratio, the patterns that inject faults.
fn ratios(l: &Loaded) -> Vec<(ScpConfig, Vec<super::super::config::Pattern>)> {
    let mut out: Vec<(ScpConfig, Vec<super::super::config::Pattern>)> = Vec::new();
    for r in &l.rows {
        let i = match out.iter().position(|(c, _)| ratio_key(c) == ratio_key(&r.cfg)) {
            Some(i) => i,
            None => {
                out.push((r.cfg.clone(), Vec::new()));
                out.len() - 1
            }
        };
        if !r.cfg.is_baseline() && !out[i].1.contains(&r.cfg.pattern) {
            out[i].1.push(r.cfg.pattern);
        }
    }
    out
}

/// One line per runtime (and per pattern when `patterns` has several) of `y` against the
/// failure rate at one ratio, through the mean of each point's ok repetitions; a point with
/// no ok run is a gap (NaN). Points with several ok runs also get a box (their 95% interval)
/// with whiskers (smallest to largest run).
fn rate_lines(
    l: &Loaded,
    ratio: &ScpConfig,
    patterns: &[super::super::config::Pattern],
    y: fn(&Row) -> Option<f64>,
) -> (Vec<plot::Series>, Vec<plot::BoxItem>) {
    let mut out = Vec::new();
    let mut boxes = Vec::new();
    let xmax = l.rows.iter().map(|r| r.cfg.failure_rate).fold(1.0, f64::max);
    for rt in &l.file.runtimes {
        for &pat in patterns {
            let mut pts: Vec<(f64, Vec<f64>)> = Vec::new();
            for r in l.rows.iter().filter(|r| &r.runtime == rt && ratio_key(&r.cfg) == ratio_key(ratio)) {
                if !(r.cfg.is_baseline() || r.cfg.pattern == pat) {
                    continue;
                }
                let x = if r.cfg.is_baseline() { 0.0 } else { r.cfg.failure_rate };
                let v: Vec<f64> = y(r).filter(|_| r.ok).into_iter().collect();
                match pts.iter_mut().find(|p| p.0 == x) {
                    Some(p) => p.1.extend(v),
                    None => pts.push((x, v)),
                }
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (x, vs) in pts.iter().filter(|p| p.1.len() > 1) {
                let Some(ci) = MeanCi::of(vs) else { continue };
                boxes.push(plot::BoxItem {
                    series: out.len(),
                    x: *x,
                    half_width: xmax / 80.0,
                    lo: vs.iter().copied().fold(f64::MAX, f64::min),
                    q1: ci.lo(),
                    median: ci.mean,
                    q3: ci.hi(),
                    hi: vs.iter().copied().fold(f64::MIN, f64::max),
                });
            }
            let points = pts.into_iter().map(|(x, vs)| (x, MeanCi::of(&vs).map_or(f64::NAN, |c| c.mean))).collect();
            let name = if patterns.len() > 1 { format!("{rt} {}", pat.as_str()) } else { rt.clone() };
            out.push(plot::Series { name, points, dashed: false, markers: true });
        }
    }
    (out, boxes)
}

/// The charts with their captions.
fn charts(l: &Loaded, focus: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (ratio, patterns) in ratios(l) {
        for &pat in &patterns {
            let (series, boxes) = rate_lines(l, &ratio, &[pat], |r| r.pct_baseline);
            out.push((
                rate_chart(
                    format!("{}, {} failures: throughput as % of own 0% baseline", ratio_label(&ratio), pat.as_str()),
                    "% of the runtime's own 0% mean",
                    series,
                    &boxes,
                ),
                format!(
                    "Each runtime's mean throughput as a percentage of its own mean at 0% failures, same \
                     ratio ({}), against the failure rate (seed 001 fig. 9). 100% at 0% by construction; \
                     a break in a line is a failed run (see Gaps); lines that coincide hide one another (the \
                     tables have the numbers).",
                    ratio_label(&ratio)
                ),
            ));
        }
        let (mut series, boxes) = rate_lines(
            l,
            &ratio,
            if patterns.is_empty() { &[super::super::config::Pattern::None] } else { &patterns },
            |r| r.mean,
        );
        let xmax = l
            .rows
            .iter()
            .filter(|r| ratio_key(&r.cfg) == ratio_key(&ratio))
            .map(|r| r.cfg.failure_rate)
            .fold(0.0, f64::max);
        series.push(plot::Series {
            name: format!("ceiling {:.0}/s", ratio.ceiling()),
            points: vec![(0.0, ratio.ceiling()), (xmax.max(1.0), ratio.ceiling())],
            dashed: true,
            markers: false,
        });
        out.push((
            rate_chart(format!("{}: mean throughput", ratio_label(&ratio)), "mean exchanges/s", series, &boxes),
            format!(
                "Mean throughput over the window against the failure rate at {}, one line per runtime, \
                 with the theoretical ceiling (pairs x 1000 / delay_ms) dashed; lines that coincide hide \
                 one another.",
                ratio_label(&ratio)
            ),
        ));
    }
    if let Some(f) = focus {
        // With repetitions: each runtime's first ok repetition (else its first).
        let mut rows: Vec<&Row> = Vec::new();
        for rt in &l.file.runtimes {
            let mine: Vec<&Row> = l.rows.iter().filter(|r| r.point == f && &r.runtime == rt).collect();
            rows.extend(mine.iter().find(|r| r.ok).or(mine.first()).copied());
        }
        if let Some(first) = rows.first() {
            let mut series: Vec<plot::Series> = rows
                .iter()
                .filter(|r| r.ok)
                .map(|r| {
                    plot::Series::line(
                        r.runtime.clone(),
                        r.seconds.iter().map(|&(s, c)| (f64::from(s), c as f64)).collect(),
                    )
                })
                .collect();
            let ceiling = first.cfg.ceiling();
            series.push(plot::Series {
                name: format!("ceiling {ceiling:.0}/s"),
                points: vec![(0.0, ceiling), (first.cfg.duration_s.saturating_sub(1).max(1) as f64, ceiling)],
                dashed: true,
                markers: false,
            });
            let range = plot::zoomed_range(rows.iter().flat_map(|r| r.seconds.iter().map(|s| s.1 as f64)), ceiling);
            let missing: Vec<String> =
                rows.iter().filter(|r| !r.ok).map(|r| format!("{} ({})", r.runtime, r.status)).collect();
            let chart = plot::Chart {
                title: format!("Throughput per second, {}{}", point_label(&first.cfg), plot::ZOOMED),
                x_label: "second of the measurement window".into(),
                y_label: "exchanges per second".into(),
                series,
                y_range: Some(range),
            };
            out.push((
                plot::svg(&chart, 900, 420),
                format!(
                    "Exchanges completed in each second of the window at point {f}, one line per runtime; \
                     every runtime suffered the same kills at the same offsets.{}",
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" Not shown (gap): {}.", missing.join("; "))
                    }
                ),
            ));
        }
    }
    out
}

/// Whether the ok runs of a point injected the same fault ids; when not, what each runtime
/// lacks of the ids the others injected (the first few named).
fn ids_agree(rows: &[&Row]) -> String {
    let sets: Vec<(&str, &BTreeSet<String>)> =
        rows.iter().filter(|r| r.ok).filter_map(|r| r.fault_ids.as_ref().map(|s| (r.runtime.as_str(), s))).collect();
    if sets.len() < 2 {
        return if sets.is_empty() { "-".into() } else { "- (one run)".into() };
    }
    if sets.iter().all(|(_, s)| *s == sets[0].1) {
        return format!("yes ({} ids)", sets[0].1.len());
    }
    let union: BTreeSet<&String> = sets.iter().flat_map(|(_, s)| s.iter()).collect();
    let lacks: Vec<String> = sets
        .iter()
        .filter_map(|(rt, s)| {
            let missing: Vec<&str> = union.iter().filter(|id| !s.contains(**id)).map(|id| id.as_str()).collect();
            if missing.is_empty() {
                return None;
            }
            let named: Vec<&str> = missing.iter().take(4).copied().collect();
            let more = if missing.len() > named.len() { ", ..." } else { "" };
            Some(format!("{rt} lacks {} ({}{more})", missing.len(), named.join(", ")))
        })
        .collect();
    format!("NO: {}", lacks.join("; "))
}

fn status_cell(r: &Row) -> String {
    if r.ok || r.status == "not run" {
        r.status.clone()
    } else {
        html::link(&format!("{}/stderr.txt", r.dir), &r.status)
    }
}

/// Renders the page; also returns the SVGs to write beside it.
pub(super) fn render(dir: &Path, l: &Loaded, focus: Option<&str>) -> (String, Vec<String>) {
    let rts = &l.file.runtimes;
    let mut page = html::Page::new(&format!("{} comparison: {}", l.file.workload.to_uppercase(), rts.join(", ")));
    let ok = l.rows.iter().filter(|r| r.ok).count();
    let gaps: Vec<&Row> = l.rows.iter().filter(|r| !r.ok).collect();
    page.p(&format!(
        "{} points x {} runtimes{} = {} runs: {} ok, {} gaps. Axes: {}. Folder: {}.",
        l.file.points.len(),
        rts.len(),
        if l.file.reps > 1 { format!(" x {} repetitions", l.file.reps) } else { String::new() },
        l.rows.len(),
        ok,
        gaps.len(),
        l.file.axes.iter().map(|(k, v)| format!("{k} = {}", v.join(", "))).collect::<Vec<_>>().join("; "),
        dir.display()
    ));
    let with_folder: Vec<&Row> = l.rows.iter().filter(|r| r.same_schedule.is_some()).collect();
    let differ: Vec<String> =
        with_folder.iter().filter(|r| r.same_schedule == Some(false)).map(|r| r.dir.clone()).collect();
    page.p(&if differ.is_empty() {
        format!(
            "Same input for every runtime: each point's schedule was computed once (schedules/<point>.jsonl) \
             and all {} run folders hold it byte for byte; the config and seed are the same.",
            with_folder.len()
        )
    } else {
        format!("WARNING: these run folders do not hold their point's shared schedule: {}.", differ.join(", "))
    });
    if !gaps.is_empty() {
        page.h2("Gaps");
        let items: Vec<String> = gaps
            .iter()
            .map(|r| {
                format!(
                    "<li>{} at {}: {}</li>",
                    html::escape(&r.runtime),
                    html::escape(&point_label(&r.cfg)),
                    status_cell(r)
                )
            })
            .collect();
        page.raw(&format!("<ul>{}</ul>", items.join("")));
    }
    page.h2("Side by side");
    let mut header: Vec<String> = vec!["ratio".into(), "pattern".into(), "rate %".into()];
    for rt in rts {
        header.push(format!("{rt} mean/s"));
        header.push(format!("{rt} % of own 0%"));
    }
    header.push("same fault ids".into());
    let mut wide = Vec::new();
    for p in &l.file.points {
        let rows: Vec<&Row> = l.rows.iter().filter(|r| &r.point == p).collect();
        let Some(c) = rows.first().map(|r| &r.cfg) else { continue };
        let mut line =
            vec![format!("1:{}", c.pairs_per_supervisor()), c.pattern.as_str().into(), c.failure_rate.to_string()];
        for rt in rts {
            let Some(first) = rows.iter().find(|r| &r.runtime == rt) else {
                line.extend(["-".to_string(), "-".to_string()]);
                continue;
            };
            let c = cell(&l.rows, p, rt);
            line.push(show(c.mean, 1));
            let pct = show(c.pct_baseline, 1);
            line.push(if c.baseline_below(first) { format!("{pct} (!)") } else { pct });
        }
        line.push(ids_agree(&rows));
        wide.push(line);
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    page.table(&header_refs, &wide);
    page.p("% of own 0% = mean / the same runtime's mean at 0% failures and the same ratio (100 at 0%). \
            Same fault ids: whether every runtime that completed the point reported the same set of \
            fault_injected ids (they all got the same schedule).");
    if l.file.reps > 1 {
        page.p(&format!(
            "Repetitions: every point ran {} times on every runtime (same config, seed and schedule; the \
             runtimes took turns going first). Each figure above is the mean over the ok repetitions ± the \
             half width of its 95% confidence interval (Student's t, N - 1 degrees of freedom); a figure \
             without ± had one ok run. compare-mean.csv has N per cell. In the charts each point is such \
             a mean; a box spans the interval and whiskers the smallest to the largest run.",
            l.file.reps
        ));
    }
    // Per (point, runtime): with repetitions only a whole interval above 100% is flagged.
    let below: Vec<String> = super::means::cells(l)
        .into_iter()
        .filter(|(first, c)| c.baseline_below(first))
        .map(|(first, c)| format!("{} at {} ({}%)", first.runtime, point_label(&first.cfg), show(c.pct_baseline, 1)))
        .collect();
    if !below.is_empty() {
        page.p(&format!(
            "(!) Baseline below a fault run: {}. A point with faults scored above the same runtime's 0% \
             baseline (with repetitions: its whole 95% interval did), so that baseline is no ceiling here: \
             the difference is noise (a shared machine, few runs) or the baseline runs were slow; re-run the \
             baseline or use more repetitions before reading these percentages.",
            below.join("; ")
        ));
    }
    let mut svgs = Vec::new();
    page.h2("Charts");
    for (svg, caption) in charts(l, focus) {
        page.figure(&svg, &caption);
        svgs.push(svg);
    }
    page.h2("All runs");
    let table: Vec<Vec<String>> = l
        .rows
        .iter()
        .map(|r| {
            let c = &r.cfg;
            vec![
                html::link(&format!("{}/report.html", r.dir), &r.dir),
                format!("1:{}", c.pairs_per_supervisor()),
                c.pattern.as_str().into(),
                c.failure_rate.to_string(),
                opt(r.mean, 1),
                opt(r.pct_ceiling, 2),
                opt(r.baseline, 1),
                opt(r.drop_pct, 2),
                format!("{} / {}", r.kills, r.planned_kills),
                r.restarts.to_string(),
                r.skipped_faults.to_string(),
                r.restart_text.clone(),
                status_cell(r),
            ]
        })
        .collect();
    page.table(
        &[
            "run",
            "ratio",
            "pattern",
            "rate %",
            "mean/s",
            "% ceiling",
            "own 0% mean/s",
            "drop vs own 0% %",
            "kills / planned",
            "restarts",
            "skipped",
            "kill to restart p50 / p99 ms",
            "status",
        ],
        &table,
    );
    page.p("Drop = (own baseline mean - mean) / own baseline mean. Ceiling = pairs x 1000 / delay_ms. \
         Kill to restart: from each kill's fault_injected stamp (sent just before the kill) to its \
         server's restarted event; median and p99 of the run (docs/lab.md, Statistics).");
    page.h2("Runtimes: versions and settings");
    let rt_rows: Vec<Vec<String>> = rts
        .iter()
        .map(|rt| {
            let info = l.runtimes.iter().find(|i| &i.name == rt);
            let mut versions: Vec<String> = Vec::new();
            for r in l.rows.iter().filter(|r| &r.runtime == rt && !r.version.is_empty()) {
                let v = match (&r.git, rt.as_str()) {
                    (Some(g), "troupe") => format!("{} (git {g})", r.version),
                    _ => r.version.clone(),
                };
                if !versions.contains(&v) {
                    versions.push(v);
                }
            }
            if versions.is_empty() {
                versions.extend(info.and_then(|i| i.prepared.as_ref()).map(|p| p.version.clone()));
            }
            vec![
                rt.clone(),
                versions.join(" | "),
                info.and_then(|i| i.prepared.as_ref()).map(|p| p.settings.join("; ")).unwrap_or_default(),
                match info.map(|i| &i.build_error) {
                    Some(Some(e)) => format!("FAILED: {e}"),
                    Some(None) if rt == "troupe" => "this lab binary".into(),
                    Some(None) => "ok (its own tool, cached)".into(),
                    None => "not built yet".into(),
                },
            ]
        })
        .collect();
    page.table(&["runtime", "version", "settings", "build"], &rt_rows);
    page.h2("Config");
    let base: Vec<(String, String)> = l
        .file
        .base_config
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
        .unwrap_or_default();
    page.kv(&base);
    if let Some(m) = &l.first {
        page.h2("Provenance (first run; every run's manifest.json has its own)");
        page.kv(&report::provenance_rows(m));
    }
    page.raw(&format!(
        "<p>Files: {} &middot; {} &middot; {} &middot; schedules/ &middot; builds/</p>",
        html::link("compare.csv", "compare.csv"),
        html::link("compare.json", "compare.json"),
        html::link("runtimes.json", "runtimes.json")
    ));
    (page.finish(), svgs)
}
