//! Runs the micro-benchmarks without the `troupe` CLI, for measuring before `troupe lab micro`
//! is wired to `troupe_micro::run`.
//!
//! Run with:
//! `cargo run --release -p troupe-micro --example micro -- [json] [only=pingpong,count]
//!  [runtimes=actix,ractor,kameo] [reps=3] [n=1000 actors=10 fib.n=15 ...]`
//!
//! `table-from=FILE` renders the JSON lines of an earlier `json` run as the table.
//! A plain key applies to every benchmark that has it; `<bench>.<key>` to that one only.
//!
//! `main` calls `troupe_micro::run` first thing with the same arguments, which is what lets the
//! `memory` benchmark re-execute this binary as its fresh child process.

use std::collections::BTreeMap;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut opts = troupe_micro::MicroOptions::default();
    let mut params = BTreeMap::new();
    if let Some(file) = std::env::args().nth(1).and_then(|a| a.strip_prefix("table-from=").map(String::from)) {
        return table_from(&file);
    }
    for arg in std::env::args().skip(1) {
        let arg = arg.trim_start_matches("--").to_string();
        match arg.split_once('=') {
            None if arg == "json" => opts.json = true,
            Some(("only", v)) => opts.only = Some(v.split(',').map(str::to_string).collect()),
            Some(("runtimes", v)) => opts.runtimes = v.split(',').map(str::to_string).collect(),
            Some(("reps", v)) => match v.parse() {
                Ok(r) => opts.reps = Some(r),
                Err(_) => return usage(&arg),
            },
            Some((k, v)) => match v.parse::<u64>() {
                Ok(x) => {
                    params.insert(k.to_string(), x);
                }
                Err(_) => return usage(&arg),
            },
            None => return usage(&arg),
        }
    }
    opts.params = params;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match troupe_micro::run(&opts, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("micro: {e}");
            ExitCode::from(match e.kind {
                troupe_micro::ErrorKind::Usage => 2,
                troupe_micro::ErrorKind::Missing => 3,
                _ => 1,
            })
        }
    }
}

/// Renders a file of result lines (from a `json` run) as the table.
fn table_from(file: &str) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("micro: cannot read {file}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut records = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<troupe_micro::Record>(line) {
            Ok(r) => records.push(r),
            Err(e) => {
                eprintln!("micro: {file}: not a result line ({e}): {line}");
                return ExitCode::from(2);
            }
        }
    }
    match troupe_micro::render_table(&records, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

fn usage(arg: &str) -> ExitCode {
    eprintln!(
        "micro: bad argument `{arg}`; usage: micro [json] [only=a,b] [runtimes=a,b] [reps=N] \
         [key=value ...]"
    );
    ExitCode::from(2)
}
