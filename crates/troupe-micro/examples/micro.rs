//! Runs the micro-benchmarks without the `troupe` CLI, for measuring before `troupe lab micro`
//! is wired to `troupe_micro::run`.
//!
//! Run with:
//! `cargo run --release -p troupe-micro --example micro -- [json] [only=pingpong,count]
//!  [runtimes=actix,ractor,kameo] [reps=3] [n=1000 actors=10 fib.n=15 ...]`
//!
//! A plain key applies to every benchmark that has it; `<bench>.<key>` to that one only.
//!
//! `main` calls `troupe_micro::run` first thing with the same arguments, which is what lets the
//! `memory` benchmark re-execute this binary as its fresh child process.

use std::collections::BTreeMap;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut opts = troupe_micro::MicroOptions::default();
    let mut params = BTreeMap::new();
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

fn usage(arg: &str) -> ExitCode {
    eprintln!(
        "micro: bad argument `{arg}`; usage: micro [json] [only=a,b] [runtimes=a,b] [reps=N] \
         [key=value ...]"
    );
    ExitCode::from(2)
}
