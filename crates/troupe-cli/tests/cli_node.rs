//! `troupe node` and the distribution benchmarks through the CLI: `troupe lab micro --only
//! detection` starts this binary as `troupe node` in a second OS process, kills it and waits
//! for the remote monitor's Down; a bad node config is refused with the usage exit code.

use std::process::Command;

mod support;
use support::lab::{text, troupe};

#[test]
fn detection_runs_through_troupe_node_processes() {
    let out =
        troupe().args(["lab", "micro", "--only", "detection", "--reps", "1", "--json"]).output().expect("troupe runs");
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    for metric in ["sigkill_to_down_ms", "sigstop_to_down_ms"] {
        let row = rows.iter().find(|r| r["metric"] == metric).unwrap_or_else(|| panic!("no {metric} in {text}"));
        let v = row["value"].as_f64().unwrap();
        assert!(v > 0.0 && v < 10_000.0, "{metric} = {v}");
    }
}

#[test]
fn a_bad_node_config_is_a_usage_error_naming_the_problem() {
    let dir = std::env::temp_dir().join(format!("troupe-cli-node-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "name = \"a\"\nlisten = \"not an address\"\n").unwrap();
    let out = troupe().args(["node", "--config"]).arg(&cfg).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
    assert!(!out.stderr.is_empty());
}

/// `troupe node --dev-certs DIR --names a,b` writes a CA and a certificate per node (keys
/// readable by the owner only) and prints `[tls]` sections a node starts with.
#[test]
fn dev_certs_are_written_and_a_node_starts_with_them() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("troupe-cli-certs-{}", std::process::id()));
    let out = troupe().args(["node", "--dev-certs"]).arg(&dir).args(["--names", "a,b"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(text.matches("[tls]").count(), 2, "{text}");
    for f in ["ca.crt", "ca.key", "a.crt", "a.key", "b.crt", "b.key"] {
        let meta = std::fs::metadata(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        if f.ends_with(".key") {
            assert_eq!(meta.permissions().mode() & 0o077, 0, "{f} is readable by others");
        }
    }
    let section = &text[text.find("[tls]").unwrap()..];
    let section = &section[..section.find("\n\n").unwrap_or(section.len())];
    let cfg = dir.join("a.toml");
    std::fs::write(&cfg, format!("name = \"a\"\nsecret = \"s\"\nlisten = \"127.0.0.1:0\"\n{section}\n")).unwrap();
    let mut node = troupe()
        .args(["node", "--config"])
        .arg(&cfg)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(node.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let _ = node.stdin.take().unwrap().write_all(b"quit\n");
    let status = node.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(first.starts_with("listening on 127.0.0.1:"), "{first}");
    assert!(status.success());
}

/// Regression (issue 18, item 4): `troupe node` ignored SIGTERM and SIGINT while its stdin was
/// an open pipe. It must exit 0, promptly, on either.
#[test]
fn troupe_node_stops_on_sigterm_and_sigint_with_stdin_an_open_pipe() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("troupe-cli-sig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("n.toml");
    std::fs::write(&cfg, "name = \"n\"\nsecret = \"s\"\nlisten = \"127.0.0.1:0\"\n").unwrap();
    for sig in ["TERM", "INT"] {
        let mut node = troupe()
            .args(["node", "--config"])
            .arg(&cfg)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let _stdin = node.stdin.take(); // kept open for the whole test
        let mut first = String::new();
        BufReader::new(node.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.starts_with("listening on "), "{first}");
        let t0 = Instant::now();
        let sent = Command::new("kill").arg(format!("-{sig}")).arg(node.id().to_string()).status().unwrap();
        assert!(sent.success(), "kill -{sig}");
        let status = loop {
            if let Some(st) = node.try_wait().unwrap() {
                break Some(st);
            }
            if t0.elapsed() > Duration::from_secs(10) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let Some(status) = status else {
            let _ = node.kill();
            let _ = node.wait();
            panic!("signal {sig} ignored for 10 s");
        };
        assert_eq!(status.code(), Some(0), "signal {sig}");
        assert!(t0.elapsed() < Duration::from_secs(5), "signal {sig}: exit took {:?}", t0.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `troupe` binary runs with transparent huge pages off (main.rs, `disable_thp`), as the
/// kernel reports for the process (`THP_enabled` in /proc/PID/status, Linux 5.0 on); with
/// `MIMALLOC_ALLOW_THP` set it leaves them as they were.
#[test]
#[cfg(target_os = "linux")]
fn the_troupe_binary_runs_with_transparent_huge_pages_off_unless_told_otherwise() {
    use std::io::{BufRead, BufReader};
    let thp_of = |status_file: String| {
        let status = std::fs::read_to_string(status_file).unwrap();
        status.lines().find_map(|l| l.strip_prefix("THP_enabled:")).map(|v| v.trim().to_owned())
    };
    let dir = std::env::temp_dir().join(format!("troupe-cli-thp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("n.toml");
    std::fs::write(&cfg, "name = \"n\"\nsecret = \"s\"\nlisten = \"127.0.0.1:0\"\n").unwrap();
    let mut seen = Vec::new();
    for allow in [None, Some("1")] {
        let mut cmd = troupe();
        cmd.args(["node", "--config"])
            .arg(&cfg)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        match allow {
            Some(v) => cmd.env("MIMALLOC_ALLOW_THP", v),
            None => cmd.env_remove("MIMALLOC_ALLOW_THP"),
        };
        let mut node = cmd.spawn().unwrap();
        let _stdin = node.stdin.take();
        let mut first = String::new();
        BufReader::new(node.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.starts_with("listening on "), "{first}");
        // Read while the node runs: it set its policy before it listened.
        seen.push(thp_of(format!("/proc/{}/status", node.id())));
        let _ = node.kill();
        let _ = node.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
    let Some(off) = seen[0].clone() else {
        eprintln!("this kernel does not report THP_enabled; nothing to check");
        return;
    };
    assert_eq!(off, "0", "troupe runs with transparent huge pages allowed");
    // This test's own process inherits whatever its parent set; `MIMALLOC_ALLOW_THP` leaves that.
    let inherited = thp_of("/proc/self/status".into());
    assert_eq!(seen[1], inherited, "MIMALLOC_ALLOW_THP set, yet troupe changed the policy");
}

/// Regression (issue 18, item 6): `troupe node` exited 2 for a missing config file where
/// `troupe lab` exits 4 for file problems; the OS error is printed once.
#[test]
fn a_missing_node_config_file_is_a_file_error_like_lab() {
    let missing = std::env::temp_dir().join(format!("troupe-cli-missing-{}.toml", std::process::id()));
    let out = troupe().args(["node", "--config"]).arg(&missing).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr: {err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
}

/// Regression (issue 18, item 6): `--dev-certs DIR --names ../evil` wrote outside DIR.
#[test]
fn dev_certs_names_that_are_not_plain_file_names_are_refused() {
    let base = std::env::temp_dir().join(format!("troupe-cli-evil-{}", std::process::id()));
    let dir = base.join("certs");
    for bad in ["../evil", "/tmp/evil", "..", "a/b"] {
        let out = troupe().args(["node", "--dev-certs"]).arg(&dir).args(["--names", bad]).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("plain file name"), "{bad:?}: {err}");
    }
    assert!(!base.join("evil.key").exists() && !base.join("evil.crt").exists());
    assert!(!dir.exists(), "nothing is written when a name is refused");
    let _ = std::fs::remove_dir_all(&base);
}

/// Regression (issue 36): `--dev-certs` replaced an existing `ca.key` silently, followed a
/// symlink planted in its folder, and accepted `--names a,a`.
#[test]
fn dev_certs_keep_existing_keys_unless_forced_refuse_symlinks_and_duplicate_names() {
    let dir = std::env::temp_dir().join(format!("troupe-cli-force-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |extra: &[&str], names: &str| {
        troupe().args(["node", "--dev-certs"]).arg(&dir).args(["--names", names]).args(extra).output().unwrap()
    };
    let out = run(&[], "a,a");
    assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("twice"));
    assert!(run(&[], "a").status.success());
    let key = std::fs::read(dir.join("ca.key")).unwrap();
    let out = run(&[], "a");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr: {err}");
    assert!(err.contains("already exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(dir.join("ca.key")).unwrap(), key, "kept");
    assert!(run(&["--force"], "a").status.success());
    assert_ne!(std::fs::read(dir.join("ca.key")).unwrap(), key, "replaced with --force");
    std::fs::remove_file(dir.join("a.key")).unwrap();
    std::os::unix::fs::symlink(dir.join("planted"), dir.join("a.key")).unwrap();
    let out = run(&["--force"], "a");
    assert_eq!(out.status.code(), Some(4), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("symbolic link"));
    assert!(!dir.join("planted").exists(), "written through the link");
    let _ = std::fs::remove_dir_all(&dir);
}
