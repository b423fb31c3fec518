//! The child runner: a crashing child's status and stderr are kept, a hung child is killed at
//! its deadline together with everything in its process group, and a stop request interrupts.

use std::path::Path;
use std::time::{Duration, Instant};

use troupe_lab::child::{self, ChildSpec, Ending, Stop};

fn sh(dir: &Path, script: &str) -> ChildSpec {
    ChildSpec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("MARK".into(), dir.join("mark").display().to_string())],
        cwd: Some(dir.to_path_buf()),
        stdout: dir.join("stdout.txt"),
        stderr: dir.join("stderr.txt"),
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.rsplit(')').next().map(|r| r.trim_start().starts_with('Z')).unwrap_or(true),
    }
}

#[test]
fn a_crash_keeps_status_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh(dir.path(), "echo 'it broke' >&2; exit 7");
    let end = child::run(&spec, Duration::from_secs(30), &Stop::new()).unwrap();
    assert!(matches!(end, Ending::Exited(s) if s.code() == Some(7)));
    assert!(end.failure().unwrap().contains("status 7"));
    assert_eq!(std::fs::read_to_string(dir.path().join("stderr.txt")).unwrap(), "it broke\n");
}

#[test]
fn a_hung_child_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    // The grandchild stands for a VM a peer's run script started.
    let spec = sh(dir.path(), "sleep 300 & echo $! > \"$MARK\"; wait");
    let t0 = Instant::now();
    let end = child::run(&spec, Duration::from_millis(500), &Stop::new()).unwrap();
    assert!(matches!(end, Ending::TimedOut(_)), "{end:?}");
    assert!(t0.elapsed() < Duration::from_secs(15));
    let pid: u32 = std::fs::read_to_string(dir.path().join("mark")).unwrap().trim().parse().unwrap();
    wait_for("the grandchild to die", || gone(pid));
}

#[test]
fn stop_interrupts_a_running_child() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh(dir.path(), "echo up > \"$MARK\"; sleep 300");
    let stop = Stop::new();
    let s2 = stop.clone();
    let mark = dir.path().join("mark");
    let trigger = std::thread::spawn(move || {
        wait_for("the child to start", || mark.is_file());
        s2.trigger();
    });
    let end = child::run(&spec, Duration::from_secs(120), &stop).unwrap();
    trigger.join().unwrap();
    assert_eq!(end, Ending::Interrupted);
}
