//! Getting a runtime ready to run a workload: building a peer's program with its own tool
//! (`peers/<rt>/<workload>/build`, cached by the script itself), finding out the runtime's
//! version, and collecting the settings it runs with, so every report states what was measured.
//!
//! Rules:
//! 1. A build script exiting 3 is a missing toolchain: [`ErrorKind::MissingToolchain`] carrying
//!    the script's message, which names the install command. Any other failure is a build
//!    failure; its output stays in the log folder.
//! 2. The version comes, in order of preference, from the peer's `run_started {version}` (the
//!    run replaces it then), from an executable `peers/<rt>/version` printing one line, or from
//!    a built-in probe of the toolchain (Erlang/OTP release, the Elixir and OTP versions, `java -version`
//!    plus the Akka version in `peers/akka/pom.xml`, `go version`); else `unknown`.
//! 3. Settings: the comment header of the peer's `run` script (where peers document VM flags),
//!    and the values of environment variables the run scripts read (`TROUPE_AKKA_JAVA_OPTS`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::child::{self, ChildSpec, Ending, Stop};
use crate::error::{Error, ErrorKind, Result};

/// How long a build may take before it counts as hung.
pub const BUILD_DEADLINE: Duration = Duration::from_secs(1800);
/// How long a version probe may take.
const PROBE_DEADLINE: Duration = Duration::from_secs(30);
/// Environment variables peers' run scripts read, recorded when set.
const SETTING_VARS: &[&str] = &["TROUPE_AKKA_JAVA_OPTS", "ERL_FLAGS", "ERL_AFLAGS", "ERL_ZFLAGS", "JAVA_TOOL_OPTIONS"];

/// A runtime ready to run: the program to start and what to say about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedPeer {
    /// The `run` script (peers) or empty for Troupe (the lab starts itself).
    pub program: PathBuf,
    /// The runtime's version (rule 2).
    pub version: String,
    /// Settings the runtime runs with (rule 3), one line each.
    pub settings: Vec<String>,
}

/// The folder of a peer's workload program.
pub fn workload_dir(root: &Path, runtime: &str, workload: &str) -> PathBuf {
    root.join("peers").join(runtime).join(workload)
}

/// Whether `runtime` has a program for `workload` under `root`.
pub fn has_program(root: &Path, runtime: &str, workload: &str) -> bool {
    let d = workload_dir(root, runtime, workload);
    d.join("build").is_file() && d.join("run").is_file()
}

/// Builds a peer's program (rule 1); build output goes to `log_dir/build-{stdout,stderr}.txt`.
pub fn build(root: &Path, runtime: &str, workload: &str, log_dir: &Path, stop: &Stop) -> Result<PathBuf> {
    let wdir = workload_dir(root, runtime, workload);
    if !has_program(root, runtime, workload) {
        return Err(Error::new(ErrorKind::Unsupported(format!(
            "runtime {runtime:?} has no {workload} program ({}/build and run are missing)",
            wdir.display()
        ))));
    }
    let stderr = log_dir.join("build-stderr.txt");
    let spec = ChildSpec {
        program: wdir.join("build"),
        args: vec![],
        env: vec![],
        cwd: Some(wdir.clone()),
        stdout: log_dir.join("build-stdout.txt"),
        stderr: stderr.clone(),
    };
    match child::run(&spec, BUILD_DEADLINE, stop)? {
        Ending::Exited(s) if s.success() => Ok(wdir.join("run")),
        Ending::Exited(s) if s.code() == Some(3) => {
            let msg = std::fs::read_to_string(&stderr).unwrap_or_default();
            Err(Error::new(ErrorKind::MissingToolchain { runtime: runtime.into(), message: msg.trim().to_string() }))
        }
        other => Err(Error::other(format!(
            "building the {runtime} {workload} program failed ({}); see {}",
            other.failure().unwrap_or_default(),
            stderr.display()
        ))),
    }
}

/// Runs a probe command; its first non-empty output line (stdout, then stderr), if it exits 0.
fn probe(program: &str, args: &[&str], log_dir: &Path) -> Option<String> {
    let (out, err) = (log_dir.join(".probe-stdout.txt"), log_dir.join(".probe-stderr.txt"));
    let spec = ChildSpec {
        program: program.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        cwd: None,
        stdout: out.clone(),
        stderr: err.clone(),
    };
    let ended = child::run(&spec, PROBE_DEADLINE, &Stop::new()).ok();
    let text = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let (o, e) = (text(&out), text(&err));
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&err);
    match ended {
        Some(Ending::Exited(s)) if s.success() => {
            o.lines().chain(e.lines()).map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
        }
        _ => None,
    }
}

/// The text between `<tag>` and `</tag>` in an XML file, if present.
fn xml_value(path: &Path, tag: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find('<')? + start;
    Some(text[start..end].trim().to_string())
}

/// The version of a peer runtime (rule 2, without the `run_started` step).
pub fn version(root: &Path, runtime: &str, log_dir: &Path) -> String {
    let hook = root.join("peers").join(runtime).join("version");
    if hook.is_file() {
        if let Some(v) = probe(&hook.display().to_string(), &[], log_dir) {
            return v;
        }
    }
    let found = match runtime {
        "erlang" => probe(
            "erl",
            &[
                "-noshell",
                "-eval",
                "io:format(\"Erlang/OTP ~s, erts ~s~n\", \
                 [erlang:system_info(otp_release), erlang:system_info(version)]), halt().",
            ],
            log_dir,
        ),
        "elixir" => probe(
            "elixir",
            &["-e", "IO.puts(\"Elixir #{System.version()} on Erlang/OTP #{:erlang.system_info(:otp_release)}\")"],
            log_dir,
        ),
        "akka" => probe("java", &["-version"], log_dir).map(|java| {
            match xml_value(&root.join("peers/akka/pom.xml"), "akka.version") {
                Some(akka) => format!("Akka {akka} on {java}"),
                None => java,
            }
        }),
        "protoactor" => probe("go", &["version"], log_dir),
        _ => None,
    };
    found.unwrap_or_else(|| "unknown".into())
}

/// The settings of a peer's run (rule 3).
pub fn settings(root: &Path, runtime: &str, workload: &str) -> Vec<String> {
    let run = workload_dir(root, runtime, workload).join("run");
    let header: Vec<String> = std::fs::read_to_string(&run)
        .unwrap_or_default()
        .lines()
        .skip_while(|l| l.starts_with("#!"))
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = Vec::new();
    if !header.is_empty() {
        out.push(format!("run script: {}", header.join(" ")));
    }
    out.extend(env_settings());
    out
}

/// The setting variables that are set in this environment.
pub fn env_settings() -> Vec<String> {
    SETTING_VARS.iter().filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}"))).collect()
}

/// The settings of the Troupe SUB.
pub fn troupe_settings() -> Vec<String> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    vec![format!(
        "tokio multi-thread runtime, {cores} worker threads (one per core), default settings; \
         built with the {} profile",
        if cfg!(debug_assertions) { "debug (unoptimised)" } else { "release" }
    )]
}

/// Builds a peer and gathers its version and settings (rules 1-3).
pub fn prepare(root: &Path, runtime: &str, workload: &str, log_dir: &Path, stop: &Stop) -> Result<PreparedPeer> {
    let program = build(root, runtime, workload, log_dir, stop)?;
    Ok(PreparedPeer { program, version: version(root, runtime, log_dir), settings: settings(root, runtime, workload) })
}
