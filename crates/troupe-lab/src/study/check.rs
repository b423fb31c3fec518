//! Verdicts of a study's statements (study rule 6): the mean of a metric over the runs of two
//! cells, compared as the statement's [`Check`] says.

use super::format::{text, Check, CheckKind};

/// One completed run as a check reads it.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Its runtime.
    pub runtime: String,
    /// Its resolved config (the manifest's).
    pub config: serde_json::Value,
    /// Its `summary.json`.
    pub summary: serde_json::Value,
}

/// A statement's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `agrees`, `disagrees`, `unchecked` or `no data`.
    pub word: &'static str,
    /// What was measured, as `figures.csv` shows it (`a = 4800.1; b = 5100.0; a/b = 0.941`).
    pub measured: String,
}

/// Whether the run of `runtime` with the resolved `config` is a cell `want` picks (its keys, and
/// `runtime` when it names one).
pub(super) fn picks(
    want: &std::collections::BTreeMap<String, toml::Value>,
    runtime: &str,
    config: &serde_json::Value,
) -> bool {
    want.iter().all(|(k, v)| {
        if k == "runtime" {
            return runtime == text(v);
        }
        let have = &config[k.as_str()];
        match (have.as_f64(), v.as_float().or(v.as_integer().map(|i| i as f64))) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * y.abs().max(1.0),
            _ => have.as_str().map(str::to_string).or_else(|| have.as_bool().map(|b| b.to_string())) == Some(text(v)),
        }
    })
}

fn mean(cells: &[Cell], want: &std::collections::BTreeMap<String, toml::Value>, metric: &str) -> Option<f64> {
    let xs: Vec<f64> = cells
        .iter()
        .filter(|c| picks(want, &c.runtime, &c.config))
        .filter_map(|c| lookup(&c.summary, metric))
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// A number of `summary.json` by its dotted path (`detection_ms.mean`).
fn lookup(summary: &serde_json::Value, metric: &str) -> Option<f64> {
    metric.split('.').try_fold(summary, |v, k| v.get(k)).and_then(serde_json::Value::as_f64)
}

/// The verdict of `check` over `cells` (none: `unchecked`).
///
/// ```
/// use troupe_lab::study::{verdict, Cell};
/// use serde_json::json;
///
/// let cell = |rate: f64, mean: f64| Cell {
///     runtime: "troupe".into(),
///     config: json!({ "failure_rate": rate }),
///     summary: json!({ "msg_per_s_mean": mean }),
/// };
/// let check = toml::from_str(
///     "kind = \"less\"\nmetric = \"msg_per_s_mean\"\na = { failure_rate = 20 }\nb = { failure_rate = 0 }",
/// )
/// .unwrap();
/// let v = verdict(Some(&check), &[cell(0.0, 5000.0), cell(20.0, 4000.0)]);
/// assert_eq!(v.word, "agrees");
/// assert_eq!(verdict(None, &[]).word, "unchecked");
/// ```
pub fn verdict(check: Option<&Check>, cells: &[Cell]) -> Verdict {
    let Some(c) = check else {
        return Verdict { word: "unchecked", measured: String::new() };
    };
    if c.a.contains_key("runtime") || c.b.contains_key("runtime") {
        return judge(c, cells).unwrap_or_else(|| no_data(c));
    }
    // A check that names no runtime states a shape: it is judged on each runtime's own cells
    // (a mean over runtimes would mix them), and agrees only where every runtime that has both
    // cells agrees.
    let mut runtimes: Vec<&str> = cells.iter().map(|x| x.runtime.as_str()).collect();
    runtimes.sort_unstable();
    runtimes.dedup();
    let judged: Vec<(&str, Verdict)> = runtimes
        .iter()
        .filter_map(|rt| {
            let own: Vec<Cell> = cells.iter().filter(|x| x.runtime == *rt).cloned().collect();
            judge(c, &own).map(|v| (*rt, v))
        })
        .collect();
    match judged.as_slice() {
        [] => no_data(c),
        [(_, v)] if runtimes.len() == 1 => v.clone(),
        _ => {
            let all = judged.iter().all(|(_, v)| v.word == "agrees");
            let measured =
                judged.iter().map(|(rt, v)| format!("{rt} ({}): {}", v.word, v.measured)).collect::<Vec<_>>();
            Verdict { word: if all { "agrees" } else { "disagrees" }, measured: measured.join(" | ") }
        }
    }
}

fn no_data(c: &Check) -> Verdict {
    Verdict { word: "no data", measured: format!("no completed run with {} in both cells", c.metric) }
}

/// The verdict over `cells` taken together; `None` when a cell has no completed run.
fn judge(c: &Check, cells: &[Cell]) -> Option<Verdict> {
    let (a, b) = (mean(cells, &c.a, &c.metric)?, mean(cells, &c.b, &c.metric)?);
    let ratio = if b != 0.0 { a / b } else { f64::NAN };
    let ok = match c.kind {
        CheckKind::Greater => a > b,
        CheckKind::Less => a < b,
        CheckKind::Ratio => c.min.is_some_and(|lo| ratio >= lo) && c.max.is_some_and(|hi| ratio <= hi),
    };
    Some(Verdict {
        word: if ok { "agrees" } else { "disagrees" },
        measured: format!("a = {a:.4}; b = {b:.4}; a/b = {ratio:.4}"),
    })
}
