//! Grids of runs (a sweep's points, a comparison's runtimes x points x repetitions) for the
//! reports: the run folders a `sweep.json` or `compare.json` names, and the lab's generic grid
//! table, the default of every workload's sweep and comparison report
//! ([`crate::workload::Reports`]).
//!
//! Rules:
//! 1. The runs of a grid come from its file, in run order, whether or not their folder exists
//!    yet (a run not made yet is a row that says so): a table never hides a point.
//! 2. The generic table has the columns `point`, `runtime`, `rep`, `status`, then every number,
//!    string or boolean key of the runs' `summary.json`, in the order the first run that has it
//!    lists them; a run without the key has an empty cell.
//! 3. A workload's own table ([`run_rows`], [`write_runs_report`]) has one row per run folder
//!    below the grid folder; a run that did not complete keeps its row, with no figures
//!    ([`RunRow::figure`]) and its reason. Its charts ([`log2_chart`]) draw, per line, the mean
//!    over repetitions of each point against log2 of the swept size.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::html::{link, Page};
use super::page::{csv_text, status_text, status_word, write, SUMMARY};
use super::plot::{svg, Chart, Series};
use crate::error::{Error, ErrorKind, Result};
use crate::folders::{sanitize, split_rep, CompareFile, SweepFile, FILE as COMPARE_FILE};
use crate::manifest::Manifest;

/// One run of a grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridRun {
    /// Runtime name.
    pub runtime: String,
    /// Point name, without the repetition.
    pub point: String,
    /// The run's folder name as the grid file gives it (a sweep's `<point>_rep-<k>`, a
    /// comparison's `<runtime>/<point>_rep-<k>`).
    pub name: String,
    /// Its run folder (may not exist: not run yet).
    pub dir: PathBuf,
    /// Repetition, 1-based.
    pub rep: u32,
}

fn read_json<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Result<T> {
    let path = dir.join(file);
    if !path.is_file() {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))
}

/// A sweep folder's file and its runs, in run order (rule 1).
pub fn sweep_runs(dir: &Path) -> Result<(SweepFile, Vec<GridRun>)> {
    let file: SweepFile = read_json(dir, "sweep.json")?;
    let runs = file
        .points
        .iter()
        .map(|name| {
            let (p, rep) = split_rep(name);
            GridRun {
                // A sweep point is named `<sanitised runtime>_<axes>` (sweep::expand).
                runtime: file
                    .runtimes
                    .iter()
                    .find(|rt| {
                        let rt = sanitize(rt);
                        p == rt || p.starts_with(&format!("{rt}_"))
                    })
                    .cloned()
                    .unwrap_or_default(),
                point: p.to_string(),
                name: name.clone(),
                dir: dir.join("runs").join(name),
                rep,
            }
        })
        .collect();
    Ok((file, runs))
}

/// A comparison folder's file and its runs, in run order (rule 1).
pub fn compare_runs(dir: &Path) -> Result<(CompareFile, Vec<GridRun>)> {
    let file: CompareFile = read_json(dir, COMPARE_FILE)?;
    let runs = file
        .run_folders()
        .into_iter()
        .map(|f| GridRun { runtime: f.runtime, point: f.point, dir: dir.join(&f.rel), name: f.rel, rep: f.rep })
        .collect();
    Ok((file, runs))
}

/// Writes the generic table of a sweep folder (`sweep.csv`, `report.html`); the number of runs.
pub fn write_sweep(dir: &Path) -> Result<usize> {
    let (file, runs) = sweep_runs(dir)?;
    write_table(dir, "sweep.csv", &format!("{} sweep", file.workload), &runs)?;
    Ok(runs.len())
}

/// Writes the generic table of a comparison folder (`compare.csv`, `report.html`); the table as
/// text lines.
pub fn write_compare(dir: &Path) -> Result<Vec<String>> {
    let (file, runs) = compare_runs(dir)?;
    let title = format!("{}: {} side by side", file.workload, file.runtimes.join(", "));
    write_table(dir, "compare.csv", &title, &runs)
}

fn cell(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Rule 2: the table as CSV and as a page; the rows as text lines.
fn write_table(dir: &Path, csv_name: &str, title: &str, runs: &[GridRun]) -> Result<Vec<String>> {
    let read = |r: &GridRun| -> (String, serde_json::Value) {
        let status = Manifest::read(&r.dir).map(|m| status_text(&m)).unwrap_or_else(|_| "not run".into());
        let summary = std::fs::read_to_string(r.dir.join(SUMMARY))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::Value::Null);
        (status, summary)
    };
    let read: Vec<(String, serde_json::Value)> = runs.iter().map(read).collect();
    let fixed = ["run_id", "workload", "runtime", "status"];
    let mut keys: Vec<String> = Vec::new();
    for (_, s) in &read {
        for (k, v) in s.as_object().into_iter().flatten() {
            if cell(v).is_some() && !fixed.contains(&k.as_str()) && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut header: Vec<&str> = vec!["point", "runtime", "rep", "status"];
    header.extend(keys.iter().map(String::as_str));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .zip(&read)
        .map(|(r, (status, s))| {
            let mut row = vec![r.point.clone(), r.runtime.clone(), r.rep.to_string(), status.clone()];
            row.extend(keys.iter().map(|k| s.get(k).and_then(cell).unwrap_or_default()));
            row
        })
        .collect();
    write(dir, csv_name, &csv_text(&header, rows.clone())?)?;
    let mut page = Page::new(title);
    page.table(&header, &rows);
    page.raw(&format!("<p><a href=\"{csv_name}\">{csv_name}</a></p>"));
    write(dir, "report.html", &page.finish())?;
    Ok(rows.iter().map(|r| r.join("  ")).collect())
}

/// One run folder of a workload's own grid table (rule 3): where it is, whose it is, how it
/// ended, its config and its statistics.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Its folder, relative to the grid folder (the tables' `folder` column).
    pub rel: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Its runtime.
    pub runtime: String,
    /// Its status in a word ([`status_word`]).
    pub status: String,
    /// Why it failed or is degraded, as its manifest says (empty otherwise).
    pub reason: String,
    /// Whether it completed: only then do its figures count.
    pub ok: bool,
    /// Its resolved config.
    pub config: Value,
    /// Its `summary.json` (`null` when absent).
    pub summary: Value,
}

impl RunRow {
    /// An integer key of its config (0 when absent).
    pub fn cfg_u64(&self, key: &str) -> u64 {
        self.config.get(key).and_then(Value::as_u64).unwrap_or(0)
    }

    /// A string key of its config (empty when absent).
    pub fn cfg_str(&self, key: &str) -> String {
        self.config.get(key).and_then(Value::as_str).unwrap_or("").to_string()
    }

    /// The number at `path` in its summary (`["latency_ms", "p99"]`), only when it completed.
    pub fn figure(&self, path: &[&str]) -> Option<f64> {
        if !self.ok {
            return None;
        }
        path.iter().try_fold(&self.summary, |v, k| v.get(*k))?.as_f64()
    }

    /// The last non-empty line its program wrote to stderr, trimmed (where a peer names what it
    /// refused).
    pub fn last_stderr_line(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join("stderr.txt")).unwrap_or_default();
        text.lines().rev().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
    }
}

/// The run folders below a grid folder ([`super::grid_runs`]) as rows (rule 3).
pub fn run_rows(dir: &Path) -> Vec<RunRow> {
    super::grid_runs(dir)
        .into_iter()
        .map(|(d, m, summary)| RunRow {
            rel: d.strip_prefix(dir).unwrap_or(&d).display().to_string(),
            runtime: m.runtime.clone(),
            status: status_word(&m).to_string(),
            reason: m.reason.clone().unwrap_or_default(),
            ok: m.status.completed(),
            config: m.config,
            summary,
            dir: d,
        })
        .collect()
}

/// `reason (stderr: LINE)`, the line cut to 240 characters.
pub fn with_stderr(reason: &str, line: &str) -> String {
    format!("{reason} (stderr: {})", line.chars().take(240).collect::<String>())
}

/// A figure with `digits` decimals; empty when there is none (rule 3).
pub fn figure_cell(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

/// A chart's lines: per line name, per point (the swept size), the figures of its runs.
pub type Lines = BTreeMap<String, BTreeMap<u64, Vec<Option<f64>>>>;

/// The rows' figures for charts, per group: `at` gives a row's group, line name, point and
/// figure.
pub fn group_lines<'a, R: 'a, G: Ord>(
    rows: impl IntoIterator<Item = &'a R>,
    at: impl Fn(&R) -> (G, String, u64, Option<f64>),
) -> BTreeMap<G, Lines> {
    let mut groups: BTreeMap<G, Lines> = BTreeMap::new();
    for r in rows {
        let (group, line, x, y) = at(r);
        groups.entry(group).or_default().entry(line).or_default().entry(x).or_default().push(y);
    }
    groups
}

/// Rule 3: a chart (SVG, 720 x 340) of each line's mean over repetitions against log2 of the
/// point, which grows by factors (1, 4, 16, 64).
pub fn log2_chart(title: String, x_label: &str, y_label: &str, lines: Lines) -> String {
    let series = lines.into_iter().map(|(name, pts)| Series::log2_means(name, pts)).collect();
    svg(&Chart { title, x_label: x_label.into(), y_label: y_label.into(), series, y_range: None }, 720, 340)
}

/// A column of a workload's grid table: its header and how a row fills its cell.
pub type Column<R> = (&'static str, fn(&R) -> String);

/// Writes a workload's own grid table of `rows` in `columns` (rule 3): the CSV `csv_name`, and
/// `report.html` with `title`, the `intro` paragraph, what `body` adds (charts, side-by-side
/// lines), then the runs' table and a link to the CSV.
pub fn write_runs_report<R>(
    dir: &Path,
    csv_name: &str,
    title: &str,
    intro: &str,
    rows: &[R],
    columns: &[Column<R>],
    body: impl FnOnce(&mut Page) -> Result<()>,
) -> Result<()> {
    let header: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let table: Vec<Vec<String>> = rows.iter().map(|r| columns.iter().map(|c| (c.1)(r)).collect()).collect();
    write(dir, csv_name, &csv_text(&header, table.iter().cloned())?)?;
    let mut p = Page::new(title);
    p.p(intro);
    body(&mut p)?;
    p.h2("Runs");
    p.table(&header, &table);
    p.raw(&format!("<p>{}</p>", link(csv_name, csv_name)));
    write(dir, "report.html", &p.finish())
}
