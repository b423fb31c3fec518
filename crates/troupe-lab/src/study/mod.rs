//! Studies as data: one TOML file per published study (a "seed"), listing each of its figures
//! and tables as a grid of runs the lab can make, the seed's published values beside it, and
//! the statements a reproduction can check (`troupe lab reproduce`, docs/studies.md).
//!
//! Rules:
//! 1. A study file is parsed and validated once, whole; every problem names the file, the
//!    figure and the key (`scp.toml: figure fig5a: grid.failure_rte: unknown key ...`), and all
//!    of a file's problems are reported together ([`crate::ErrorKind::InvalidConfig`]).
//! 2. Every figure names a workload of the registry it is validated against, and its `set` and
//!    `grid` keys (and each profile's overrides) are expanded by the sweep's own grid expansion
//!    ([`crate::sweep::expand_configs`]): a study cannot ask for a key or value a sweep would
//!    refuse.
//! 3. A figure the lab cannot make as the seed made it says so in `status = "missing: <what>"`;
//!    such a figure is listed, never run, and never given a verdict.
//! 4. A profile (`quick`, `full`) is the figure's own grid with the profile's overrides applied
//!    key by key: `full` is the seed's grid as written, `quick` the smaller one the file states.
//! 5. The estimated time of a profile is derived from the grid: cells x runtimes x repetitions
//!    x (the workload's expected run time + [`RUN_OVERHEAD`]). Expected run times are bounds
//!    some workloads keep generous, so the model can be far above the truth.
//! 6. A statement is machine-checked only when it has a `check` ([`Check`]); otherwise its
//!    verdict is `unchecked`. A check naming no runtime states a shape and is judged on each
//!    runtime's own cells ([`verdict`]). Each side of a check must name a cell the profile's grid has
//!    (its keys other than `runtime`), else the file is refused: such a statement could never
//!    get a verdict. A check naming a runtime the profile does not run is exempt (it reads
//!    `no data` there by design: a quick profile runs Troupe alone).
//! 7. What the figures that ran to the end took here is read back from their run folders
//!    ([`measured`]), so a listing can set the model beside this machine's time.
//! 8. A figure's `skip` names (runtime, cell) pairs not run, for a runtime that cannot run a
//!    cell's values; they are out of the plan's runs and estimate and of the sweep it hands on.

mod check;
mod format;
mod measured;

use std::collections::BTreeMap;
use std::time::Duration;

pub use check::{verdict, Cell, Verdict};
pub use format::{Check, CheckKind, Figure, Overrides, Statement, Study, PLOTS};
pub use measured::{measured, Measured, MAX_GAP};

use crate::config::Config;
use crate::error::{ConfigIssue, Error, ErrorKind, Result};
use crate::registry::Registry;
use crate::sweep;
use crate::workload::Workload;

/// What the lab adds to a workload's expected run time per run in an estimate: starting the
/// program, writing and analysing the run folder (rule 5).
pub const RUN_OVERHEAD: Duration = Duration::from_secs(5);

/// The profiles a study is run with.
pub const PROFILES: &[&str] = &["quick", "full"];

/// A figure's runs under one profile: what the sweep machinery is handed.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload.
    pub workload: &'static dyn Workload,
    /// `key=value` and `key=v1,v2,...` overrides, as `troupe lab sweep --set` takes them.
    pub sets: Vec<String>,
    /// The runtimes.
    pub runtimes: Vec<String>,
    /// Repetitions of every cell.
    pub reps: u32,
    /// The validated configs of the grid's cells (one per cell, before runtimes).
    pub configs: Vec<Config>,
    /// The figure's `skip` selectors: (runtime, cell) pairs not run.
    pub skip: Vec<BTreeMap<String, toml::Value>>,
}

impl Plan {
    /// The number of runs: cells x runtimes x repetitions, less the skipped (runtime, cell)
    /// pairs.
    pub fn runs(&self) -> usize {
        self.pairs().count() * self.reps as usize
    }

    /// The estimated time of the runs (rule 5).
    pub fn estimate(&self) -> Duration {
        let per_rep: Duration = self.pairs().map(|(_, c)| self.workload.expected_duration(c) + RUN_OVERHEAD).sum();
        per_rep * self.reps
    }

    /// Whether `runtime` skips the cell whose resolved config is `config` (the figure's `skip`).
    pub fn skips(&self, runtime: &str, config: &serde_json::Value) -> bool {
        self.skip.iter().any(|want| check::picks(want, runtime, config))
    }

    /// The (runtime, config) pairs that run.
    fn pairs(&self) -> impl Iterator<Item = (&str, &Config)> {
        self.runtimes
            .iter()
            .flat_map(move |rt| self.configs.iter().map(move |c| (rt.as_str(), c)))
            .filter(|(rt, c)| self.skip.is_empty() || !self.skips(rt, &c.to_json()))
    }
}

/// A parsed, validated study.
#[derive(Debug, Clone)]
pub struct LoadedStudy {
    /// The file's name, as errors name it.
    pub origin: String,
    /// The file's content.
    pub study: Study,
}

impl LoadedStudy {
    /// The figure called `id`, or an error listing the study's figures.
    pub fn figure(&self, id: &str) -> Result<&Figure> {
        self.study.figures.iter().find(|f| f.id == id).ok_or_else(|| {
            let ids: Vec<&str> = self.study.figures.iter().map(|f| f.id.as_str()).collect();
            Error::new(ErrorKind::Unsupported(format!(
                "study {} has no figure {id:?}{}; its figures: {}",
                self.study.study,
                crate::did_you_mean(id, &ids),
                ids.join(", ")
            )))
        })
    }

    /// The plan of figure `fig` under `profile` (rule 4).
    pub fn plan(&self, registry: &Registry, fig: &Figure, profile: &str) -> Result<Plan> {
        plan(registry, fig, profile)
            .map_err(|issues| Error::new(ErrorKind::InvalidConfig(prefix(&self.origin, fig, issues))))
    }
}

/// Parses and validates a study file (rules 1-3); `origin` names it in errors.
///
/// ```
/// use troupe_lab::{registry::Registry, study, testkit::Noop};
///
/// let reg = Registry::new(vec![&Noop]);
/// let text = r#"
/// study = "demo"
/// seed = "999"
/// title = "A demo"
/// [[figure]]
/// id = "fig1"
/// title = "ticks"
/// section = "§1"
/// workload = "noop"
/// plot = "line"
/// x = "tiks"
/// y = "ticks"
/// grid = { tiks = [1, 2] }
/// "#;
/// let e = study::load(&reg, text, "demo.toml").unwrap_err().to_string();
/// assert!(e.contains("demo.toml: figure fig1: grid.tiks"), "{e}");
/// assert!(e.contains("did you mean `ticks`?"), "{e}");
/// ```
pub fn load(registry: &Registry, text: &str, origin: &str) -> Result<LoadedStudy> {
    let study: Study = toml::from_str(text).map_err(|e| {
        Error::new(ErrorKind::InvalidConfig(vec![ConfigIssue {
            key: origin.to_string(),
            value: "(file)".into(),
            problem: format!("not a study file: {}", e.to_string().trim_end()),
        }]))
    })?;
    let mut issues = Vec::new();
    let mut seen = BTreeMap::new();
    if study.figures.is_empty() {
        issues.push(issue(origin, "figure", "(none)", "a study lists at least one [[figure]]".into()));
    }
    for fig in &study.figures {
        if seen.insert(fig.id.clone(), ()).is_some() {
            issues.push(issue(origin, &format!("figure {}: id", fig.id), &fig.id, "two figures with one id".into()));
        }
        let mut found = format::check_figure(fig);
        if registry.get(&fig.workload).is_err() {
            found.push(ConfigIssue {
                key: "workload".into(),
                value: fig.workload.clone(),
                problem: format!(
                    "not a workload of the lab{}; available: {}",
                    crate::did_you_mean(&fig.workload, &registry.names()),
                    registry.names().join(", ")
                ),
            });
        } else {
            // The quick profile is checked only where it changes something and the figure's
            // own grid is sound (otherwise it would repeat the same problems).
            match plan(registry, fig, "full") {
                Err(list) => found.extend(list),
                Ok(_) if fig.quick.is_some() => found.extend(plan(registry, fig, "quick").err().unwrap_or_default()),
                Ok(_) => {}
            }
        }
        issues.extend(prefix(origin, fig, found));
    }
    if issues.is_empty() {
        Ok(LoadedStudy { origin: origin.to_string(), study })
    } else {
        Err(Error::new(ErrorKind::InvalidConfig(issues)))
    }
}

fn issue(origin: &str, key: &str, value: &str, problem: String) -> ConfigIssue {
    ConfigIssue { key: format!("{origin}: {key}"), value: value.to_string(), problem }
}

fn prefix(origin: &str, fig: &Figure, issues: Vec<ConfigIssue>) -> Vec<ConfigIssue> {
    issues.into_iter().map(|i| ConfigIssue { key: format!("{origin}: figure {}: {}", fig.id, i.key), ..i }).collect()
}

/// The plan of `fig` under `profile`, or its problems with keys relative to the figure.
fn plan(registry: &Registry, fig: &Figure, profile: &str) -> std::result::Result<Plan, Vec<ConfigIssue>> {
    let workload = registry.get(&fig.workload).map_err(|e| {
        vec![ConfigIssue { key: "workload".into(), value: fig.workload.clone(), problem: e.to_string() }]
    })?;
    let eff = fig
        .effective(profile)
        .map_err(|p| vec![ConfigIssue { key: "profile".into(), value: profile.into(), problem: p }])?;
    let mut issues = Vec::new();
    if !(1..=sweep::MAX_REPS).contains(&eff.reps) {
        issues.push(ConfigIssue {
            key: where_(profile, "reps"),
            value: eff.reps.to_string(),
            problem: format!("repetitions must be 1..={}", sweep::MAX_REPS),
        });
    }
    if eff.runtimes.is_empty() {
        issues.push(ConfigIssue {
            key: where_(profile, "runtimes"),
            value: "[]".into(),
            problem: "name at least one runtime".into(),
        });
    }
    let mut sets = Vec::new();
    for (k, v) in &eff.set {
        sets.push(format!("{k}={}", format::text(v)));
    }
    for (k, vals) in &eff.grid {
        if vals.is_empty() {
            issues.push(ConfigIssue {
                key: where_(profile, &format!("grid.{k}")),
                value: "[]".into(),
                problem: "an axis needs at least one value".into(),
            });
            continue;
        }
        let joined: Vec<String> = vals.iter().map(format::text).collect();
        sets.push(format!("{k}={}", joined.join(",")));
    }
    let configs = match sweep::expand_configs(workload, None, &sets) {
        Ok(g) => g.configs,
        Err(e) => match e.kind() {
            ErrorKind::InvalidConfig(list) => {
                for i in list {
                    let section = if eff.grid.contains_key(&i.key) { "grid" } else { "set" };
                    issues.push(ConfigIssue { key: where_(profile, &format!("{section}.{}", i.key)), ..i.clone() });
                }
                Vec::new()
            }
            _ => {
                issues.push(ConfigIssue { key: "grid".into(), value: String::new(), problem: e.to_string() });
                Vec::new()
            }
        },
    };
    for (n, want) in fig.skip.iter().enumerate() {
        let unknown: Vec<&String> = want
            .keys()
            .filter(|k| k.as_str() != "runtime" && !eff.set.contains_key(*k) && !eff.grid.contains_key(*k))
            .collect();
        if want.is_empty() || !unknown.is_empty() {
            issues.push(ConfigIssue {
                key: where_(profile, &format!("skip[{n}]")),
                value: want.keys().cloned().collect::<Vec<_>>().join(", "),
                problem: "a skip picks cells by the figure's set or grid keys and runtime, and names at least one"
                    .into(),
            });
        }
    }
    if fig.runnable() && issues.is_empty() && fig_keys_ok(fig) {
        issues.extend(unreachable_checks(fig, profile, &eff.runtimes, &configs));
    }
    if issues.is_empty() {
        Ok(Plan { workload, sets, runtimes: eff.runtimes, reps: eff.reps, configs, skip: fig.skip.clone() })
    } else {
        Err(issues)
    }
}

/// Whether the figure's own checks (keys, plot, status) pass: only then are its cells matched
/// (a check with an unknown key is already reported as such).
fn fig_keys_ok(fig: &Figure) -> bool {
    format::check_figure(fig).is_empty()
}

/// Rule 6: the sides of the figure's checks that no cell of the grid matches.
fn unreachable_checks(fig: &Figure, profile: &str, runtimes: &[String], configs: &[Config]) -> Vec<ConfigIssue> {
    let cells: Vec<serde_json::Value> = configs.iter().map(Config::to_json).collect();
    let mut out = Vec::new();
    for (n, st) in fig.statements.iter().enumerate() {
        let Some(check) = &st.check else { continue };
        let runs = |want: &BTreeMap<String, toml::Value>| {
            want.get("runtime").is_none_or(|r| runtimes.contains(&format::text(r)))
        };
        if !runs(&check.a) || !runs(&check.b) {
            continue; // a runtime this profile does not run: `no data` by design
        }
        for (side, want) in [("a", &check.a), ("b", &check.b)] {
            let keys: BTreeMap<String, toml::Value> =
                want.iter().filter(|(k, _)| k.as_str() != "runtime").map(|(k, v)| (k.clone(), v.clone())).collect();
            if !cells.iter().any(|c| check::picks(&keys, "", c)) {
                out.push(ConfigIssue {
                    key: where_(profile, &format!("statement[{n}].check.{side}")),
                    value: keys
                        .iter()
                        .map(|(k, v)| format!("{k} = {}", format::text(v)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    problem: format!(
                        "no cell of the {profile} profile's grid has these values, so the statement could never get \
                         a verdict; name a cell the grid has, or add the values to the grid"
                    ),
                });
            }
        }
    }
    out
}

/// `key` for the full profile (the figure's own), `quick.key` for an override's.
fn where_(profile: &str, key: &str) -> String {
    if profile == "full" {
        key.to_string()
    } else {
        format!("{key} (profile {profile})")
    }
}

/// A duration as people read an estimate: `~2h 05m`, `~14m`, `~40s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("~{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("~{}m", s.div_ceil(60))
    } else {
        format!("~{s}s")
    }
}
