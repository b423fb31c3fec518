//! The study file format (docs/studies.md, "The file format"): the serde types of one study
//! file and the checks of a figure that need no workload (plot kind, status, statements).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::ConfigIssue;

/// The plot kinds a figure may ask for.
pub const PLOTS: &[&str] = &["line", "box", "bar", "time", "table"];

/// One study file: a seed and its figures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// The study's name, as `troupe lab reproduce <study>` takes it.
    pub study: String,
    /// The seed's number (`001`).
    pub seed: String,
    /// The seed's title.
    pub title: String,
    /// Who published it, where, and the hardware its numbers come from.
    #[serde(default)]
    pub source: String,
    /// What each profile changes, as the report states it (`quick = "..."`).
    #[serde(default)]
    pub profiles: BTreeMap<String, String>,
    /// The figures and tables, in the seed's order.
    #[serde(default, rename = "figure")]
    pub figures: Vec<Figure>,
}

/// One figure or table of the seed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The id as the seed numbers it: `fig5a`, `table5_3`.
    pub id: String,
    /// The caption, in short.
    pub title: String,
    /// Where the seed shows and discusses it (`§4.2`).
    pub section: String,
    /// The lab workload that makes its runs.
    pub workload: String,
    /// The runtimes, as the lab names them (`troupe`, `erlang`, `akka`, ...).
    #[serde(default = "troupe_only")]
    pub runtimes: Vec<String>,
    /// Repetitions of every cell (the seed's own where it says).
    #[serde(default = "one")]
    pub reps: u32,
    /// The plot kind: one of [`PLOTS`].
    pub plot: String,
    /// The x axis: a config key, or `second` for a time series.
    pub x: String,
    /// The y axis: a key of the runs' `summary.json`.
    pub y: String,
    /// What makes one line of the plot: a config key or `runtime`.
    #[serde(default)]
    pub series: Option<String>,
    /// `ok`, or `missing: <what the lab lacks to make it as the seed did>`.
    #[serde(default = "ok")]
    pub status: String,
    /// Fixed keys of every cell.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    /// The axes: key and its values (the seed's grid).
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<toml::Value>>,
    /// The quick profile's changes to the figure's grid.
    #[serde(default)]
    pub quick: Option<Overrides>,
    /// Cells not run: each entry picks cells as a check's side does (grid/set keys and
    /// `runtime`), for a runtime that cannot run those values (Distributed Erlang has no
    /// `channels` transport). A sweep runs every runtime on every cell; this names the holes.
    #[serde(default)]
    pub skip: Vec<BTreeMap<String, toml::Value>>,
    /// The seed's values, transcribed: `"erlang, 0% = 5085 msg/s"`.
    #[serde(default)]
    pub seed_values: Vec<String>,
    /// What the seed says the figure shows.
    #[serde(default, rename = "statement")]
    pub statements: Vec<Statement>,
}

/// A profile's changes to a figure: each given field replaces the figure's, key by key for
/// `set` and `grid`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    /// Runtimes instead of the figure's.
    #[serde(default)]
    pub runtimes: Option<Vec<String>>,
    /// Repetitions instead of the figure's.
    #[serde(default)]
    pub reps: Option<u32>,
    /// Fixed keys added or replaced.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    /// Axes replaced (an axis of one value is a fixed key).
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<toml::Value>>,
}

/// One thing the seed says a figure shows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// The statement, in short, with its section.
    pub text: String,
    /// The seed's number behind it, as published (`3715 msg/s`), if any.
    #[serde(default)]
    pub seed_value: String,
    /// How a reproduction checks it; none: `unchecked`.
    #[serde(default)]
    pub check: Option<Check>,
}

/// A machine check of a statement: the mean of `metric` over the runs of cell `a` compared with
/// that of cell `b`. A cell is given by config keys (and `runtime`) that its runs must match.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// How to compare.
    pub kind: CheckKind,
    /// A key of the runs' `summary.json`.
    pub metric: String,
    /// The first cell.
    pub a: BTreeMap<String, toml::Value>,
    /// The second cell.
    pub b: BTreeMap<String, toml::Value>,
    /// `ratio`: the smallest a/b that agrees.
    #[serde(default)]
    pub min: Option<f64>,
    /// `ratio`: the largest a/b that agrees.
    #[serde(default)]
    pub max: Option<f64>,
}

/// How a [`Check`] compares its two cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    /// a > b.
    Greater,
    /// a < b.
    Less,
    /// min <= a/b <= max.
    Ratio,
}

/// The figure under a profile.
#[derive(Debug, Clone)]
pub(crate) struct Effective {
    pub(crate) runtimes: Vec<String>,
    pub(crate) reps: u32,
    pub(crate) set: BTreeMap<String, toml::Value>,
    pub(crate) grid: BTreeMap<String, Vec<toml::Value>>,
}

impl Figure {
    /// Whether the lab can make it (`status = "ok"`).
    pub fn runnable(&self) -> bool {
        self.status == "ok"
    }

    /// The figure under `profile` (study rule 4).
    pub(crate) fn effective(&self, profile: &str) -> Result<Effective, String> {
        let mut e = Effective {
            runtimes: self.runtimes.clone(),
            reps: self.reps,
            set: self.set.clone(),
            grid: self.grid.clone(),
        };
        match profile {
            "full" => {}
            "quick" => {
                if let Some(q) = &self.quick {
                    if let Some(r) = &q.runtimes {
                        e.runtimes = r.clone();
                    }
                    if let Some(n) = q.reps {
                        e.reps = n;
                    }
                    for (k, v) in &q.set {
                        e.grid.remove(k);
                        e.set.insert(k.clone(), v.clone());
                    }
                    for (k, v) in &q.grid {
                        e.set.remove(k);
                        e.grid.insert(k.clone(), v.clone());
                    }
                }
            }
            other => return Err(format!("unknown profile {other:?}; profiles: quick, full")),
        }
        Ok(e)
    }
}

/// A TOML value as `--set` takes it.
pub(crate) fn text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn troupe_only() -> Vec<String> {
    vec!["troupe".into()]
}

fn one() -> u32 {
    1
}

fn ok() -> String {
    "ok".into()
}

/// The checks of a figure that need no workload: keys relative to the figure.
pub(crate) fn check_figure(fig: &Figure) -> Vec<ConfigIssue> {
    let mut out = Vec::new();
    let mut bad = |key: &str, value: &str, problem: String| {
        out.push(ConfigIssue { key: key.into(), value: value.into(), problem });
    };
    if !PLOTS.contains(&fig.plot.as_str()) {
        bad(
            "plot",
            &fig.plot,
            format!("unknown plot kind{}; kinds: {}", crate::did_you_mean(&fig.plot, PLOTS), PLOTS.join(", ")),
        );
    }
    let missing = fig.status.strip_prefix("missing:").map(str::trim);
    if fig.status != "ok" && missing.is_none_or(str::is_empty) {
        bad("status", &fig.status, "write `ok`, or `missing: <what the lab lacks>`".into());
    }
    if fig.id.is_empty() || !fig.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bad("id", &fig.id, "an id is letters, digits and `_`, as the seed numbers it (fig5a, table5_3)".into());
    }
    if fig.section.trim().is_empty() {
        bad("section", "", "cite the seed's section (`§4.2`)".into());
    }
    for (n, st) in fig.statements.iter().enumerate() {
        let Some(c) = &st.check else { continue };
        let key = format!("statement[{n}].check");
        if c.metric.trim().is_empty() {
            bad(&format!("{key}.metric"), "", "name a key of the runs' summary.json".into());
        }
        if c.a.is_empty() || c.b.is_empty() {
            bad(&format!("{key}.a/b"), "{}", "a check compares two cells; give each its keys".into());
        }
        for side in [&c.a, &c.b] {
            for k in side.keys() {
                if k != "runtime" && !fig.set.contains_key(k) && !fig.grid.contains_key(k) {
                    bad(
                        &format!("{key}.{k}"),
                        &text(&side[k]),
                        "a cell is picked by the figure's set or grid keys, or runtime".into(),
                    );
                }
            }
        }
        match (c.kind, c.min, c.max) {
            (CheckKind::Ratio, Some(lo), Some(hi)) if lo <= hi => {}
            (CheckKind::Ratio, ..) => bad(&key, "ratio", "a ratio check needs min <= max".into()),
            (_, None, None) => {}
            _ => bad(&key, "min/max", "min and max belong to a ratio check".into()),
        }
    }
    out
}
