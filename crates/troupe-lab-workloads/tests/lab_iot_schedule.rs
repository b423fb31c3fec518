//! The iot fault schedule's rules (workloads/iot/schedule.rs): deterministic per seed, device
//! and server lifetimes uniform in [0.25, 1.75] x MTTF with restarts `restart_s` later, inside
//! the window, sorted and numbered.

use std::collections::BTreeMap;

use troupe_lab::schedule::to_jsonl;
use troupe_lab_workloads::iot::config::IotConfig;
use troupe_lab_workloads::iot::schedule::iot_schedule;

fn cfg(sets: &[&str]) -> IotConfig {
    let mut b = troupe_lab_workloads::registry().builder("iot").unwrap();
    for s in ["devices=50", "duration_s=60", "client_mttf_s=10", "restart_s=5"].iter().chain(sets) {
        b.apply_set(s);
    }
    IotConfig::from_config(&b.build().unwrap())
}

#[test]
fn same_config_same_bytes_other_seed_other_schedule() {
    let a = to_jsonl(&iot_schedule(&cfg(&["seed=3", "server_mttf_s=20", "servers=3"])));
    assert_eq!(a, to_jsonl(&iot_schedule(&cfg(&["seed=3", "server_mttf_s=20", "servers=3"]))));
    assert_ne!(a, to_jsonl(&iot_schedule(&cfg(&["seed=4", "server_mttf_s=20", "servers=3"]))));
}

#[test]
fn rule_1_no_mttf_no_kills() {
    assert!(iot_schedule(&cfg(&["client_mttf_s=0"])).is_empty());
    let s = iot_schedule(&cfg(&["client_mttf_s=0", "server_mttf_s=10", "servers=2"]));
    assert!(!s.is_empty() && s.iter().all(|a| a.kind == "node_kill" && a.group < 2), "{s:?}");
}

#[test]
fn rule_2_lives_are_uniform_quarter_to_seven_quarters_mttf_with_restarts_between() {
    let s = iot_schedule(&cfg(&[]));
    let mut per: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for a in &s {
        assert!(a.at_ms < 60_000 && a.kind == "kill" && a.group < 50 && a.slot == 0 && a.restart, "{a:?}");
        per.entry(a.group).or_default().push(a.at_ms);
    }
    let (mut lives, mut shortest, mut longest) = (Vec::new(), u64::MAX, 0);
    for times in per.values() {
        // The first life starts at the window start; later ones restart_s after a kill.
        let mut born = 0;
        for &t in times {
            let life = t - born;
            assert!((2_500..=17_500).contains(&life), "life {life} ms outside [0.25, 1.75] x 10 s");
            shortest = shortest.min(life);
            longest = longest.max(life);
            lives.push(life as f64);
            born = t + 5_000;
        }
    }
    // Uniform over [2.5, 17.5] s: the mean near 10 s and both ends reached.
    let mean = lives.iter().sum::<f64>() / lives.len() as f64;
    assert!((8_500.0..=11_500.0).contains(&mean), "mean life {mean} ms over {} lives", lives.len());
    assert!(shortest < 4_000 && longest > 16_000, "{shortest} {longest}");
    // About window / (MTTF + restart) = 4 lives per device, the last one cut by the window.
    assert!((120..=220).contains(&s.len()), "{} kills", s.len());
}

#[test]
fn rules_4_and_5_kinds_groups_and_order() {
    let s = iot_schedule(&cfg(&["servers=4", "server_mttf_s=15"]));
    assert!(s.iter().any(|a| a.kind == "node_kill") && s.iter().any(|a| a.kind == "kill"));
    for a in s.iter().filter(|a| a.kind == "node_kill") {
        assert!(a.group < 4, "{a:?}");
    }
    for (i, a) in s.iter().enumerate() {
        assert_eq!(a.id, format!("f-{i}"));
    }
    assert!(s.windows(2).all(|w| (w[0].at_ms, &w[0].kind, w[0].group) <= (w[1].at_ms, &w[1].kind, w[1].group)));
}

#[test]
fn rule_3_adding_servers_does_not_move_device_kills() {
    let a = iot_schedule(&cfg(&[]));
    let b = iot_schedule(&cfg(&["servers=3", "server_mttf_s=20"]));
    let kills = |s: &[troupe_lab::schedule::FaultAction]| -> Vec<(u64, u32)> {
        s.iter().filter(|x| x.kind == "kill").map(|x| (x.at_ms, x.group)).collect()
    };
    assert_eq!(kills(&a), kills(&b), "devices are drawn first, servers after");
}
