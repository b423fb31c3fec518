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

use std::path::{Path, PathBuf};

use super::html::Page;
use super::page::{csv_text, status_text, write, SUMMARY};
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
