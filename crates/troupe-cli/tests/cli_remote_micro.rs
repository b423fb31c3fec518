//! `troupe lab micro --runtimes troupe,erlang --only remote-pingpong,remote-latency` through the
//! real binary, with the real Erlang peer (two Erlang nodes over distribution on loopback) at
//! small sizes: both runtimes' rows come out in the micro JSON format, the table ends with
//! Troupe's ratio, benchmarks Erlang lacks are skipped with a message, and no Erlang node or
//! epmd of the run is left behind.

use std::process::Command;

mod support;
use support::lab::{assert_success, erlang_or_skip, in_repo, text};

#[test]
fn remote_benchmarks_run_on_troupe_and_on_erlang_distribution() {
    if !erlang_or_skip("remote_benchmarks_run_on_troupe_and_on_erlang_distribution") {
        return;
    }
    let small = ["--reps", "1", "--set", "messages=20000", "--set", "samples=100"];
    let mut args = vec![
        "lab",
        "micro",
        "--runtimes",
        "troupe,erlang",
        "--only",
        "remote-pingpong,remote-latency,detection",
        "--json",
    ];
    args.extend(small);
    let o = in_repo(&args);
    assert_success(&o);
    let stderr = text(&o.stderr);
    let rows: Vec<serde_json::Value> =
        text(&o.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    for rt in ["troupe", "erlang"] {
        let of = |bench: &str, metric: &str| {
            rows.iter()
                .filter(|r| r["runtime"] == rt && r["bench"] == bench && r["metric"] == metric)
                .filter(|r| r["params"]["tls"] != true)
                .count()
        };
        assert_eq!(of("remote-pingpong", "msgs_per_s"), 2, "{rt}: one plaintext row per shape");
        for (shape, w) in [("pipelined", 1000), ("lock-step", 1)] {
            let r = rows
                .iter()
                .find(|r| r["runtime"] == rt && r["bench"] == "remote-pingpong" && r["params"]["shape"] == shape)
                .unwrap_or_else(|| panic!("{rt}: no {shape} row"));
            assert_eq!((r["params"]["in_flight"].as_u64(), r["params"]["window"].as_u64()), (Some(w), Some(w)), "{r}");
        }
        assert!(of("remote-latency", "rtt_p50_us") >= 2, "{rt}: idle and busy-poll");
        for r in rows.iter().filter(|r| r["runtime"] == rt) {
            assert!(r["value"].as_f64().is_some_and(|v| v > 0.0), "{r}");
        }
    }
    let tls_rows = rows.iter().filter(|r| r["runtime"] == "troupe" && r["params"]["tls"] == true).count();
    assert!(tls_rows >= 2, "Troupe also measures over TLS");
    // Troupe and Erlang take turns run by run, per shape.
    let turns: Vec<&str> = stderr.lines().filter(|l| l.starts_with("micro: remote-pingpong in_flight=")).collect();
    assert_eq!(turns.len(), 4, "{stderr}");
    assert!(turns[0].ends_with("on troupe ...") && turns[1].ends_with("on erlang ..."), "{turns:?}");
    let erlang_pp = rows.iter().find(|r| r["runtime"] == "erlang" && r["bench"] == "remote-pingpong").unwrap();
    assert_eq!(erlang_pp["params"]["messages"], 20000, "--set reaches the peer");
    assert!(rows.iter().all(|r| r["bench"] != "detection" || r["runtime"] == "troupe"));
    assert!(stderr.contains("detection runs on troupe only"), "{stderr}");
    assert!(!on_path_process("far@127.0.0.1"), "an Erlang far node outlived the run");

    // The table form ends with the ratios.
    let mut args = vec!["lab", "micro", "--runtimes", "troupe,erlang", "--only", "remote-pingpong"];
    args.extend(small);
    let o = in_repo(&args);
    let stdout = text(&o.stdout);
    assert_success(&o);
    assert!(stdout.contains("troupe vs erlang   remote-pingpong msgs_per_s (pipelined, in_flight=1000):"), "{stdout}");
    assert!(stdout.contains("troupe vs erlang   remote-pingpong msgs_per_s (lock-step, in_flight=1):"), "{stdout}");
}

fn on_path_process(pattern: &str) -> bool {
    Command::new("pgrep").args(["-f", pattern]).output().is_ok_and(|o| o.status.success())
}
