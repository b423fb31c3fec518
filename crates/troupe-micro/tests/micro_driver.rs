//! The driver against a fake project (TROUPE_HOME): a peer whose build says its toolchain is
//! missing, a peer with no program at all, a peer whose run fails, and a working peer. The
//! missing ones are reported by name (with the install command), the failing one as failed,
//! and the working peer and the in-process runtime still produce their lines.
//!
//! One test function, because it sets TROUPE_HOME for the whole process.

use std::fs;
use std::path::Path;

use troupe_micro::{ErrorKind, MicroOptions};

fn script(root: &Path, rt: &str, name: &str, body: &str) {
    let dir = root.join("peers").join(rt).join("micro");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(name), format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
}

#[test]
fn missing_and_failing_peers_are_reported_by_name_and_the_others_run() {
    let root = std::env::temp_dir().join(format!("troupe-micro-driver-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("peers")).unwrap();
    fs::write(root.join("Cargo.toml"), "[workspace]\n").unwrap();
    // erlang: toolchain missing (build exits 3 with the contract's message).
    script(
        &root,
        "erlang",
        "build",
        "echo 'missing toolchain: erl; install it with: bash scripts/install-erlang.sh' >&2; exit 3",
    );
    script(&root, "erlang", "run", "exit 0");
    // caf: no peer program at all.
    // protoactor: builds, but its run fails.
    script(&root, "protoactor", "build", "echo building >&1; exit 0");
    script(&root, "protoactor", "run", "echo 'boom' >&2; exit 1");
    // akka: a working peer that echoes its arguments back in a result line.
    script(&root, "akka", "build", "exit 0");
    script(
        &root,
        "akka",
        "run",
        r#"b="$1"; shift; n=0; reps=0
for a in "$@"; do case "$a" in n=*) n="${a#n=}";; reps=*) reps="${a#reps=}";; esac; done
echo "log line" >&2
echo "$b reps=$reps" >> "$TROUPE_HOME/akka-calls"
k=$(wc -l < "$TROUPE_HOME/akka-calls")
echo "{\"bench\":\"$b\",\"runtime\":\"akka\",\"metric\":\"time_ms\",\"value\":$k.5,\"unit\":\"ms\",\"params\":{\"n\":$n,\"reps\":$reps}}""#,
    );
    std::env::set_var("TROUPE_HOME", &root);

    let opts = MicroOptions {
        only: Some(vec!["pingpong".into()]),
        runtimes: ["erlang", "caf", "protoactor", "akka", "kameo"].map(String::from).to_vec(),
        json: true,
        reps: Some(1),
        params: [("n".to_string(), 100)].into_iter().collect(),
        child_args: None,
        rep_probe: None,
    };
    let mut out = Vec::new();
    let err = troupe_micro::run(&opts, &mut out).expect_err("missing and failing peers are errors");
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).expect("only JSON lines on out")).collect();
    let runtimes: Vec<&str> = lines.iter().map(|v| v["runtime"].as_str().unwrap()).collect();
    assert_eq!(runtimes, vec!["akka", "kameo", "kameo"], "{text}");
    assert_eq!(lines[0]["params"]["n"], 100);
    assert_eq!(lines[0]["params"]["reps"], 1);

    assert_eq!(err.kind, ErrorKind::Failed, "a failed peer run makes the whole run failed");
    let m = &err.message;
    assert!(m.contains("erlang: missing toolchain: erl; install it with: bash scripts/install-erlang.sh"), "{m}");
    assert!(m.contains("caf: no peer program"), "{m}");
    assert!(m.contains("protoactor pingpong:") && m.contains("exit code 1"), "{m}");
    assert!(!m.contains("akka") && !m.contains("kameo"), "{m}");

    // Only missing runtimes: the error is Missing, and the table still shows the others.
    let opts = MicroOptions { runtimes: ["caf", "kameo"].map(String::from).to_vec(), json: false, ..opts };
    let mut out = Vec::new();
    let err = troupe_micro::run(&opts, &mut out).expect_err("caf is missing");
    assert_eq!(err.kind, ErrorKind::Missing);
    let table = String::from_utf8(out).unwrap();
    assert!(table.contains("troupe vs best peer"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("pingpong") && l.contains("time_ms")), "{table}");
    assert!(table.contains("caf: no peer program"), "{table}");

    // Three repetitions: the peer is run once per repetition (reps=1), taking turns with kameo,
    // and its line carries the median, min, max and every repetition's value.
    let _ = fs::remove_file(root.join("akka-calls"));
    let opts =
        MicroOptions { runtimes: ["akka", "kameo"].map(String::from).to_vec(), json: true, reps: Some(3), ..opts };
    let mut out = Vec::new();
    troupe_micro::run(&opts, &mut out).expect("akka and kameo run");
    let calls = fs::read_to_string(root.join("akka-calls")).unwrap();
    assert_eq!(calls, "pingpong reps=1\n".repeat(3), "one peer run per repetition");
    let text = String::from_utf8(out).unwrap();
    let akka: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["runtime"] == "akka")
        .unwrap();
    assert_eq!(akka["params"]["reps"], 3, "{akka}");
    assert_eq!(akka["samples"], serde_json::json!([1.5, 2.5, 3.5]), "{akka}");
    assert_eq!((akka["value"].as_f64(), akka["min"].as_f64(), akka["max"].as_f64()), (Some(2.5), Some(1.5), Some(3.5)));
    assert_eq!(akka["spread_pct"], 80.0, "{akka}");
    assert!(akka["threads"].as_u64().is_some_and(|t| t >= 8), "akka's dispatcher: {akka}");
    let kameo = text.lines().find(|l| l.contains("\"kameo\"") && l.contains("time_ms")).unwrap();
    assert!(kameo.contains("\"reps\":3"), "{kameo}");

    // Unknown names are usage errors, before anything runs.
    let bad = MicroOptions { runtimes: vec!["nosuch".into()], ..MicroOptions::default() };
    assert_eq!(troupe_micro::run(&bad, &mut Vec::new()).unwrap_err().kind, ErrorKind::Usage);
    let bad = MicroOptions { only: Some(vec!["nosuch".into()]), ..MicroOptions::default() };
    assert_eq!(troupe_micro::run(&bad, &mut Vec::new()).unwrap_err().kind, ErrorKind::Usage);

    let _ = fs::remove_dir_all(&root);
}
