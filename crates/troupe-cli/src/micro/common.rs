//! What `troupe lab micro` and its `--scaling` set share: the parsed arguments, the record of a
//! run (`results.jsonl`, `run.json`), and the exit code of a troupe-micro error.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;

use serde_json::json;
use troupe_lab::machine::{self, Machine};

use crate::code;

/// The parsed `troupe lab micro` arguments.
pub(crate) struct MicroArgs {
    pub(crate) only: Option<Vec<String>>,
    pub(crate) runtimes: Vec<String>,
    pub(crate) json: bool,
    pub(crate) reps: Option<u32>,
    pub(crate) sets: Vec<String>,
    pub(crate) out: Option<PathBuf>,
    pub(crate) threads: Option<u32>,
    pub(crate) scaling: Option<Vec<u32>>,
}

/// The exit code of a troupe-micro error.
pub(super) fn micro_code(kind: &troupe_micro::ErrorKind) -> i32 {
    match kind {
        troupe_micro::ErrorKind::Usage => code::USAGE,
        troupe_micro::ErrorKind::Missing => code::TOOLCHAIN,
        _ => code::FAILED,
    }
}

/// Writes `results.jsonl` and `run.json` into `dir`.
pub(super) fn record(
    dir: &std::path::Path,
    lines: &[String],
    runtimes: &[String],
    started: &str,
    load: &machine::Load,
) -> std::io::Result<()> {
    let mut f = std::fs::File::create(dir.join("results.jsonl"))?;
    for l in lines {
        writeln!(f, "{l}")?;
    }
    let rts: Vec<String> = if runtimes.is_empty() {
        troupe_micro::DEFAULT_RUNTIMES.iter().map(|s| (*s).to_owned()).collect()
    } else {
        runtimes.to_vec()
    };
    let threads: BTreeMap<&str, serde_json::Value> = rts
        .iter()
        .filter_map(|rt| troupe_micro::threads(rt).map(|(n, rule)| (rt.as_str(), json!({"threads": n, "rule": rule}))))
        .collect();
    let commit = machine::build_commit();
    let run = json!({
        "command": std::env::args().collect::<Vec<_>>(),
        "started_at": started,
        "ended_at": machine::rfc3339(machine::now_unix_ms()),
        "machine": Machine::detect(),
        "load": load,
        "git_commit": commit.as_ref().map(|c| c.0.clone()),
        "git_dirty": commit.as_ref().map(|c| c.1),
        "troupe_version": env!("CARGO_PKG_VERSION"),
        "libraries": troupe_micro::LIBRARY_VERSIONS,
        "allocator": "mimalloc (the troupe binary's global allocator)",
        "threads": threads,
    });
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&run).unwrap_or_default() + "\n")
}
