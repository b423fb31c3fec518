//! The chat fault schedule's rules (workloads/chat/schedule.rs): deterministic per seed, one
//! injector per chat every `fault_pause_ms`, kinds from `msg_type`.

use std::collections::BTreeMap;

use troupe_lab::schedule::to_jsonl;
use troupe_lab_workloads::chat::config::ChatConfig;
use troupe_lab_workloads::chat::schedule::chat_schedule;

fn cfg(sets: &[&str]) -> ChatConfig {
    let mut b = troupe_lab_workloads::registry().builder("chat").unwrap();
    for s in ["chats_per_sup=10", "test_duration_secs=10", "fault_pause_ms=1000"].iter().chain(sets) {
        b.apply_set(s);
    }
    ChatConfig::from_config(&b.build().unwrap())
}

#[test]
fn same_seed_same_bytes_other_seed_other_schedule() {
    let a = to_jsonl(&chat_schedule(&cfg(&["seed=3"])));
    assert_eq!(a, to_jsonl(&chat_schedule(&cfg(&["seed=3"]))));
    assert_ne!(a, to_jsonl(&chat_schedule(&cfg(&["seed=4"]))));
}

#[test]
fn every_chat_fails_every_pause_inside_the_window() {
    let s = chat_schedule(&cfg(&[]));
    let mut per_chat: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for a in &s {
        assert!(a.at_ms < 10_000 && a.slot == 0 && a.restart && a.kind == "error");
        per_chat.entry(a.group).or_default().push(a.at_ms);
    }
    assert_eq!(per_chat.len(), 10);
    for times in per_chat.values() {
        assert_eq!(times.len(), 10, "{times:?}");
        assert!(times[0] < 1000);
        assert!(times.windows(2).all(|w| w[1] - w[0] == 1000));
    }
    // Time order, ids in that order.
    assert!(s.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
    assert!(s.iter().enumerate().all(|(i, a)| a.id == format!("f-{i}")));
}

#[test]
fn aligned_phase_fails_every_chat_at_the_same_instants() {
    let s = chat_schedule(&cfg(&["fault_phase=aligned"]));
    assert_eq!(s.len(), 90);
    assert!(s.iter().all(|a| a.at_ms % 1000 == 0 && a.at_ms >= 1000));
}

#[test]
fn kinds_follow_msg_type() {
    assert!(chat_schedule(&cfg(&["msg_type=none"])).is_empty());
    for (t, k) in [("kill", "kill"), ("cpu_intensive", "cpu"), ("ram_intensive", "ram")] {
        assert!(chat_schedule(&cfg(&[&format!("msg_type={t}")])).iter().all(|a| a.kind == k));
    }
    let r = chat_schedule(&cfg(&["msg_type=random"]));
    let kills = r.iter().filter(|a| a.kind == "kill").count();
    assert!(kills > 20 && kills < 80 && r.iter().all(|a| a.kind == "kill" || a.kind == "error"), "{kills}");
}
