//! `troupe lab conform` through the real binary: Troupe's chat on one short scenario (every
//! rule PASS or n/a, the table, conform.json, conform.md, exit 0); a peer whose program writes
//! no events (every rule FAILs with the run's reason, exit 6); and what is refused before
//! anything runs (a workload without rules, unknown workload, runtime and scenario, a used
//! folder).

mod support;
use support::lab::{assert_code, assert_success, assert_usage_error, fake_project, json, read, text, TempLab};

#[test]
fn troupes_chat_follows_its_contract_on_a_short_scenario() {
    let lab = TempLab::new("conform");
    let o = lab.run(&["lab", "conform", "chat", "--runtimes", "troupe", "--scenario", "kill-retry"], &[]);
    assert_success(&o);
    let stdout = text(&o.stdout);
    let rows: Vec<Vec<&str>> = stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.iter().any(|r| r[..] == ["rule", "troupe"]), "{stdout}");
    for (rule, want) in
        [("chat.1", "PASS"), ("chat.2", "n/a"), ("chat.5b", "PASS"), ("chat.6a", "PASS"), ("chat.7a", "PASS")]
    {
        assert!(rows.iter().any(|r| r[..] == [rule, want]), "{rule} {want} not in {stdout}");
    }
    assert!(stdout.contains("every rule passes or is n/a on every runtime"), "{stdout}");

    let j = json(&lab.out.join("conform.json"));
    assert_eq!((j["workload"].as_str(), j["passed"].as_bool()), (Some("chat"), Some(true)), "{j}");
    assert_eq!(j["runtimes"], serde_json::json!(["troupe"]));
    assert_eq!(j["scenarios"][0]["name"], "kill-retry");
    let rules = j["rules"].as_array().unwrap();
    assert!(rules.len() >= 16, "{j}");
    let r1 = rules.iter().find(|r| r["id"] == "chat.1").unwrap();
    assert_eq!(r1["runtimes"]["troupe"]["verdict"], "pass", "{r1}");
    assert_eq!(r1["runtimes"]["troupe"]["scenarios"]["kill-retry"]["verdict"], "pass", "{r1}");
    let r2 = rules.iter().find(|r| r["id"] == "chat.2").unwrap();
    assert_eq!(r2["runtimes"]["troupe"]["why"], "not observable from events", "{r2}");
    assert_eq!(j["runs"][0]["dir"], "kill-retry/troupe");
    assert_eq!(j["runs"][0]["status"], "ok");
    // Each run is an ordinary run folder.
    assert_eq!(json(&lab.out.join("kill-retry/troupe/manifest.json"))["status"], "ok");
    assert!(read(&lab.out.join("conform.md")).contains("| chat.1 | PASS |"));

    // The folder is not reused.
    let again = lab.run(&["lab", "conform", "chat", "--runtimes", "troupe", "--scenario", "kill-retry"], &[]);
    assert_code(&again, 4);
    assert!(text(&again.stderr).contains("choose another --out"), "{}", text(&again.stderr));
}

#[test]
fn a_runtime_whose_runs_fail_fails_every_rule_and_the_check_exits_6() {
    let lab = TempLab::new("conform");
    let root = lab.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    fake_project(&root, "chat", &[("mute", "exit 0", "echo 'mute: no events today' >&2; exit 1")]);
    let o = lab
        .troupe(&["lab", "conform", "chat", "--runtimes", "mute", "--scenario", "kill-retry"])
        .env("TROUPE_HOME", &root)
        .output()
        .unwrap();
    assert_code(&o, 6);
    let stdout = text(&o.stdout);
    assert!(stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["chat.1", "FAIL"]), "{stdout}");
    assert!(stdout.contains("mute chat.6a [kill-retry]: the run failed"), "{stdout}");
    let j = json(&lab.out.join("conform.json"));
    assert_eq!(j["passed"], false);
    for r in j["rules"].as_array().unwrap() {
        assert_eq!(r["runtimes"]["mute"]["verdict"], "fail", "{r}");
        assert!(r["runtimes"]["mute"]["evidence"].as_str().unwrap().contains("the run failed"), "{r}");
    }
    assert_eq!(j["runs"][0]["status"], "failed");
}

#[test]
fn what_cannot_be_checked_is_refused_before_anything_runs() {
    let lab = TempLab::new("conform");
    let o = lab.run(&["lab", "conform", "overlay-scale", "--runtimes", "troupe"], &[]);
    assert_usage_error(&o, &["workload \"overlay-scale\" has no conformance rules", "workloads with rules: scp, chat"]);
    let o = lab.run(&["lab", "conform", "chta"], &[]);
    assert_usage_error(&o, &["did you mean `chat`?"]);
    let o = lab.run(&["lab", "conform", "chat", "--runtimes", "troupe", "--scenario", "kill"], &[]);
    assert_usage_error(&o, &["scenario = kill", "scenarios: kill-retry, mixed-park, give-up, distributed"]);
    let o = lab.run(&["lab", "conform", "chat", "--runtimes", "troupe,nope"], &[]);
    assert_usage_error(&o, &["runtime \"nope\" has no chat program", "runtimes with one: troupe"]);
    assert!(!lab.out.exists(), "nothing is written when the check is refused");
}
