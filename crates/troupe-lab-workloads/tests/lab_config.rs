//! Config validation: defaults, file + overrides in order, and every problem reported at once
//! with key, value and allowed range.

use troupe_lab::config::ConfigBuilder;
use troupe_lab::error::ConfigIssue;
use troupe_lab::ErrorKind;
use troupe_lab_workloads::scp::config::ScpConfig;

fn issues(b: &ConfigBuilder) -> Vec<ConfigIssue> {
    match b.build() {
        Ok(_) => panic!("expected the config to be rejected"),
        Err(e) => match e.kind() {
            ErrorKind::InvalidConfig(list) => list.clone(),
            other => panic!("wrong error kind: {other:?}"),
        },
    }
}

#[test]
fn defaults_are_the_spec_values() {
    let c = troupe_lab_workloads::registry().builder("scp").unwrap().build().unwrap();
    let s = ScpConfig::from_config(&c);
    assert_eq!((s.pairs, s.supervisors, s.delay_ms, s.payload_bytes), (1024, 32, 200, 500));
    assert_eq!((s.failure_rate, s.burst_size, s.random_burst_max), (5.0, 25, 10));
    assert_eq!((s.duration_s, s.warmup_s), (60, 5));
    assert!(s.recovery && s.basis_exchanges);
    assert_eq!(s.ceiling(), 5120.0);
    assert_eq!(s.kill_rate(), 256.0);
}

#[test]
fn file_then_overrides_in_order() {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_toml("pairs = 64\nsupervisors = 4\nfailure_rate = 2\npattern = \"burst\"\n", "f.toml");
    b.apply_set("supervisors=8").apply_set("failure_basis=pairs");
    let s = ScpConfig::from_config(&b.build().unwrap());
    assert_eq!((s.pairs, s.supervisors), (64, 8));
    assert_eq!(s.failure_rate, 2.0, "an integer is accepted where a number is wanted");
    assert_eq!(s.kill_rate(), 64.0 * 2.0 / 100.0);
}

#[test]
fn every_error_is_reported_at_once() {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_toml("pairs = \"many\"\ncolour = 3\ndelay_ms = 0\n", "f.toml");
    b.apply_set("failure_rate=25").apply_set("pattern=sometimes").apply_set("recovery=maybe").apply_set("nokey");
    let list = issues(&b);
    let keys: Vec<&str> = list.iter().map(|i| i.key.as_str()).collect();
    for k in ["pairs", "colour", "delay_ms", "failure_rate", "pattern", "recovery", "nokey"] {
        assert!(keys.contains(&k), "{k} missing from {list:#?}");
    }
    let rate = list.iter().find(|i| i.key == "failure_rate").unwrap();
    assert_eq!(rate.value, "25");
    assert!(rate.problem.contains("0..=20"), "{}", rate.problem);
    let unknown = list.iter().find(|i| i.key == "colour").unwrap();
    assert!(unknown.problem.contains("unknown key") && unknown.problem.contains("pairs"));
    let ty = list.iter().find(|i| i.key == "pairs").unwrap();
    assert!(ty.problem.contains("wrong type"), "{}", ty.problem);
}

#[test]
fn supervisors_must_divide_pairs() {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("pairs=1000").apply_set("supervisors=64");
    let list = issues(&b);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0].key, "supervisors");
    assert!(list[0].problem.contains("divisor of pairs = 1000"));
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("pairs=8").apply_set("supervisors=16");
    let list = issues(&b);
    assert_eq!(list[0].key, "supervisors", "more supervisors than pairs");
    // A burst larger than the pairs is allowed: the runtime takes the next live slot.
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("pairs=8").apply_set("supervisors=2");
    assert!(b.build().is_ok());
}

#[test]
fn cross_rules_do_not_judge_an_invalid_key() {
    // pairs is invalid, so "supervisors divides pairs" must not be judged against the default.
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("pairs=0").apply_set("supervisors=7");
    let list = issues(&b);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0].key, "pairs");
}

#[test]
fn progressive_needs_recovery_off() {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("pattern=progressive");
    let list = issues(&b);
    assert_eq!(list[0].key, "recovery");
    b.apply_set("recovery=false");
    assert!(b.build().is_ok());
}

#[test]
fn unknown_workload_is_named() {
    let err = troupe_lab_workloads::registry().builder("chess").err().unwrap();
    assert!(err.to_string().contains("chess") && err.to_string().contains("scp"));
}

#[test]
fn resolved_config_round_trips_through_json() {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("failure_rate=2.5").apply_set("seed=77");
    let c = b.build().unwrap();
    let mut b2 = troupe_lab_workloads::registry().builder("scp").unwrap();
    b2.apply_json(&c.to_json());
    assert_eq!(b2.build().unwrap(), c);
    let keys: Vec<String> = c.to_json().as_object().unwrap().keys().cloned().collect();
    assert!(
        keys.contains(&"failure_basis".to_string()) && keys.contains(&"injector".to_string()) && keys.len() == 15,
        "{keys:?}"
    );
}

#[test]
fn injector_defaults_to_node_and_takes_in_process() {
    let scp = |set: Option<&str>| {
        let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
        if let Some(s) = set {
            b.apply_set(s);
        }
        b.build()
    };
    let default = scp(None).unwrap();
    assert_eq!(default.str("injector"), "node");
    assert!(ScpConfig::from_config(&default).injector_node);
    let inside = scp(Some("injector=in_process")).unwrap();
    assert!(!ScpConfig::from_config(&inside).injector_node);
    assert_eq!(inside.to_json()["injector"], "in_process", "config.json records it");
    // Typed input takes only today's words, and says which they are.
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_set("injector=thread");
    let bad = issues(&b);
    assert!(bad[0].key == "injector" && bad[0].problem.contains("in_process"), "{bad:?}");
}

#[test]
fn injector_words_recorded_before_the_rename_read_back_in_todays_words() {
    for (old, new) in [("process", "node"), ("thread", "in_process")] {
        let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
        b.apply_json(&serde_json::json!({"injector": old, "pairs": 64, "supervisors": 8}));
        assert_eq!(b.build().unwrap().str("injector"), new, "{old}");
    }
}

#[test]
fn an_unknown_toml_key_is_refused_with_the_closest_key() {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    b.apply_toml("pairs = 64\nsupervisor = 4\nfailure_rte = 5\n[pattern_opts]\nx = 1\n", "lab.toml");
    let list = issues(&b);
    let typo = list.iter().find(|i| i.key == "supervisor").unwrap();
    assert!(typo.problem.contains("unknown key (did you mean `supervisors`?)"), "{}", typo.problem);
    let typo = list.iter().find(|i| i.key == "failure_rte").unwrap();
    assert!(typo.problem.contains("(did you mean `failure_rate`?)"), "{}", typo.problem);
    assert_eq!(typo.value, "5");
    let table = list.iter().find(|i| i.key == "pattern_opts").unwrap();
    assert!(table.problem.contains("unknown key") && table.problem.contains("known keys:"), "{}", table.problem);
    assert!(!list.iter().any(|i| i.key == "pairs"), "a good key is no problem: {list:#?}");
}

#[test]
fn chat_scp_and_energy_take_file_or_an_amqp_url_as_events() {
    for w in ["chat", "scp", "energy"] {
        let mut b = troupe_lab_workloads::registry().builder(w).unwrap();
        assert_eq!(b.build().unwrap().str("events"), "file", "{w}: the default");
        b.apply_set("events=ftp://u:secret@h/");
        let e = b.build().unwrap_err().to_string();
        assert!(e.contains("events") && e.contains("amqp://") && e.contains("ftp://u:***@h/"), "{w}: {e}");
        assert!(!e.contains("secret"), "{w}: the password is shown: {e}");
        let mut b = troupe_lab_workloads::registry().builder(w).unwrap();
        b.apply_set("events=amqp://guest:guest@127.0.0.1:5672/%2f");
        assert_eq!(b.build().unwrap().str("events"), "amqp://guest:guest@127.0.0.1:5672/%2f", "{w}");
    }
}
