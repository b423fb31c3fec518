//! The chat workload's config: embedded defaults as workloads.md §2 lists them, and bad input
//! refused before anything starts, naming the key, the value and the allowed range.

use troupe_lab::ErrorKind;
use troupe_lab_workloads::chat::config::{ChatConfig, Lookup};

fn build(sets: &[&str]) -> Result<troupe_lab::config::Config, troupe_lab::Error> {
    let mut b = troupe_lab_workloads::registry().builder("chat").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build()
}

#[test]
fn defaults_are_the_specs() {
    let c = ChatConfig::from_config(&build(&[]).unwrap());
    assert_eq!((c.num_supervisor, c.chats_per_sup, c.clients_per_server), (1, 256, 5));
    assert_eq!((c.fault_pause_ms, c.send_interval_ms, c.duration_s), (5000, 200, 60));
    assert_eq!(c.msg_type_word, "error");
    assert!(c.distributed);
    // Discovery answers a lookup for a restarting chat at once, as seed 000 and every peer do.
    assert_eq!(c.lookup, Lookup::Retry);
    assert_eq!(ChatConfig::from_config(&build(&["lookup=park"]).unwrap()).lookup, Lookup::Park);
    // 256 chats x 5 clients x 5 receivers x 5 messages/s.
    assert_eq!(c.ceiling(), 32_000.0);
}

#[test]
fn bad_keys_and_values_are_refused_naming_key_and_range() {
    let e = build(&["clients_per_server=0", "msg_type=explode", "send_interval_ms=0", "colour=blue"]).unwrap_err();
    let ErrorKind::InvalidConfig(issues) = e.kind() else { panic!("{e}") };
    let text = e.to_string();
    for key in ["clients_per_server", "msg_type", "send_interval_ms", "colour"] {
        assert!(issues.iter().any(|i| i.key == key), "{key} missing from {text}");
    }
    assert!(text.contains("1..="), "{text}");
    assert!(text.contains("error, kill, cpu_intensive, ram_intensive, random, none"), "{text}");
    assert!(text.contains("unknown key"), "{text}");
    let e = build(&["lookup=wait"]).unwrap_err();
    let ErrorKind::InvalidConfig(issues) = e.kind() else { panic!("{e}") };
    assert!(issues.iter().any(|i| i.key == "lookup"), "{e}");
    assert!(e.to_string().contains("retry, park"), "{e}");
}

#[test]
fn cross_key_limits_are_checked() {
    let e = build(&["chats_per_sup=100000", "clients_per_server=100"]).unwrap_err();
    assert!(e.to_string().contains("clients"), "{e}");
    let e = build(&["events=ftp://example"]).unwrap_err();
    assert!(e.to_string().contains("amqp://"), "{e}");
    assert!(build(&["events=amqp://guest:guest@127.0.0.1:5672/%2f"]).is_ok());
}

#[test]
fn client_groups_cover_every_client_once() {
    let c = ChatConfig::from_config(
        &build(&["chats_per_sup=1", "clients_per_server=25", "clients_per_process=10"]).unwrap(),
    );
    assert_eq!(c.client_groups(), vec![(0, 10), (10, 10), (20, 5)]);
}
