//! `troupe lab ...`: run, sweep, compare, report, micro, and the hidden `exec` that is the Troupe SUB
//! child. Thin: it parses, installs the Ctrl-C handler, calls troupe-lab / troupe-micro, prints
//! a summary, and maps errors to the exit codes listed in main.rs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use troupe_lab::child::Stop;
use troupe_lab::config::ConfigBuilder;
use troupe_lab::manifest::Status;
use troupe_lab::registry::Registry;
use troupe_lab::run::{RunOutcome, RunRequest, TroupeExe};
use troupe_lab::workload::Workload;
use troupe_lab::{compare, machine, report, root, sweep, Error, ErrorKind};

use crate::code;

/// Prints a line to stdout, ignoring a closed pipe (`troupe lab run ... | head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

#[derive(Args)]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Subcommand)]
enum LabCommand {
    /// One run: writes a run folder (manifest, events, schedule, CSV, report.html).
    Run {
        /// The workload: scp, chat, overlay-scale, ... (an unknown name lists them all; `troupe lab
        /// config WORKLOAD` lists its keys).
        workload: String,
        /// A TOML file of config keys.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Override one key: --set key=value (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// The run folder [default: lab-runs/<workload>-<timestamp>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// The runtime: troupe, or a peer with peers/<runtime>/<workload>.
        #[arg(long, default_value = "troupe")]
        runtime: String,
    },
    /// A grid of runs: --set key=v1,v2,... makes an axis. Resumable: run it again with the same
    /// --out to finish an interrupted sweep.
    Sweep {
        /// The workload: scp, chat, overlay-scale, ... (an unknown name lists them all; `troupe lab
        /// config WORKLOAD` lists its keys).
        workload: String,
        /// A TOML file of config keys.
        #[arg(long)]
        config: Option<PathBuf>,
        /// --set key=value or --set key=v1,v2,... (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUES")]
        sets: Vec<String>,
        /// The sweep folder [default: lab-runs/sweep-<workload>-<timestamp>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runtimes, comma separated.
        #[arg(long, default_value = "troupe", value_delimiter = ',')]
        runtimes: Vec<String>,
        /// Run every point this many times (same config and seed; sweep `seed` to vary it);
        /// the report shows each point's mean with a 95% confidence interval and N.
        #[arg(long, default_value_t = 1, value_name = "N")]
        reps: u32,
    },
    /// Runtimes side by side: every grid point run on each runtime with the same config, seed
    /// and schedule, one report normalised to each runtime's own 0% baseline. Resumable.
    Compare {
        /// The workload: scp, chat, overlay-scale, ... (an unknown name lists them all; `troupe lab
        /// config WORKLOAD` lists its keys).
        workload: String,
        /// Runtimes, comma separated, e.g. troupe,erlang,akka.
        #[arg(long, required = true, value_delimiter = ',')]
        runtimes: Vec<String>,
        /// A TOML file of config keys.
        #[arg(long)]
        config: Option<PathBuf>,
        /// --set key=value or --set key=v1,v2,... (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUES")]
        sets: Vec<String>,
        /// The comparison folder [default: lab-runs/compare-<workload>-<timestamp>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// The point whose throughput over time is plotted [default: the highest failure rate].
        #[arg(long)]
        focus: Option<String>,
        /// Seconds past warm-up + window after which a run counts as hung.
        #[arg(long, default_value_t = 60)]
        hang_after: u64,
        /// Run every point this many times on every runtime (same schedule; the runtimes take
        /// turns going first); the report shows means with 95% confidence intervals and N.
        #[arg(long, default_value_t = 1, value_name = "N")]
        reps: u32,
    },
    /// Rebuild the report of a run, sweep or comparison folder from its recorded events.
    Report {
        /// The run, sweep or comparison folder.
        dir: PathBuf,
    },
    /// Micro-benchmarks (workloads.md §6).
    Micro {
        /// Only these benchmarks, comma separated.
        #[arg(long, value_delimiter = ',')]
        only: Option<Vec<String>>,
        /// Runtimes, comma separated: troupe, actix, ractor, kameo, erlang, akka, protoactor, caf
        /// (default: troupe,actix,ractor,kameo).
        #[arg(long, value_delimiter = ',')]
        runtimes: Vec<String>,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        /// Measured repetitions per benchmark after one warm-up (default 3; memory runs once).
        #[arg(long)]
        reps: Option<u32>,
        /// Override a parameter: `n=1000` for every benchmark that has `n`, `fib.n=20` for one.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Also record the run in this folder: `results.jsonl` (every line, local and
        /// distribution) and `run.json` (command, machine, commit, library versions, threads,
        /// load over the run).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Worker threads of every tokio-based runtime (troupe, ractor, kameo; actix is one
        /// thread by design; peers keep their defaults). Recorded in each line's `threads`.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
        threads: Option<u32>,
        /// Runs the local benchmarks (not memory) at each worker count, e.g. `1,2,4,8,16`, and
        /// writes `results.jsonl`, `scaling.csv` and one plot per benchmark (value vs threads,
        /// one line per runtime) into --out (default lab-runs/micro-scaling-<timestamp>).
        #[arg(long, value_delimiter = ',', value_name = "N,N,...", conflicts_with = "threads")]
        scaling: Option<Vec<u32>>,
    },
    /// Print the resolved config of a workload (defaults, --config, --set) as TOML.
    Config {
        /// The workload: scp, chat, overlay-scale, ... (an unknown name lists them all; `troupe lab
        /// config WORKLOAD` lists its keys).
        workload: String,
        /// A TOML file of config keys.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Override one key (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// A Troupe program of a workload (`scp`, `chat`, or a helper role such as `scp-injector`),
    /// started by the lab as a child process (environment
    /// contract: TROUPE_CONFIG, TROUPE_SCHEDULE, TROUPE_EVENTS, TROUPE_RUN_ID).
    #[command(hide = true)]
    Exec {
        /// The workload: scp, chat, overlay-scale, ... (an unknown name lists them all; `troupe lab
        /// config WORKLOAD` lists its keys).
        workload: String,
    },
}

/// Maps a lab error to an exit code.
fn exit_code(e: &anyhow::Error) -> i32 {
    match e.downcast_ref::<Error>().map(Error::kind) {
        Some(ErrorKind::InvalidConfig(_)) | Some(ErrorKind::Unsupported(_)) => code::USAGE,
        Some(ErrorKind::MissingToolchain { .. }) => code::TOOLCHAIN,
        Some(ErrorKind::Io { .. })
        | Some(ErrorKind::NotARun(_))
        | Some(ErrorKind::NoProjectRoot)
        | Some(ErrorKind::SweepMismatch(_))
        | Some(ErrorKind::Malformed { .. }) => code::FILES,
        _ => code::FAILED,
    }
}

pub(crate) fn main(args: LabArgs) -> i32 {
    match dispatch(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("troupe lab: {e:#}");
            exit_code(&e)
        }
    }
}

fn dispatch(args: LabArgs) -> anyhow::Result<i32> {
    // The binary assembles the lab: the core is handed the built-in workloads.
    let reg = troupe_lab_workloads::registry();
    match args.command {
        LabCommand::Run { workload, config, sets, out, runtime } => {
            cmd_run(reg.get(&workload)?, config.as_deref(), &sets, out, &runtime)
        }
        LabCommand::Sweep { workload, config, sets, out, runtimes, reps } => {
            cmd_sweep(reg.get(&workload)?, config.as_deref(), sets, out, runtimes, reps)
        }
        LabCommand::Compare { workload, runtimes, config, sets, out, focus, hang_after, reps } => {
            let workload = reg.get(&workload)?;
            let config_file = match config {
                Some(f) => Some((f.display().to_string(), std::fs::read_to_string(&f).map_err(|e| Error::io(&f, e))?)),
                None => None,
            };
            let spec = compare::CompareSpec { workload, config_file, sets, runtimes, focus, reps };
            crate::compare::cmd_compare(spec, out, Duration::from_secs(hang_after))
        }
        LabCommand::Report { dir } => cmd_report(&reg, &dir),
        LabCommand::Micro { only, runtimes, json, reps, sets, out, threads, scaling } => {
            Ok(crate::micro::main(crate::micro::MicroArgs { only, runtimes, json, reps, sets, out, threads, scaling }))
        }
        LabCommand::Config { workload, config, sets } => {
            let w = reg.get(&workload)?;
            let cfg = resolve(w, config.as_deref(), &sets)?;
            // Valid TOML: each key's resolved value, with what it allows and means as a comment.
            say!("# {}", w.about());
            if let Some(obj) = cfg.to_json().as_object() {
                for k in w.schema().keys {
                    if let Some(v) = obj.get(k.name) {
                        say!(
                            "{} = {v}  # {}; {}",
                            k.name,
                            k.kind.allowed(),
                            k.doc.split_whitespace().collect::<Vec<_>>().join(" ")
                        );
                    }
                }
            }
            for line in troupe_lab::netfaults::config_lines(&cfg) {
                say!("{line}");
            }
            Ok(0)
        }
        LabCommand::Exec { workload: role } => Ok(reg.by_role(&role)?.exec(&role)?),
    }
}

fn resolve(
    workload: &'static dyn Workload,
    file: Option<&Path>,
    sets: &[String],
) -> anyhow::Result<troupe_lab::config::Config> {
    let mut b = ConfigBuilder::new(workload);
    if let Some(f) = file {
        let text = std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?;
        b.apply_toml(&text, &f.display().to_string());
    }
    for s in sets {
        b.apply_set(s);
    }
    Ok(b.build()?)
}

/// Installs the Ctrl-C handler: the first Ctrl-C sets `stop`, a second one exits at once.
pub(crate) fn ctrl_c(stop: &Stop) {
    let stop = stop.clone();
    let spawned = std::thread::Builder::new().name("ctrl-c".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        rt.block_on(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ntroupe lab: stopping (Ctrl-C again to quit at once)");
                stop.trigger();
            }
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(code::INTERRUPTED);
            }
        });
    });
    if spawned.is_err() {
        eprintln!("troupe lab: cannot install the Ctrl-C handler; Ctrl-C will not stop runs cleanly");
    }
}

/// How to start the Troupe SUB of `workload`: this program, `lab exec <its first role>`.
pub(crate) fn troupe_exe(workload: &dyn Workload) -> anyhow::Result<TroupeExe> {
    let program = std::env::current_exe().context("cannot find this program's path")?;
    let role = workload.roles().first().copied().unwrap_or(workload.name());
    Ok(TroupeExe { program, args: vec!["lab".into(), "exec".into(), role.into()] })
}

/// `lab-runs/<name>-<UTC stamp>`, or `...-2`, `-3`, ... when a run started in the same second
/// already has that folder (back-to-back runs from a script).
pub(crate) fn default_out(name: &str) -> PathBuf {
    free_dir(Path::new("lab-runs"), &format!("{name}-{}", machine::folder_stamp(machine::now_unix_ms())))
}

/// `dir/base`, or the first of `dir/base-2`, `dir/base-3`, ... that does not exist.
fn free_dir(dir: &Path, base: &str) -> PathBuf {
    let first = dir.join(base);
    if !first.exists() {
        return first;
    }
    (2..10_000).map(|i| dir.join(format!("{base}-{i}"))).find(|p| !p.exists()).unwrap_or(first)
}

fn cmd_run(
    w: &'static dyn Workload,
    file: Option<&Path>,
    sets: &[String],
    out: Option<PathBuf>,
    runtime: &str,
) -> anyhow::Result<i32> {
    let workload = w.name();
    let config = resolve(w, file, sets)?;
    let project_root = match root::project_root() {
        Ok(r) => Some(r),
        Err(e) if runtime != "troupe" => return Err(e.into()),
        Err(_) => None,
    };
    // A runtime without a program for the workload is a usage error naming the ones there are
    // (with a suggestion for a typo), before any folder is made.
    compare::check_runtimes(&[runtime.to_owned()], workload, project_root.as_deref())?;
    let out = out.unwrap_or_else(|| default_out(workload));
    let stop = Stop::new();
    ctrl_c(&stop);
    let mut req = RunRequest::new(w, config, runtime, out, troupe_exe(w)?);
    req.project_root = project_root;
    req.command = std::env::args().collect();
    eprintln!("troupe lab: running {workload} on {runtime} into {}", req.out_dir.display());
    let planned = w.expected_duration(&req.config);
    let progress = crate::progress::RunProgress::start(&format!("{workload} on {runtime}"), planned);
    let outcome = troupe_lab::run::run(&req, &stop);
    progress.finish();
    let outcome = outcome?;
    print_summary(&outcome);
    Ok(match (outcome.manifest.interrupted, outcome.manifest.status) {
        (true, _) => code::INTERRUPTED,
        (false, Status::Ok) => 0,
        (false, Status::Degraded) => code::DEGRADED,
        _ => code::FAILED,
    })
}

fn print_summary(o: &RunOutcome) {
    let m = &o.manifest;
    let mut rows: Vec<(String, String)> = vec![
        ("run".into(), o.dir.display().to_string()),
        (
            "status".into(),
            match m.status {
                Status::Ok => "ok".into(),
                Status::Degraded => {
                    let r = m.reason.as_deref().unwrap_or_default();
                    format!("DEGRADED: {}", r.strip_prefix("degraded: ").unwrap_or(r))
                }
                _ => format!("FAILED: {}", m.reason.clone().unwrap_or_default()),
            },
        ),
        ("runtime".into(), m.runtime_version.clone()),
    ];
    match &o.stats {
        Some(st) => {
            rows.extend(st.summary_rows());
            rows.push(("summary".into(), o.dir.join(report::SUMMARY).display().to_string()));
        }
        None => rows.push(("statistics".into(), "none: the run recorded no events (events.jsonl is missing)".into())),
    }
    rows.push(("report".into(), o.dir.join("report.html").display().to_string()));
    if m.status != Status::Ok {
        rows.push(("stderr".into(), o.dir.join("stderr.txt").display().to_string()));
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (k, v) in rows {
        say!("{k:<w$}  {v}");
    }
}

fn cmd_sweep(
    w: &'static dyn Workload,
    file: Option<&Path>,
    sets: Vec<String>,
    out: Option<PathBuf>,
    runtimes: Vec<String>,
    reps: u32,
) -> anyhow::Result<i32> {
    let config_file = match file {
        Some(f) => Some((f.display().to_string(), std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?)),
        None => None,
    };
    let workload = w.name();
    let spec = sweep::SweepSpec { workload: w, config_file, sets, runtimes: runtimes.clone(), reps };
    let grid = sweep::expand(&spec)?;
    let project_root = match root::project_root() {
        Ok(r) => Some(r),
        Err(e) if runtimes.iter().any(|r| r != "troupe") => return Err(e.into()),
        Err(_) => None,
    };
    compare::check_runtimes(&runtimes, workload, project_root.as_deref())?;
    let out = out.unwrap_or_else(|| default_out(&format!("sweep-{workload}")));
    let stop = Stop::new();
    ctrl_c(&stop);
    let pending: Vec<_> =
        grid.points.iter().filter(|p| !sweep::is_complete(&out.join("runs").join(&p.name))).cloned().collect();
    eprintln!("troupe lab: sweep of {} runs ({} to do) into {}", grid.points.len(), pending.len(), out.display());
    let mut bar = crate::progress::Bar::new(&pending);
    let command: Vec<String> = std::env::args().collect();
    let result = sweep::run(&grid, &out, &troupe_exe(w)?, project_root, &command, &stop, &mut bar);
    bar.finish();
    let s = result?;
    say!(
        "sweep {}: {} ok, {} failed, {} already complete{}{}",
        out.display(),
        s.ok,
        s.failed,
        s.skipped,
        if s.degraded > 0 { format!("; {} degraded", s.degraded) } else { String::new() },
        if s.interrupted { ", interrupted (run the same command again to resume)" } else { "" }
    );
    say!("report  {}", out.join("report.html").display());
    Ok(if s.interrupted {
        code::INTERRUPTED
    } else if s.failed > 0 {
        code::FAILED
    } else if s.degraded > 0 {
        code::DEGRADED
    } else {
        0
    })
}

fn cmd_report(reg: &Registry, dir: &Path) -> anyhow::Result<i32> {
    if dir.join(compare::FILE).is_file() {
        for line in compare::write_report(reg, dir)? {
            say!("{line}");
        }
        say!("rebuilt the report of a comparison: {}", dir.join("report.html").display());
    } else if dir.join("sweep.json").is_file() {
        let n = sweep::write_report(reg, dir)?;
        say!("rebuilt the report of a sweep of {n} runs: {}", dir.join("report.html").display());
    } else if dir.join("manifest.json").is_file() {
        let w = reg.get(&troupe_lab::manifest::Manifest::read(dir)?.workload)?;
        let (m, _, stats) = troupe_lab::run_folder::rebuild_run(w, dir, None)?;
        let missing = stats.is_none();
        let o = RunOutcome { dir: dir.to_path_buf(), manifest: m, stats };
        print_summary(&o);
        if missing {
            // A run folder without its events has nothing to report, whatever its manifest says.
            eprintln!(
                "troupe lab: {} has no events.jsonl: there are no statistics to report (the manifest's status is \
                 what the run recorded, not a result)",
                dir.display()
            );
            return Ok(code::FILES);
        }
    } else if !dir.is_dir() {
        return Err(Error::io(dir, std::io::Error::new(std::io::ErrorKind::NotFound, "no such folder")).into());
    } else {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())).into());
    }
    Ok(0)
}

#[cfg(test)]
mod out_tests {
    use super::*;

    #[test]
    fn back_to_back_runs_in_one_second_get_their_own_folders() {
        let tmp = std::env::temp_dir().join(format!("troupe-free-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        assert_eq!(free_dir(&tmp, "latency-1"), tmp.join("latency-1"));
        std::fs::create_dir(tmp.join("latency-1")).unwrap();
        assert_eq!(free_dir(&tmp, "latency-1"), tmp.join("latency-1-2"));
        std::fs::create_dir(tmp.join("latency-1-2")).unwrap();
        assert_eq!(free_dir(&tmp, "latency-1"), tmp.join("latency-1-3"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
