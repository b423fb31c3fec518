//! `troupe lab ...`: run, sweep, compare, conform, reproduce, report, micro, config, and the hidden `exec`
//! that is the Troupe SUB child. Thin: it parses and hands each subcommand to its module (`run`,
//! `sweep`, `compare`, `conform`, `reproduce`, `report`, `config`, `exec`; `crate::micro`), which installs the Ctrl-C handler,
//! calls troupe-lab / troupe-micro and prints a summary; errors map to the exit codes listed in
//! main.rs (`crate::shared`, which every subcommand module uses and none of them imports another).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::shared::exit_code;

mod compare;
mod config;
mod conform;
mod exec;
mod report;
mod reproduce;
mod run;
mod sweep;

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
        /// Serve a live view of the run while it goes (throughput per second, faults shaded) at
        /// ADDR: IP:PORT or PORT [default with no value: 127.0.0.1:0, a free loopback port].
        /// The URL is printed on stderr as `watch: http://...`; the server stops with the run.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true,
              default_missing_value = troupe_lab::watch::DEFAULT_ADDR)]
        watch: Option<String>,
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
    /// Check each runtime against the workload's behaviour contract: short scenario runs on every
    /// runtime, every rule judged on each event trace; a rule x runtime table (PASS / FAIL / n/a)
    /// and conform.json, conform.md. Exit 0 only when no rule FAILs (6 otherwise).
    Conform {
        /// The workload: one with conformance rules (chat, scp, ...; an unknown name lists them).
        workload: String,
        /// Runtimes, comma separated [default: troupe and every peer with a program for the
        /// workload, peers/<rt>/<workload>/{build,run}].
        #[arg(long, value_delimiter = ',')]
        runtimes: Option<Vec<String>>,
        /// The folder [default: lab-results/conform/<workload>-<timestamp>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only this scenario (an unknown name lists the workload's scenarios).
        #[arg(long)]
        scenario: Option<String>,
    },
    /// Reproduce a published study (a seed): each figure's grid run through the sweep machinery
    /// (resumable: run it again to finish), then `figures.csv` (the seed's statements, what was
    /// measured, a verdict) and `report.html`. `--list` prints the studies, their figures and the
    /// estimated time of each profile (docs/studies.md).
    Reproduce {
        /// The study: scp, chat, energy, iot, partisan (with --list and no study: all of them).
        study: Option<String>,
        /// Print the study's figures, their status and each profile's estimated time; run nothing.
        #[arg(long)]
        list: bool,
        /// quick (a smaller grid, shorter windows, stated in the report) or full (the seed's grid).
        #[arg(long, default_value = "quick", value_parser = ["quick", "full"])]
        profile: String,
        /// Only these figures, comma separated, as the seed numbers them (fig5a,fig7b).
        #[arg(long, value_delimiter = ',')]
        only: Option<Vec<String>>,
        /// The study's folder [default: lab-runs/reproduce/<study>]; figures go to
        /// <out>/<profile>/<figure>/, and a second run into the same folder resumes.
        #[arg(long)]
        out: Option<PathBuf>,
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
    /// started by the lab as a child process (environment contract: TROUPE_CONFIG,
    /// TROUPE_SCHEDULE, TROUPE_EVENTS, TROUPE_RUN_ID, TROUPE_OBSERVE_LISTEN).
    #[command(hide = true)]
    Exec {
        /// The workload: scp, chat, overlay-scale, ... (an unknown name lists them all; `troupe lab
        /// config WORKLOAD` lists its keys).
        workload: String,
    },
}

/// Runs `troupe lab ...`; its exit code (an error is printed and mapped by `shared::exit_code`).
pub(crate) fn main(args: LabArgs) -> i32 {
    match dispatch(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("troupe lab: {e:#}");
            exit_code(&e)
        }
    }
}

/// One function per subcommand.
fn dispatch(args: LabArgs) -> anyhow::Result<i32> {
    // The binary assembles the lab: the core is handed the built-in workloads.
    let reg = troupe_lab_workloads::registry();
    match args.command {
        LabCommand::Run { workload, config, sets, out, runtime, watch } => {
            run::run(reg.get(&workload)?, config.as_deref(), &sets, out, &runtime, watch.as_deref())
        }
        LabCommand::Sweep { workload, config, sets, out, runtimes, reps } => {
            sweep::sweep(reg.get(&workload)?, config.as_deref(), sets, out, runtimes, reps)
        }
        LabCommand::Compare { workload, runtimes, config, sets, out, focus, hang_after, reps } => compare::compare(
            reg.get(&workload)?,
            config.as_deref(),
            compare::Options { sets, runtimes, focus, reps },
            out,
            Duration::from_secs(hang_after),
        ),
        LabCommand::Conform { workload, runtimes, out, scenario } => {
            conform::conform(&reg, &workload, runtimes, out, scenario)
        }
        LabCommand::Reproduce { study, list, profile, only, out } => {
            reproduce::reproduce(&reg, reproduce::Options { study, list, profile, only, out })
        }
        LabCommand::Report { dir } => report::report(&reg, &dir),
        LabCommand::Micro { only, runtimes, json, reps, sets, out, threads, scaling } => {
            Ok(crate::micro::main(crate::micro::MicroArgs { only, runtimes, json, reps, sets, out, threads, scaling }))
        }
        LabCommand::Config { workload, config, sets } => config::config(reg.get(&workload)?, config.as_deref(), &sets),
        LabCommand::Exec { workload: role } => exec::exec(&reg, &role),
    }
}
