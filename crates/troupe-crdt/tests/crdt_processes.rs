//! The replicator with real `troupe-crdt-node` processes on loopback (issue 14's target):
//! an increment written with `majority` on one process is read on every other; with members
//! SIGKILLed majority is still reached while a majority lives; with 2 of 3 killed, a
//! majority write and read time out with an error (never a silent local-only success).

mod support;

use std::time::Duration;

use support::{cluster, CrdtProc};

const BIN: &str = env!("CARGO_BIN_EXE_troupe-crdt-node");
const LONG: Duration = Duration::from_secs(30);

#[test]
fn five_processes_a_majority_increment_is_read_on_every_other_and_survives_two_sigkills() {
    let mut nodes = cluster(BIN, 5);
    for p in nodes.iter_mut().skip(1) {
        p.ask("watch k", "watching k");
    }
    assert_eq!(nodes[0].ask("incr k 1 majority 5000", "incr k "), "incr k ok 1");
    for p in nodes.iter_mut().skip(1) {
        p.wait_value("k", 1, LONG);
        assert_eq!(p.ask("get k local", "get k "), "get k ok 1");
    }
    // Kill two of five: three live replicas are still a majority of five.
    nodes[4].kill();
    nodes[3].kill();
    assert_eq!(nodes[0].ask("incr k 2 majority 10000", "incr k "), "incr k ok 3");
    for p in nodes.iter_mut().take(3).skip(1) {
        p.wait_value("k", 3, LONG);
    }
    assert_eq!(nodes[2].ask("get k majority 10000", "get k "), "get k ok 3");
}

#[test]
fn three_processes_with_two_sigkilled_a_majority_write_and_read_time_out_with_an_error() {
    let mut nodes = cluster(BIN, 3);
    assert_eq!(nodes[0].ask("incr k 1 majority 5000", "incr k "), "incr k ok 1");
    nodes[2].kill();
    assert_eq!(nodes[0].ask("incr k 1 majority 10000", "incr k "), "incr k ok 2", "one of three dead: majority holds");
    nodes[1].kill();
    let w = nodes[0].ask("incr k 1 majority 500", "incr k ");
    assert!(w.starts_with("incr k error ") && w.contains("1 of the 2 replicas needed"), "{w}");
    let r = nodes[0].ask("get k majority 500", "get k ");
    assert!(r.starts_with("get k error "), "{r}");
    // The write was applied here, and says so only as an error above.
    assert_eq!(nodes[0].ask("get k local", "get k "), "get k ok 3");
}
