//! A replicator's counters published through the [`metrics`] facade at scrape time (feature
//! `metrics`).
//!
//! The replicator counts what it does in relaxed atomics ([`Replicator::stats`]); nothing on
//! its path talks to a recorder. Whoever renders `/metrics` calls [`publish`] right before
//! rendering: it reads the counters once and hands them to the installed recorder as
//! absolute values. [`describe`] gives each series its help text; call it once after
//! installing the recorder.
//!
//! Rules:
//! 1. Every series is published at every call, zeros included, every label value too.
//! 2. Labels take a fixed, small set of values (listed below); keys and peers never become
//!    labels (their names are in the `replicated payload rejected` and `replication send
//!    failed` log events instead).
//!
//! # Series
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `troupe_crdt_deltas_sent_total` | counter | | delta messages sent to peers (first sends and resends; one message may carry several deltas of one key) |
//! | `troupe_crdt_deltas_acked_total` | counter | | delta messages a peer acknowledged positively |
//! | `troupe_crdt_delta_bytes_sent_total` | counter | | payload bytes of the delta messages sent |
//! | `troupe_crdt_full_states_sent_total` | counter | | full-state messages sent (gossip, and resends to a peer behind the delta buffer) |
//! | `troupe_crdt_full_states_acked_total` | counter | | full-state messages a peer acknowledged positively |
//! | `troupe_crdt_full_state_bytes_sent_total` | counter | | payload bytes of the full-state messages sent |
//! | `troupe_crdt_received_total` | counter | `kind` = `delta`, `state` | delta and full-state messages received from peers |
//! | `troupe_crdt_rejected_total` | counter | `reason` = `decode`, `kind` | payloads this node rejected: they did not decode, or the key holds another CRDT kind |
//! | `troupe_crdt_send_failures_total` | counter | `reason` = `no_answer`, `rejected_by_peer` | delta and state messages without a positive acknowledgement: no answer in time, or the peer rejected them |
//! | `troupe_crdt_keys` | gauge | | keys this replicator holds now (typed or still undecoded) |
//!
//! ```no_run
//! # async fn demo(cluster: troupe_cluster::Cluster) -> Result<(), troupe_crdt::Error> {
//! use troupe_crdt::{Replicator, ReplicatorConfig};
//! let r = Replicator::start(&cluster, ReplicatorConfig::default())?;
//! // With a recorder installed (say a Prometheus exporter), before rendering /metrics:
//! troupe_crdt::metrics::publish(&r);
//! # Ok(()) }
//! ```

use ::metrics::{counter, describe_counter, describe_gauge, gauge, Unit};

use crate::Replicator;

/// Reads `replicator`'s counters and publishes every series of the module docs to the
/// installed recorder. Cheap enough for every scrape.
pub fn publish(replicator: &Replicator) {
    let s = replicator.stats();
    counter!("troupe_crdt_deltas_sent_total").absolute(s.deltas_sent);
    counter!("troupe_crdt_deltas_acked_total").absolute(s.deltas_acked);
    counter!("troupe_crdt_delta_bytes_sent_total").absolute(s.delta_bytes_sent);
    counter!("troupe_crdt_full_states_sent_total").absolute(s.states_sent);
    counter!("troupe_crdt_full_states_acked_total").absolute(s.states_acked);
    counter!("troupe_crdt_full_state_bytes_sent_total").absolute(s.state_bytes_sent);
    counter!("troupe_crdt_received_total", "kind" => "delta").absolute(s.deltas_received);
    counter!("troupe_crdt_received_total", "kind" => "state").absolute(s.states_received);
    counter!("troupe_crdt_rejected_total", "reason" => "decode").absolute(s.rejected_decode);
    counter!("troupe_crdt_rejected_total", "reason" => "kind").absolute(s.rejected_kind);
    counter!("troupe_crdt_send_failures_total", "reason" => "no_answer").absolute(s.sends_unanswered);
    counter!("troupe_crdt_send_failures_total", "reason" => "rejected_by_peer").absolute(s.sends_nacked);
    gauge!("troupe_crdt_keys").set(replicator.keys() as f64);
}

/// Gives every series of the module docs its unit and help text. Call it once, after
/// installing the recorder.
pub fn describe() {
    let c = |name: &'static str, help: &'static str| describe_counter!(name, Unit::Count, help);
    c("troupe_crdt_deltas_sent_total", "Delta messages sent to peers.");
    c("troupe_crdt_deltas_acked_total", "Delta messages a peer acknowledged.");
    describe_counter!("troupe_crdt_delta_bytes_sent_total", Unit::Bytes, "Payload bytes of the delta messages sent.");
    c("troupe_crdt_full_states_sent_total", "Full-state messages sent.");
    c("troupe_crdt_full_states_acked_total", "Full-state messages a peer acknowledged.");
    describe_counter!(
        "troupe_crdt_full_state_bytes_sent_total",
        Unit::Bytes,
        "Payload bytes of the full-state messages sent."
    );
    c("troupe_crdt_received_total", "Delta and full-state messages received.");
    c("troupe_crdt_rejected_total", "Payloads rejected (did not decode, or another CRDT kind).");
    c("troupe_crdt_send_failures_total", "Messages without a positive acknowledgement, by reason.");
    describe_gauge!("troupe_crdt_keys", Unit::Count, "Keys this replicator holds now.");
}
