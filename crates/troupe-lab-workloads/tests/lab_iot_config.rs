//! The iot config's refusals (workloads/iot/config.rs): ranges, cross-key rules, unknown keys,
//! all reported at once with key, value and what is allowed.

use troupe_lab_workloads::iot::config::IotConfig;

fn build(sets: &[&str]) -> Result<IotConfig, String> {
    let mut b = troupe_lab_workloads::registry().builder("iot").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build().map(|c| IotConfig::from_config(&c)).map_err(|e| e.to_string())
}

#[test]
fn defaults_are_the_contract_s() {
    let c = build(&[]).unwrap();
    assert_eq!((c.servers, c.device_processes, c.devices, c.duration_s, c.warmup_s), (1, 3, 300, 20, 5));
    assert_eq!((c.report_len, c.report_timeout_ms, c.heartbeat_ms, c.phi_threshold), (1000, 1000, 500, 8.0));
    assert_eq!((c.drop_probability, c.delay_min_ms, c.delay_max_ms), (0.0, 0, 0));
    assert_eq!((c.client_mttf_s, c.server_mttf_s, c.restart_s, c.seed), (0, 0, 5, 1));
    assert_eq!(c.devices_of(1).take(3).collect::<Vec<_>>(), vec![1, 4, 7], "device k in process k % 3");
}

#[test]
fn out_of_range_values_are_refused_naming_key_value_and_range() {
    let e = build(&["servers=17", "device_processes=0", "drop_probability=0.95", "devices=100001"]).unwrap_err();
    for want in ["servers", "1..=16", "device_processes", "1..=32", "drop_probability", "0.95", "0..=0.9", "devices"] {
        assert!(e.contains(want), "{want:?} missing from: {e}");
    }
}

#[test]
fn cross_key_rules_are_refused_with_what_to_do() {
    let e = build(&["delay_min_ms=10", "delay_max_ms=5"]).unwrap_err();
    assert!(e.contains("delay_min_ms") && e.contains("delay_max_ms = 5"), "{e}");
    let e = build(&["devices=2", "device_processes=3"]).unwrap_err();
    assert!(e.contains("every device process needs a device"), "{e}");
    let e = build(&["devices=100000", "client_mttf_s=1", "duration_s=86400"]).unwrap_err();
    assert!(e.contains("raise the MTTF"), "{e}");
}

#[test]
fn unknown_keys_and_wrong_types_are_refused() {
    let e = build(&["sever=2"]).unwrap_err();
    assert!(e.contains("sever") && e.contains("servers"), "{e}");
    let e = build(&["drop_probability=lots"]).unwrap_err();
    assert!(e.contains("drop_probability") && e.contains("wrong type"), "{e}");
}
