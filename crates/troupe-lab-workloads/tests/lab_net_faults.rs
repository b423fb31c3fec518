//! `[net_faults]` (crate::netfaults): parsing from TOML, `--set` and the recorded JSON (rule
//! 1), every bad value refused naming its key (rule 2), refusal by workloads and peer runtimes
//! that cannot apply it (rule 3), and the schedule lines (rule 4): deterministic, in time
//! order, and absent without the section.

use troupe_lab::config::Config;
use troupe_lab::netfaults::{self, NetFaults, Partition};
use troupe_lab::schedule;

const IOT_NET: &str =
    "servers = 2\nduration_s = 3\n[net_faults]\nlayer = \"runtime\"\ndrop_pct = 1.0\ndelay_ms = [1, 20]\n\
                       partitions = [ { at_ms = 1500, duration_ms = 500, nodes = [1] }, \
                       { at_ms = 500, duration_ms = 700, nodes = [2, 3] } ]\n";

fn toml_cfg(workload: &str, text: &str) -> troupe_lab::Result<Config> {
    let mut b = troupe_lab_workloads::registry().builder(workload).unwrap();
    b.apply_toml(text, "test.toml");
    b.build()
}

fn set_cfg(workload: &str, sets: &[&str]) -> troupe_lab::Result<Config> {
    let mut b = troupe_lab_workloads::registry().builder(workload).unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build()
}

fn refused(r: troupe_lab::Result<Config>) -> String {
    r.expect_err("the config should be refused").to_string()
}

#[test]
fn rule1_section_parses_from_toml_set_and_recorded_json_alike() {
    let from_toml = toml_cfg("iot", IOT_NET).unwrap();
    let nf = from_toml.net_faults().unwrap();
    assert_eq!(nf.drop_pct, 1.0);
    assert_eq!(nf.delay_ms, Some([1, 20]));
    assert_eq!(nf.partitions[0], Partition { at_ms: 1500, duration_ms: 500, nodes: vec![1] });
    let from_set = set_cfg(
        "iot",
        &[
            "servers=2",
            "duration_s=3",
            "net_faults.layer=runtime",
            "net_faults.drop_pct=1.0",
            "net_faults.delay_ms=[1, 20]",
            "net_faults.partitions=[{at_ms=1500, duration_ms=500, nodes=[1]}, {at_ms=500, duration_ms=700, nodes=[2,3]}]",
        ],
    )
    .unwrap();
    assert_eq!(from_toml, from_set);
    // The recorded config (TROUPE_CONFIG, manifest) holds the section as an object and reads back.
    let json = from_toml.to_json();
    assert_eq!(json["net_faults"]["delay_ms"], serde_json::json!([1, 20]));
    let mut b = troupe_lab_workloads::registry().builder("iot").unwrap();
    b.apply_json(&json);
    assert_eq!(b.build().unwrap(), from_toml);
}

#[test]
fn rule1_no_section_means_no_net_faults_and_no_key_in_the_json() {
    let cfg = toml_cfg("iot", "servers = 2\n").unwrap();
    assert!(cfg.net_faults().is_none());
    assert!(cfg.to_json().get("net_faults").is_none());
    assert!(netfaults::schedule_lines(&cfg).is_empty());
}

#[test]
fn rule2_each_bad_value_is_refused_naming_its_key() {
    let cases: &[(&str, &str, &str)] = &[
        ("net_faults.drop_pct=150", "net_faults.drop_pct", "0..=100"),
        ("net_faults.drop_pct=-1", "net_faults.drop_pct", "0..=100"),
        ("net_faults.delay_ms=[20, 1]", "net_faults.delay_ms", "min 20 is above max 1"),
        ("net_faults.delay_ms=[1, 20000]", "net_faults.delay_ms", "10000"),
        ("net_faults.delay_ms=5", "net_faults.delay_ms", "[min, max]"),
        ("net_faults.dorp_pct=1", "net_faults.dorp_pct", "did you mean `drop_pct`?"),
        ("net_faults=1", "net_faults", "net_faults.drop_pct=..."),
        (
            "net_faults.partitions=[{at_ms=0, duration_ms=0, nodes=[1]}]",
            "net_faults.partitions[0].duration_ms",
            "at least 1",
        ),
        ("net_faults.partitions=[{at_ms=0, duration_ms=5, nodes=[]}]", "net_faults.partitions[0].nodes", "non-empty"),
        ("net_faults.partitions=[{at_ms=0, duration_ms=5, nodes=[1, 1]}]", "net_faults.partitions[0].nodes", "twice"),
        ("net_faults.partitions=[{at_ms=0, nodes=[1]}]", "net_faults.partitions[0].duration_ms", "missing"),
        ("net_faults.partitions=[{at=0, duration_ms=5, nodes=[1]}]", "net_faults.partitions[0].at", "unknown key"),
        // iot with 1 server and 3 device processes has nodes 0..=3.
        ("net_faults.partitions=[{at_ms=0, duration_ms=5, nodes=[9]}]", "net_faults.partitions[0].nodes", "no node 9"),
    ];
    for (set, key, says) in cases {
        let e = refused(set_cfg("iot", &[set]));
        assert!(e.contains(key) && e.contains(says), "{set}: expected {key} and {says:?} in: {e}");
    }
}

#[test]
fn rule2_overlapping_partitions_of_one_node_are_refused_and_disjoint_ones_accepted() {
    let overlap = "[net_faults]\npartitions = [ { at_ms = 1000, duration_ms = 2000, nodes = [1] }, \
                   { at_ms = 2500, duration_ms = 100, nodes = [0, 1] } ]\n";
    let e = refused(toml_cfg("iot", &format!("servers = 2\n{overlap}")));
    assert!(e.contains("net_faults.partitions[1]") && e.contains("node 1 is already partitioned"), "{e}");
    let back_to_back = "servers = 2\n[net_faults]\npartitions = [ { at_ms = 1000, duration_ms = 1500, nodes = [1] }, \
                        { at_ms = 2500, duration_ms = 100, nodes = [1] } ]\n";
    assert!(toml_cfg("iot", back_to_back).is_ok());
}

#[test]
fn rule3_single_process_workloads_refuse_the_section() {
    for (workload, extra) in [("scp", ""), ("chat", "deployment = \"single\"\n"), ("energy", ""), ("overlay-scale", "")]
    {
        let e = refused(toml_cfg(workload, &format!("{extra}[net_faults]\ndrop_pct = 1\n")));
        assert!(e.contains("net_faults") && e.contains(workload) && e.contains("unsupported"), "{workload}: {e}");
    }
    // chat's distributed deployment has node processes and takes it.
    let chat = toml_cfg("chat", "deployment = \"distributed\"\n[net_faults]\ndrop_pct = 1\n").unwrap();
    assert!(chat.net_faults().is_some());
}

#[test]
fn rule3_peer_runtimes_refuse_the_section_before_anything_starts() {
    let cfg = toml_cfg("iot", IOT_NET).unwrap();
    for rt in ["erlang", "akka"] {
        let e = netfaults::check_runtime(&cfg, rt, None).unwrap_err().to_string();
        assert!(e.contains("net_faults") && e.contains(rt) && e.contains("unsupported") && e.contains("iot"), "{e}");
    }
    netfaults::check_runtime(&cfg, "troupe", None).unwrap();
    // Through a run: refused before the run folder exists.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let exe = troupe_lab::run::TroupeExe { program: "/nonexistent/troupe".into(), args: vec![] };
    let req = troupe_lab::run::RunRequest::new(&troupe_lab_workloads::iot::Iot, cfg, "erlang", out.clone(), exe);
    let e = troupe_lab::run::run(&req, &troupe_lab::child::Stop::new()).unwrap_err().to_string();
    assert!(e.contains("net_faults") && e.contains("erlang"), "{e}");
    assert!(!out.exists(), "a refused run made its folder");
}

#[test]
fn rule4_same_config_gives_the_same_schedule_with_net_lines_in_time_order() {
    let text = IOT_NET.replace("duration_s = 3", "duration_s = 30\nclient_mttf_s = 5\nserver_mttf_s = 10");
    let a = schedule::to_jsonl(&troupe_lab::workload::schedule_of(
        &troupe_lab_workloads::iot::Iot,
        &toml_cfg("iot", &text).unwrap(),
    ));
    let b = schedule::to_jsonl(&troupe_lab::workload::schedule_of(
        &troupe_lab_workloads::iot::Iot,
        &toml_cfg("iot", &text).unwrap(),
    ));
    assert_eq!(a, b);
    let lines: Vec<schedule::FaultAction> = a.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.windows(2).all(|w| w[0].at_ms <= w[1].at_ms), "not in time order:\n{a}");
    let net: Vec<&schedule::FaultAction> = lines.iter().filter(|l| netfaults::is_net_kind(&l.kind)).collect();
    let ids: Vec<&str> = net.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["net-drop", "net-delay", "net-part-1-2", "net-part-1-3", "net-part-0-1"]);
    assert_eq!(net[0].drop_pct, Some(1.0));
    assert_eq!(net[1].delay_ms, Some([1, 20]));
    assert_eq!((net[2].at_ms, net[2].group, net[2].duration_ms), (500, 2, Some(700)));
    assert_eq!(net[2].nodes, Some(vec![2, 3]));
    assert!(a.lines().next().unwrap().starts_with(r#"{"at_ms":0,"id":"net-drop","kind":"drop","group":0"#), "{a}");
    // The workload's own actions are kept as they were, ids included.
    let own: Vec<schedule::FaultAction> = lines.into_iter().filter(|l| !netfaults::is_net_kind(&l.kind)).collect();
    let cfg = toml_cfg("iot", &text).unwrap();
    assert_eq!(own, troupe_lab_workloads::registry().get("iot").unwrap().schedule(&cfg));
}

#[test]
fn rule4_without_the_section_the_schedule_is_the_workloads_own_byte_for_byte() {
    let cfg = toml_cfg("iot", "duration_s = 30\nclient_mttf_s = 5\nserver_mttf_s = 10\n").unwrap();
    let own = troupe_lab_workloads::registry().get("iot").unwrap().schedule(&cfg);
    let text = schedule::to_jsonl(&troupe_lab::workload::schedule_of(&troupe_lab_workloads::iot::Iot, &cfg));
    assert!(!own.is_empty());
    assert_eq!(text, schedule::to_jsonl(&own));
    for field in ["drop_pct", "delay_ms", "duration_ms", "nodes"] {
        assert!(!text.contains(field), "{field} in a schedule without net_faults");
    }
    // The line format every existing schedule has.
    assert!(
        text.lines().all(|l| l.starts_with(r#"{"at_ms":"#) && l.ends_with(r#","slot":0,"restart":true}"#)),
        "{text}"
    );
}

#[test]
fn a_section_with_nothing_set_plans_no_lines() {
    let cfg = toml_cfg("iot", "[net_faults]\ndrop_pct = 0\n").unwrap();
    assert_eq!(cfg.net_faults(), Some(&NetFaults::default()));
    assert!(netfaults::schedule_lines(&cfg).is_empty());
}

#[test]
fn sweeps_take_net_faults_keys_as_axes_and_lists_as_one_value_and_refuse_peers() {
    let spec = |runtimes: &[&str]| troupe_lab::sweep::SweepSpec {
        workload: &troupe_lab_workloads::iot::Iot,
        config_file: None,
        sets: vec![
            "net_faults.layer=runtime".into(),
            "net_faults.drop_pct=0,5".into(),
            "net_faults.delay_ms=[1, 20]".into(),
        ],
        runtimes: runtimes.iter().map(|r| r.to_string()).collect(),
        reps: 1,
    };
    let grid = troupe_lab::sweep::expand(&spec(&["troupe"])).unwrap();
    let names: Vec<&str> = grid.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1], "{names:?}");
    for p in &grid.points {
        assert_eq!(p.config.net_faults().unwrap().delay_ms, Some([1, 20]));
    }
    let e = troupe_lab::sweep::expand(&spec(&["troupe", "akka"])).unwrap_err().to_string();
    assert!(e.contains("net_faults") && e.contains("akka"), "{e}");
}

#[test]
fn layer_defaults_to_network_and_a_bad_value_is_refused_naming_the_key() {
    let cfg = toml_cfg("chat", "[net_faults]\ndrop_pct = 1\n").unwrap();
    assert_eq!(cfg.net_faults().unwrap().layer, netfaults::Layer::Network);
    assert_eq!(cfg.to_json()["net_faults"]["layer"], "network");
    let e = refused(set_cfg("chat", &["net_faults.layer=kernel"]));
    assert!(e.contains("net_faults.layer") && e.contains("\"network\"") && e.contains("\"runtime\""), "{e}");
    // Delay at the network layer goes through the hub's relay.
    let delayed = set_cfg("chat", &["net_faults.delay_ms=[1, 5]"]).unwrap();
    assert_eq!(delayed.net_faults().unwrap().delay_ms, Some([1, 5]));
    let ok = set_cfg("chat", &["net_faults.layer=runtime", "net_faults.delay_ms=[1, 5]"]).unwrap();
    assert_eq!(ok.net_faults().unwrap().layer, netfaults::Layer::Runtime);
}

#[test]
fn at_the_network_layer_runtimes_that_do_not_place_their_nodes_are_refused_naming_why() {
    // Every Troupe program with node processes now places them in the namespaces (kv since the
    // nemesis); the core's test workload does not, and stands for one that does not.
    let kv = toml_cfg("kv", "[net_faults]\ndrop_pct = 1\n").unwrap();
    let mut b = troupe_lab::config::ConfigBuilder::new(&troupe_lab::testkit::Noop);
    b.apply_toml("nodes = 2\n[net_faults]\ndrop_pct = 1\n", "test.toml");
    let noop = b.build().unwrap();
    let chat = toml_cfg("chat", "[net_faults]\ndrop_pct = 1\n").unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("peers/elixir/chat");
    std::fs::create_dir_all(&dir).unwrap();
    match troupe_lab::netlayer::check_host() {
        Err(why) => {
            // Without root, ip or nft every network-layer run is refused with that reason.
            let e = netfaults::check_runtime(&chat, "troupe", None).unwrap_err().to_string();
            assert!(e.contains(&why), "{e}");
        }
        Ok(()) => {
            netfaults::check_runtime(&kv, "troupe", None).unwrap();
            let e = netfaults::check_runtime(&noop, "troupe", None).unwrap_err().to_string();
            assert!(e.contains("not built yet") && e.contains("layer"), "{e}");
            netfaults::check_runtime(&chat, "troupe", None).unwrap();
            let e = netfaults::check_runtime(&chat, "elixir", Some(root.path())).unwrap_err().to_string();
            assert!(e.contains("elixir") && e.contains("features") && e.contains("netns"), "{e}");
            std::fs::write(dir.join("features"), "netns\n").unwrap();
            netfaults::check_runtime(&chat, "elixir", Some(root.path())).unwrap();
        }
    }
    // The runtime layer is Troupe's own: refused for every peer.
    let rt = toml_cfg("chat", "[net_faults]\nlayer = \"runtime\"\ndrop_pct = 1\n").unwrap();
    let e = netfaults::check_runtime(&rt, "elixir", Some(root.path())).unwrap_err().to_string();
    assert!(e.contains("runtime") && e.contains("elixir") && e.contains("unsupported"), "{e}");
}
