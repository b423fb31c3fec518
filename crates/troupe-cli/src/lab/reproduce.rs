//! `troupe lab reproduce`: a published study's figures re-made from runs (docs/studies.md).
//! `--list` prints the studies, their figures and each profile's estimated time; otherwise each
//! runnable figure's grid runs through the sweep machinery into `<out>/<profile>/<figure>/`
//! (resumable: a run folder that is complete is skipped), then `figures.csv` (a verdict per
//! statement) and `report.html` beside them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use troupe_lab::child::Stop;
use troupe_lab::manifest::Manifest;
use troupe_lab::registry::Registry;
use troupe_lab::report::grid::sweep_runs;
use troupe_lab::report::html::{escape, link, Page};
use troupe_lab::report::page::csv_text;
use troupe_lab::study::{self, Cell, Figure, LoadedStudy};
use troupe_lab::{compare, sweep, Error, ErrorKind};
use troupe_lab_workloads::studies;

use crate::shared::{ctrl_c, project_root_for, say, troupe_exe, Tally};

/// What `troupe lab reproduce` was asked.
pub(super) struct Options {
    pub(super) study: Option<String>,
    pub(super) list: bool,
    pub(super) profile: String,
    pub(super) only: Option<Vec<String>>,
    pub(super) out: Option<PathBuf>,
}

/// `troupe lab reproduce`; the exit code.
pub(super) fn reproduce(reg: &Registry, o: Options) -> anyhow::Result<i32> {
    let chosen = match &o.study {
        Some(name) => vec![studies::get(name)?],
        None if o.list => studies::all()?,
        None => {
            return Err(Error::new(ErrorKind::Unsupported(
                "name a study (troupe lab reproduce scp), or list them with --list".into(),
            ))
            .into())
        }
    };
    if o.list {
        for s in &chosen {
            print!("{}", listing(reg, s, &out_root(s, o.out.as_deref()))?);
        }
        return Ok(0);
    }
    run_study(reg, &chosen[0], &o)
}

/// Where a study's runs go: `--out`, or `lab-runs/reproduce/<study>`. With `--list` and no study
/// named, `--out` is a folder holding one such folder per study.
fn out_root(s: &LoadedStudy, out: Option<&Path>) -> PathBuf {
    match out {
        Some(dir) if dir.join("quick").is_dir() || dir.join("full").is_dir() => dir.to_path_buf(),
        Some(dir) => dir.join(&s.study.study),
        None => Path::new("lab-runs").join("reproduce").join(&s.study.study),
    }
}

/// The `--list` text of one study; `root` is where its runs would be (for the time measured).
fn listing(reg: &Registry, s: &LoadedStudy, root: &Path) -> anyhow::Result<String> {
    let st = &s.study;
    let mut out = String::new();
    let _ = writeln!(out, "{} (seed {}): {}", st.study, st.seed, st.title);
    for (p, what) in &st.profiles {
        let _ = writeln!(out, "  profile {p}: {what}");
    }
    let _ = writeln!(out, "  {:<10} {:>16} {:>16}  title [status]", "figure", "quick: runs, est", "full: runs, est");
    let (mut tq, mut tf) = (Duration::ZERO, Duration::ZERO);
    for fig in &st.figures {
        let q = s.plan(reg, fig, "quick")?;
        let f = s.plan(reg, fig, "full")?;
        if fig.runnable() {
            tq += q.estimate();
            tf += f.estimate();
        }
        let status = if fig.runnable() { String::new() } else { format!(" [{}]", fig.status) };
        let _ = writeln!(
            out,
            "  {:<10} {:>6} {:>9} {:>6} {:>9}  {}{status}",
            fig.id,
            format!("{}r", q.runs()),
            study::human(q.estimate()),
            format!("{}r", f.runs()),
            study::human(f.estimate()),
            fig.title
        );
    }
    let _ = writeln!(
        out,
        "  total (figures that run): quick {}, full {}; estimates, from each grid: runs x (the workload's \
         expected run time, an upper bound for some, + {} s): the model",
        study::human(tq),
        study::human(tf),
        study::RUN_OVERHEAD.as_secs()
    );
    for profile in study::PROFILES {
        if let Some(m) = study::measured(s, reg, &root.join(profile), profile) {
            let _ = writeln!(
                out,
                "  measured here ({}): {} figure(s) of profile {profile}, {} runs, took {} where the model said {} \
                 (x{:.2}); at that ratio: quick {}, full {}",
                root.join(profile).display(),
                m.figures,
                m.runs,
                study::human(m.took),
                study::human(m.estimated),
                m.ratio(),
                study::human(m.scale(tq)),
                study::human(m.scale(tf)),
            );
        }
    }
    out.push('\n');
    Ok(out)
}

/// The figures `--only` picks, in the study's order; an unknown id is an error listing them.
fn picked<'a>(s: &'a LoadedStudy, only: Option<&[String]>) -> anyhow::Result<Vec<&'a Figure>> {
    Ok(match only {
        None => s.study.figures.iter().collect(),
        Some(ids) => {
            for id in ids {
                s.figure(id)?;
            }
            s.study.figures.iter().filter(|f| ids.contains(&f.id)).collect()
        }
    })
}

fn run_study(reg: &Registry, s: &LoadedStudy, o: &Options) -> anyhow::Result<i32> {
    if !study::PROFILES.contains(&o.profile.as_str()) {
        return Err(Error::new(ErrorKind::Unsupported(format!(
            "unknown profile {:?}; profiles: quick, full",
            o.profile
        )))
        .into());
    }
    let figs = picked(s, o.only.as_deref())?;
    let root = o.out.clone().unwrap_or_else(|| out_root(s, None));
    let out = root.join(&o.profile);
    let stop = Stop::new();
    ctrl_c(&stop);
    let command: Vec<String> = std::env::args().collect();
    let mut tally = Tally::default();
    let mut left: Duration = figs
        .iter()
        .filter(|f| f.runnable())
        .map(|f| s.plan(reg, f, &o.profile).map(|p| p.estimate()))
        .sum::<troupe_lab::Result<Duration>>()?;
    for fig in &figs {
        if !fig.runnable() {
            eprintln!("troupe lab: {} skipped: {}", fig.id, fig.status);
            continue;
        }
        if stop.is_set() {
            tally.interrupted = true;
            break;
        }
        let plan = s.plan(reg, fig, &o.profile)?;
        let spec = sweep::SweepSpec {
            workload: plan.workload,
            config_file: None,
            sets: plan.sets.clone(),
            runtimes: plan.runtimes.clone(),
            reps: plan.reps,
        };
        let mut grid = sweep::expand(&spec)?;
        // The figure's `skip`: (runtime, cell) pairs the runtime cannot run.
        grid.points.retain(|p| !plan.skips(&p.runtime, &p.config.to_json()));
        let kept: std::collections::HashSet<&str> = grid.points.iter().map(|p| p.name.as_str()).collect();
        grid.file.points.retain(|n| kept.contains(n.as_str()));
        let project_root = project_root_for(&plan.runtimes)?;
        compare::check_runtimes(&plan.runtimes, plan.workload.name(), project_root.as_deref())?;
        let dir = out.join(&fig.id);
        eprintln!(
            "troupe lab: {} {}: {} runs into {} (estimated {}, the study's figures left {})",
            s.study.study,
            fig.id,
            grid.points.len(),
            dir.display(),
            study::human(plan.estimate()),
            study::human(left)
        );
        let pending: Vec<_> =
            grid.points.iter().filter(|p| !sweep::is_complete(&dir.join("runs").join(&p.name))).cloned().collect();
        let mut bar = crate::progress::Bar::new(&pending);
        let result = sweep::run(&grid, &dir, &troupe_exe(plan.workload)?, project_root, &command, &stop, &mut bar);
        bar.finish();
        let summary = result?;
        tally.add(&summary);
        left = left.saturating_sub(plan.estimate());
    }
    let rows = write_outputs(s, &figs, &o.profile, &out)?;
    tally.say("reproduce", &out);
    say!("figures {} ({} statements)", out.join("figures.csv").display(), rows);
    say!("report  {}", out.join("report.html").display());
    Ok(tally.code())
}

/// The completed runs of a figure folder as the checks read them.
fn cells(dir: &Path) -> Vec<Cell> {
    let Ok((_, runs)) = sweep_runs(dir) else { return Vec::new() };
    runs.iter()
        .filter(|r| sweep::is_complete(&r.dir))
        .filter_map(|r| {
            let m = Manifest::read(&r.dir).ok()?;
            let text = std::fs::read_to_string(r.dir.join("summary.json")).ok()?;
            let summary = serde_json::from_str(&text).ok()?;
            Some(Cell { runtime: m.runtime, config: m.config, summary })
        })
        .collect()
}

/// Writes `figures.csv` and `report.html` into `out`; the number of statements.
fn write_outputs(s: &LoadedStudy, figs: &[&Figure], profile: &str, out: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let st = &s.study;
    let mut csv_rows = Vec::new();
    let mut page = Page::new(&format!("{}: {} (seed {}), profile {profile}", st.study, st.title, st.seed));
    page.p(&format!("Source: {}", st.source));
    page.p(&format!(
        "Profile {profile}: {}. The seed's numbers are its own, on its hardware; a verdict says whether the \
         shape it states holds here.",
        st.profiles.get(profile).map(String::as_str).unwrap_or("")
    ));
    let mut n = 0;
    for fig in figs {
        page.h2(&format!("{} ({}): {}", fig.id, fig.section, fig.title));
        if !fig.runnable() {
            page.p(&format!("Not run: {}", fig.status));
        } else {
            page.raw(&format!(
                "<p>Runs and plots: {}</p>",
                link(&format!("{}/report.html", fig.id), &format!("{}/report.html", fig.id))
            ));
        }
        if !fig.seed_values.is_empty() {
            page.raw(&format!(
                "<p>The seed's values:</p><ul>{}</ul>",
                fig.seed_values.iter().map(|v| format!("<li>{}</li>", escape(v))).collect::<String>()
            ));
        }
        let found = if fig.runnable() { cells(&out.join(&fig.id)) } else { Vec::new() };
        let mut rows = Vec::new();
        for stmt in &fig.statements {
            let v = if fig.runnable() {
                study::verdict(stmt.check.as_ref(), &found)
            } else {
                study::Verdict { word: "not run", measured: String::new() }
            };
            csv_rows.push(vec![
                st.study.clone(),
                fig.id.clone(),
                stmt.text.clone(),
                stmt.seed_value.clone(),
                v.measured.clone(),
                v.word.to_string(),
            ]);
            rows.push(vec![stmt.text.clone(), stmt.seed_value.clone(), v.measured, v.word.to_string()]);
            n += 1;
        }
        if !rows.is_empty() {
            page.table(&["statement", "seed", "measured", "verdict"], &rows);
        }
    }
    let header = ["study", "figure", "statement", "seed_value", "measured_value", "verdict"];
    let csv = csv_text(&header, csv_rows)?;
    let path = out.join("figures.csv");
    std::fs::write(&path, csv).map_err(|e| Error::io(&path, e))?;
    let path = out.join("report.html");
    std::fs::write(&path, page.finish()).map_err(|e| Error::io(&path, e))?;
    Ok(n)
}
