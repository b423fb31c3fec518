//! `troupe node` and the distribution benchmarks through the CLI: `troupe lab micro --only
//! detection` starts this binary as `troupe node` in a second OS process, kills it and waits
//! for the remote monitor's Down; a bad node config is refused with the usage exit code.

use std::process::Command;

const TROUPE: &str = env!("CARGO_BIN_EXE_troupe");

#[test]
fn detection_runs_through_troupe_node_processes() {
    let out = Command::new(TROUPE)
        .args(["lab", "micro", "--only", "detection", "--reps", "1", "--json"])
        .output()
        .expect("troupe runs");
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
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
    let out = Command::new(TROUPE).args(["node", "--config"]).arg(&cfg).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!out.stderr.is_empty());
}
