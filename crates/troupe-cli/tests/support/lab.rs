//! The harness of the end-to-end CLI tests: the `troupe` binary with an inherited TROUPE_HOME
//! removed, a runner, readers for what a run folder holds (manifest.json, summary.json, JSON
//! lines, CSV), assertions whose messages print the command's stdout and stderr, fake projects
//! with peer programs, process checks, waiting for a condition, and the Erlang skip.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `troupe` binary cargo built for these tests.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_troupe");

/// The repository root (holds `peers/` and the workspace's Cargo.toml).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// `troupe` in the package's folder without an inherited TROUPE_HOME: the project root is the
/// one above its current directory (the package's, unless a test sets another) or the
/// TROUPE_HOME a test sets.
pub(crate) fn troupe() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("TROUPE_HOME").current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Runs `troupe ARGS` in `cwd` to its end.
pub(crate) fn output(args: &[&str], cwd: &Path) -> Output {
    troupe().args(args).current_dir(cwd).output().expect("troupe runs")
}

/// Runs `troupe ARGS` in the repository root to its end (where `lab micro` finds `peers/`).
pub(crate) fn in_repo(args: &[&str]) -> Output {
    output(args, &repo_root())
}

/// `--set KV` for each of `kv`: `sets(&["a=1", "b=2"])` is `--set a=1 --set b=2`.
pub(crate) fn sets<'a>(kv: &[&'a str]) -> Vec<&'a str> {
    kv.iter().flat_map(|s| ["--set", s]).collect()
}

/// A temporary lab folder (removed when dropped) and a run's `--out` in it, not yet made.
pub(crate) struct TempLab {
    tmp: tempfile::TempDir,
    /// `<the folder>/<name>`.
    pub(crate) out: PathBuf,
}

impl TempLab {
    /// A fresh folder; `out` is `name` in it.
    pub(crate) fn new(name: &str) -> TempLab {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join(name);
        TempLab { tmp, out }
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Runs `troupe ARGS --out OUT MORE...` (in the package's folder) to its end.
    pub(crate) fn run(&self, args: &[&str], more: &[&[&str]]) -> Output {
        self.troupe(args).args(more.concat()).output().expect("troupe runs")
    }

    /// `troupe ARGS --out OUT` (in the package's folder): add flags or environment, then run it.
    pub(crate) fn troupe(&self, args: &[&str]) -> Command {
        let mut c = troupe();
        c.args(args).arg("--out").arg(&self.out);
        c
    }
}

/// `troupe lab run WORKLOAD --set KV... --out` in a fresh folder called `name`, with the extra
/// environment `env` (the nemesis tests' planted bugs): the output, the run's `summary.json`
/// and the folder.
pub(crate) fn run_with_env(workload: &str, name: &str, kv: &[&str], env: &[(&str, &str)]) -> (Output, Value, TempLab) {
    let lab = TempLab::new(name);
    let mut c = lab.troupe(&["lab", "run", workload]);
    c.args(sets(kv));
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("troupe runs");
    let s = json(&lab.out.join("summary.json"));
    (o, s, lab)
}

/// Bytes as text (lossy).
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A command's stdout and stderr, for an assertion's message.
pub(crate) fn ctx(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", text(&o.stdout), text(&o.stderr))
}

/// Asserts that the command exited with `code`; the message prints its stdout and stderr.
#[track_caller]
pub(crate) fn assert_code(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}", ctx(o));
}

/// Asserts that the command succeeded (exit 0); the message prints its stdout and stderr.
#[track_caller]
pub(crate) fn assert_success(o: &Output) {
    assert_code(o, 0);
}

/// Asserts that the command's stdout contains `needle`; the message prints its stdout and stderr.
#[track_caller]
pub(crate) fn assert_stdout_has(o: &Output, needle: &str) {
    assert!(text(&o.stdout).contains(needle), "{needle:?} not in stdout: {}", ctx(o));
}

/// Asserts that the command's stderr contains `needle`; the message prints it.
#[track_caller]
pub(crate) fn assert_stderr_has(o: &Output, needle: &str) {
    assert!(text(&o.stderr).contains(needle), "{needle:?} not in stderr: {}", text(&o.stderr));
}

/// Asserts a usage error: exit 2, and stderr names each of `needles`.
#[track_caller]
pub(crate) fn assert_usage_error(o: &Output, needles: &[&str]) {
    assert_code(o, 2);
    for needle in needles {
        assert_stderr_has(o, needle);
    }
}

/// Asserts that the run into `out` failed (its manifest says so) and that the program's
/// stderr.txt there names each of `needles`, e.g. a config key a peer cannot run.
#[track_caller]
pub(crate) fn assert_run_failed_naming(o: &Output, out: &Path, needles: &[&str]) {
    assert_eq!(manifest(out)["status"], "failed", "{}", ctx(o));
    let err = read(&out.join("stderr.txt"));
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in stderr.txt: {err}");
    }
}

/// A file's text; panics naming the file.
#[track_caller]
pub(crate) fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A JSON file; panics naming the file.
#[track_caller]
pub(crate) fn json(p: &Path) -> Value {
    serde_json::from_str(&read(p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A run folder's manifest.json.
#[track_caller]
pub(crate) fn manifest(dir: &Path) -> Value {
    json(&dir.join("manifest.json"))
}

/// A run folder's summary.json.
#[track_caller]
pub(crate) fn summary(dir: &Path) -> Value {
    json(&dir.join("summary.json"))
}

/// The JSON lines of a file (events.jsonl, schedule.jsonl, ...): none when it is missing, a
/// line that is not JSON (one being written) skipped.
pub(crate) fn events(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The JSON lines of a file, every line parsed (a line that is not JSON fails).
#[track_caller]
pub(crate) fn json_lines(p: &Path) -> Vec<Value> {
    read(p).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", p.display()))).collect()
}

/// A CSV file's rows as header -> value maps.
#[track_caller]
pub(crate) fn csv_rows(p: &Path) -> Vec<BTreeMap<String, String>> {
    let t = read(p);
    let mut lines = t.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines.map(|l| header.iter().map(|h| h.to_string()).zip(l.split(',').map(str::to_string)).collect()).collect()
}

/// An executable script `path` with `body` under `#!/bin/bash`.
pub(crate) fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A project root (Cargo.toml) with a fake peer per (runtime, build script, run script), each
/// a program of `workload`: `peers/<runtime>/<workload>/{build,run}`.
pub(crate) fn fake_project(root: &Path, workload: &str, peers: &[(&str, &str, &str)]) {
    std::fs::write(root.join("Cargo.toml"), "[workspace]\n").unwrap();
    for (rt, build, runs) in peers {
        let d = root.join("peers").join(rt).join(workload);
        std::fs::create_dir_all(&d).unwrap();
        script(&d.join("build"), build);
        script(&d.join("run"), runs);
    }
}

/// Whether process `pid` still exists (a zombie counts as gone).
pub(crate) fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Polls `cond` every 10 ms until it holds (true) or `limit` passed (false, after a last look).
pub(crate) fn wait(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `cond` until it holds; panics naming `what` after `limit`.
#[track_caller]
pub(crate) fn wait_until(what: &str, limit: Duration, cond: impl FnMut() -> bool) {
    assert!(wait(limit, cond), "timed out after {limit:?} waiting for {what}");
}

/// Polls `f` until it gives a value; panics naming `what` after `limit`.
#[track_caller]
pub(crate) fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let mut got = None;
    let done = wait(limit, || {
        got = f();
        got.is_some()
    });
    assert!(done, "timed out after {limit:?} waiting for {what}");
    got.unwrap()
}

/// Whether `program` is a file in a folder of PATH.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// True when Erlang/OTP (erl, erlc) is on PATH; else fails if TROUPE_TEST_REQUIRE_ERLANG is
/// set, and otherwise says `test` is SKIPPED on the process's stderr (past the test harness's
/// output capture) and returns false.
pub(crate) fn erlang_or_skip(test: &str) -> bool {
    if on_path("erl") && on_path("erlc") {
        return true;
    }
    let msg = "Erlang/OTP (erl, erlc) is not on PATH; install it with: bash scripts/install-erlang.sh";
    assert!(std::env::var_os("TROUPE_TEST_REQUIRE_ERLANG").is_none(), "TROUPE_TEST_REQUIRE_ERLANG is set: {msg}");
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {msg} ***\n");
    false
}
