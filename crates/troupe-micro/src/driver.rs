//! The driver behind [`crate::run`]: picks the benchmarks and runtimes, runs each benchmark on
//! each runtime (in-process, in a `memory` child process, or through the external peer program
//! `peers/<runtime>/micro/{build,run}`) with the runtimes taking turns per repetition
//! ([`alternate`]), streams JSON lines or collects a table, and turns what
//! could not run into one error at the end that names every missing runtime and failed
//! benchmark, so one missing toolchain never hides the other runtimes' results.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::bench::{Bench, Params, Record};
use crate::{Error, ErrorKind, MicroOptions};

/// Something that could not run: which runtime, which benchmark (if one), and why.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) runtime: String,
    pub(crate) bench: Option<Bench>,
    pub(crate) error: Error,
}

impl Problem {
    /// `<runtime> <bench>: <message>`, the subject written once: a message that already opens
    /// with it (a correctness failure, a peer's bad line) is not prefixed again.
    pub(crate) fn line_of(runtime: &str, bench: Option<Bench>, error: &Error) -> String {
        let subject = match bench {
            Some(b) => format!("{runtime} {b}"),
            None => runtime.to_owned(),
        };
        let msg = error.to_string();
        if msg.starts_with(&format!("{subject}:")) {
            msg
        } else {
            format!("{subject}: {msg}")
        }
    }
}

/// How long a peer's `build` may take (a cold Maven or CMake build is slow on 2 cores).
const BUILD_DEADLINE: Duration = Duration::from_secs(45 * 60);
/// How long one peer `run` of one benchmark may take, all repetitions included.
const PEER_RUN_DEADLINE: Duration = Duration::from_secs(60 * 60);

pub(crate) fn run(opts: &MicroOptions, out: &mut dyn Write) -> Result<(), Error> {
    let benches = select_benches(opts)?;
    let runtimes = select_runtimes(opts)?;
    let reps = opts.reps.unwrap_or(3).max(1);
    let params: Vec<(Bench, Params)> =
        benches.iter().map(|&b| b.params(&opts.params).map(|p| (b, p))).collect::<Result<_, _>>()?;

    let mut problems: Vec<Problem> = Vec::new();
    let mut ready: Vec<String> = Vec::new();
    let mut root: Option<PathBuf> = None;
    for rt in &runtimes {
        // In-process runtimes need no build, nor does a peer none of the benchmarks runs on
        // (`alternate` reports it as not implemented).
        if crate::IN_PROCESS_RUNTIMES.contains(&rt.as_str()) || !benches.iter().any(|b| b.runs_on(rt)) {
            ready.push(rt.clone());
            continue;
        }
        let built = project_root(&mut root).and_then(|r| build_peer(&r, rt));
        match built {
            Ok(()) => ready.push(rt.clone()),
            Err(error) => {
                eprintln!("micro: {rt}: {error}");
                problems.push(Problem { runtime: rt.clone(), bench: None, error });
            }
        }
    }

    let run_rep = |rt: &str, bench: Bench, p: &Params| -> Result<Vec<Record>, Error> {
        if crate::IN_PROCESS_RUNTIMES.contains(&rt) {
            if bench == Bench::Memory {
                crate::memory::run_child(rt, p.get("n"), opts.child_args.as_deref())
            } else {
                crate::run_in_process(rt, bench, p, 1)
            }
        } else {
            let r = root.as_deref().expect("external runtimes are ready only with a root");
            run_peer(r, rt, bench, p, 1)
        }
    };
    let mut one = |rt: &str, bench: Bench, p: &Params| -> Result<Vec<Record>, Error> {
        let probe = opts.rep_probe.filter(|_| bench != Bench::Memory);
        let rtt = probe.map(|f| f());
        let mut recs = run_rep(rt, bench, p)?;
        if let Some(rtt) = rtt {
            for r in &mut recs {
                r.core_rtt_ns = vec![rtt];
            }
        }
        Ok(recs)
    };
    let mut records: Vec<Record> = Vec::new();
    for (bench, p) in &params {
        let got = alternate(*bench, p, &mut ready, reps, &mut problems, &mut one);
        if opts.json {
            for r in &got {
                writeln!(out, "{}", r.to_json()).map_err(write_failed)?;
            }
            out.flush().map_err(write_failed)?;
        }
        records.extend(got);
    }

    if !opts.json {
        crate::table::render(&records, &runtimes, &benches, reps, &problems, out).map_err(write_failed)?;
    }
    summarize(&problems)
}

/// Runs one repetition (one warm-up, one measured iteration) of a benchmark on a runtime.
pub(crate) type RunOne<'a> = dyn FnMut(&str, Bench, &Params) -> Result<Vec<Record>, Error> + 'a;

/// Runs one benchmark on every ready runtime, the runtimes taking turns per repetition (rule:
/// repetition 1 on each runtime in order, then repetition 2 on each, ...), so a slow phase of
/// a shared machine lands on every runtime alike instead of on whichever ran then. Each turn is
/// one warm-up and one measured iteration (`run_one` with `reps=1`); `memory` runs once per
/// runtime (no warm-up, see `memory.rs`). Returns each runtime's lines merged over its
/// repetitions ([`crate::bench::merge_reps`]) with its thread count; a runtime that fails a
/// repetition is reported in `problems` and left out of this benchmark (and, when it is
/// missing, out of the rest of the run).
pub(crate) fn alternate(
    bench: Bench,
    p: &Params,
    ready: &mut Vec<String>,
    reps: u32,
    problems: &mut Vec<Problem>,
    run_one: &mut RunOne<'_>,
) -> Vec<Record> {
    let turns = if bench == Bench::Memory { 1 } else { reps };
    // A runtime without this benchmark by design is said so once, with no row.
    for rt in ready.iter().filter(|rt| !bench.runs_on(rt)) {
        eprintln!("micro: {bench} on {rt}: not implemented for {bench}; skipped");
        problems.push(Problem { runtime: rt.clone(), bench: Some(bench), error: crate::not_implemented(rt, bench) });
    }
    let mut going: Vec<String> = ready.iter().filter(|rt| bench.runs_on(rt)).cloned().collect();
    let mut done: Vec<(String, Vec<Vec<Record>>)> = going.iter().map(|rt| (rt.clone(), Vec::new())).collect();
    for rep in 1..=turns {
        for rt in going.clone() {
            eprintln!("micro: {bench} rep {rep}/{turns} on {rt} ({}) ...", p.as_args().join(" "));
            match run_one(&rt, bench, p) {
                Ok(recs) => {
                    if let Some((_, v)) = done.iter_mut().find(|(r, _)| *r == rt) {
                        v.push(recs);
                    }
                }
                Err(error) => {
                    eprintln!("micro: {}", Problem::line_of(&rt, Some(bench), &error));
                    if error.kind == ErrorKind::Missing {
                        ready.retain(|r| *r != rt);
                    }
                    problems.push(Problem { runtime: rt.clone(), bench: Some(bench), error });
                    going.retain(|r| *r != rt);
                    done.retain(|(r, _)| *r != rt);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (rt, rep_lines) in done {
        let threads = crate::threads(&rt).map(|t| t.0);
        let merged = if bench == Bench::Memory { rep_lines.concat() } else { crate::bench::merge_reps(&rep_lines) };
        out.extend(merged.into_iter().map(|r| Record { threads, ..r }));
    }
    out
}

fn write_failed(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Failed, format!("cannot write the results: {e}"))
}

fn select_benches(opts: &MicroOptions) -> Result<Vec<Bench>, Error> {
    match &opts.only {
        None => Ok(Bench::ALL.to_vec()),
        Some(names) if names.is_empty() => Ok(Bench::ALL.to_vec()),
        Some(names) => {
            let mut v = Vec::new();
            for n in names {
                let b = Bench::from_name(n.trim())?;
                if !v.contains(&b) {
                    v.push(b);
                }
            }
            v.sort();
            Ok(v)
        }
    }
}

fn select_runtimes(opts: &MicroOptions) -> Result<Vec<String>, Error> {
    let names: Vec<String> = if opts.runtimes.is_empty() {
        crate::DEFAULT_RUNTIMES.iter().map(|s| s.to_string()).collect()
    } else {
        opts.runtimes.iter().map(|s| s.trim().to_string()).collect()
    };
    let mut v: Vec<String> = Vec::new();
    for n in names {
        let known = crate::IN_PROCESS_RUNTIMES.contains(&n.as_str()) || crate::EXTERNAL_RUNTIMES.contains(&n.as_str());
        if !known {
            return Err(crate::unknown_runtime(&n));
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(v)
}

/// One error for everything that could not run: `Failed` if any benchmark failed, else
/// `Missing` if a runtime was missing. A benchmark a runtime does not implement by design
/// ([`ErrorKind::NotImplemented`]) is listed by the table and is no error.
fn summarize(problems: &[Problem]) -> Result<(), Error> {
    let problems: Vec<&Problem> = problems.iter().filter(|p| p.error.kind != ErrorKind::NotImplemented).collect();
    if problems.is_empty() {
        return Ok(());
    }
    let kind = if problems.iter().any(|p| p.error.kind != ErrorKind::Missing) {
        ErrorKind::Failed
    } else {
        ErrorKind::Missing
    };
    let lines: Vec<String> = problems
        .iter()
        .map(|p| match p.bench {
            Some(b) => Problem::line_of(&p.runtime, Some(b), &p.error),
            None => format!("{}: {}", p.runtime, p.error),
        })
        .collect();
    Err(Error::new(kind, format!("micro-benchmarks incomplete:\n  {}", lines.join("\n  "))))
}

/// The project root: `TROUPE_HOME`, else the nearest folder at or above the current directory
/// holding both `peers/` and `Cargo.toml`. Cached in `slot`.
fn project_root(slot: &mut Option<PathBuf>) -> Result<PathBuf, Error> {
    if let Some(r) = slot {
        return Ok(r.clone());
    }
    let found = match std::env::var_os("TROUPE_HOME") {
        Some(h) => Some(PathBuf::from(h)),
        None => {
            let cwd = std::env::current_dir().ok();
            cwd.and_then(|d| {
                d.ancestors()
                    .find(|a| a.join("peers").is_dir() && a.join("Cargo.toml").is_file())
                    .map(Path::to_path_buf)
            })
        }
    };
    match found {
        Some(r) => {
            *slot = Some(r.clone());
            Ok(r)
        }
        None => Err(Error::new(
            ErrorKind::Missing,
            "cannot find the project root (a folder holding peers/ and Cargo.toml) at or above \
             the current directory; run from inside the project or set TROUPE_HOME",
        )),
    }
}

fn install_hint(rt: &str) -> String {
    format!("install it with: bash scripts/install-{rt}.sh")
}

/// Runs `peers/<rt>/micro/build`. Exit 3 means a missing toolchain.
fn build_peer(root: &Path, rt: &str) -> Result<(), Error> {
    let script = root.join("peers").join(rt).join("micro").join("build");
    if !script.is_file() {
        return Err(Error::new(ErrorKind::Missing, format!("no peer program: {} does not exist", script.display())));
    }
    eprintln!("micro: building {rt} ({}) ...", script.display());
    let mut cmd = Command::new("bash");
    cmd.arg(&script).current_dir(root).stdin(Stdio::null());
    let done = run_bounded(cmd, BUILD_DEADLINE, true)?;
    match done.code {
        Some(0) => Ok(()),
        Some(3) => {
            let said = done.stderr.lines().find(|l| l.contains("missing toolchain"));
            let msg = match said {
                Some(l) => l.trim().to_string(),
                None => format!("missing toolchain for {rt}; {}", install_hint(rt)),
            };
            Err(Error::new(ErrorKind::Missing, msg))
        }
        code => {
            Err(Error::new(ErrorKind::Failed, format!("build failed ({}): {}", exit_text(code), tail(&done.stderr))))
        }
    }
}

/// Runs `peers/<rt>/micro/run <bench> key=value... reps=N` and reads its JSON lines.
/// `troupe lab micro` calls it with `reps=1` once per repetition, alternating runtimes.
fn run_peer(root: &Path, rt: &str, bench: Bench, p: &Params, reps: u32) -> Result<Vec<Record>, Error> {
    let script = root.join("peers").join(rt).join("micro").join("run");
    if !script.is_file() {
        return Err(Error::new(ErrorKind::Missing, format!("no peer program: {} does not exist", script.display())));
    }
    let mut cmd = Command::new("bash");
    cmd.arg(&script).arg(bench.name()).args(p.as_args());
    if bench != Bench::Memory {
        cmd.arg(format!("reps={reps}"));
    }
    cmd.current_dir(root).stdin(Stdio::null());
    let done = run_bounded(cmd, PEER_RUN_DEADLINE, false)?;
    if done.code != Some(0) {
        return Err(Error::new(
            ErrorKind::Failed,
            format!("{} {} exited with {}", script.display(), bench, exit_text(done.code)),
        ));
    }
    let mut recs = Vec::new();
    for line in done.stdout.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Record = serde_json::from_str(line).map_err(|e| {
            Error::new(ErrorKind::Failed, format!("{rt} {bench}: stdout line is not a result line ({e}): {line}"))
        })?;
        if rec.bench != bench.name() {
            return Err(Error::new(
                ErrorKind::Failed,
                format!("{rt} {bench}: got a result for `{}`: {line}", rec.bench),
            ));
        }
        recs.push(rec);
    }
    if recs.is_empty() {
        return Err(Error::new(ErrorKind::Failed, format!("{rt} {bench}: printed no result line")));
    }
    Ok(recs)
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to completion within `deadline` (killed past it). Stdout is captured (or, with
/// `stdout_to_stderr`, forwarded to stderr so a build's chatter never reaches the results);
/// stderr is forwarded and also kept for error messages.
fn run_bounded(mut cmd: Command, deadline: Duration, stdout_to_stderr: bool) -> Result<Finished, Error> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(ErrorKind::Failed, format!("cannot start {what}: {e}")))?;
    let mut so = child.stdout.take().expect("piped");
    let se = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        if stdout_to_stderr {
            for line in BufReader::new(so).lines().map_while(Result::ok) {
                eprintln!("{line}");
            }
            String::new()
        } else {
            let mut s = String::new();
            let _ = so.read_to_string(&mut s);
            s
        }
    });
    let err_t = std::thread::spawn(move || {
        let mut kept = String::new();
        for line in BufReader::new(se).lines().map_while(Result::ok) {
            eprintln!("{line}");
            kept.push_str(&line);
            kept.push('\n');
        }
        kept
    });
    let until = Instant::now() + deadline;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::new(
                    ErrorKind::Failed,
                    format!("{what} did not finish within {} s; killed", deadline.as_secs()),
                ));
            }
            Err(e) => return Err(Error::new(ErrorKind::Failed, format!("cannot wait for {what}: {e}"))),
        }
    };
    Ok(Finished {
        code: status.code(),
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    })
}

fn exit_text(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit code {c}"),
        None => "a signal".into(),
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_problem_names_its_subject_once() {
        let e = crate::bench::wrong_total(Bench::Count, "kameo", "total", 4, 5);
        assert_eq!(Problem::line_of("kameo", Some(Bench::Count), &e), "kameo count: wrong total: got 4, expected 5");
        let e = Error::new(ErrorKind::Failed, "exit code 1");
        assert_eq!(Problem::line_of("caf", Some(Bench::Fib), &e), "caf fib: exit code 1");
    }

    #[test]
    fn a_runtime_without_the_bench_is_said_not_implemented_with_no_row_and_no_error() {
        let p = Bench::Timers.params(&BTreeMap::new()).unwrap();
        let mut ready: Vec<String> = ["troupe", "actix", "erlang"].map(String::from).to_vec();
        let mut problems = Vec::new();
        let mut calls: Vec<String> = Vec::new();
        let mut fake = |rt: &str, _: Bench, p: &Params| -> Result<Vec<Record>, Error> {
            calls.push(rt.to_owned());
            Ok(crate::bench::records(rt, p, 1, &[Duration::from_millis(5)]))
        };
        let got = alternate(Bench::Timers, &p, &mut ready, 2, &mut problems, &mut fake);
        assert_eq!(calls, ["troupe", "troupe"], "only troupe runs timers");
        assert!(got.iter().all(|r| r.runtime == "troupe"), "no row for the others");
        let said: Vec<String> = problems.iter().map(|p| Problem::line_of(&p.runtime, p.bench, &p.error)).collect();
        assert_eq!(said.len(), 2);
        assert!(said[0].starts_with("actix timers: not implemented for timers"), "{said:?}");
        assert!(said[1].starts_with("erlang timers: not implemented for timers"), "{said:?}");
        assert_eq!(ready.len(), 3, "they stay ready for the other benchmarks");
        assert!(summarize(&problems).is_ok(), "not implemented by design is no error");
        problems.push(Problem { runtime: "caf".into(), bench: None, error: Error::new(ErrorKind::Missing, "no caf") });
        let e = summarize(&problems).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Missing);
        assert!(!e.message.contains("not implemented"), "{}", e.message);
    }

    #[test]
    fn runtimes_take_turns_per_repetition() {
        let p = Bench::Fib.params(&BTreeMap::new()).unwrap();
        let mut ready: Vec<String> = ["troupe", "actix", "erlang"].map(String::from).to_vec();
        let mut problems = Vec::new();
        let mut calls: Vec<String> = Vec::new();
        let mut fake = |rt: &str, b: Bench, p: &Params| -> Result<Vec<Record>, Error> {
            calls.push(rt.to_owned());
            let ms = calls.len() as u64;
            if rt == "actix" && ms > 4 {
                return Err(Error::new(ErrorKind::Failed, "wrong total"));
            }
            Ok(crate::bench::records(rt, p, 1, &[Duration::from_millis(ms)])
                .into_iter()
                .filter(|r| r.bench == b.name())
                .collect())
        };
        let got = alternate(Bench::Fib, &p, &mut ready, 3, &mut problems, &mut fake);
        assert_eq!(
            calls,
            ["troupe", "actix", "erlang", "troupe", "actix", "erlang", "troupe", "erlang"],
            "rep 1 on each runtime, then rep 2, ...; actix failed its second and ran no third"
        );
        let troupe: Vec<&Record> = got.iter().filter(|r| r.runtime == "troupe").collect();
        assert_eq!(troupe.len(), 1);
        assert_eq!(troupe[0].samples, vec![1.0, 4.0, 7.0], "troupe's own reps, in order");
        assert_eq!((troupe[0].value, troupe[0].params["reps"]), (4.0, 3));
        assert!(troupe[0].threads.is_some());
        assert!(got.iter().all(|r| r.runtime != "actix"), "a runtime that failed a rep has no line");
        assert_eq!(problems.len(), 1);
        assert_eq!(ready.len(), 3, "a failure (not a missing runtime) keeps actix for later benchmarks");
    }
}
