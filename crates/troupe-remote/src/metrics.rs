//! A node's counters published through the [`metrics`] facade at scrape time (feature
//! `metrics`).
//!
//! The node keeps its counters as relaxed atomics ([`Node::stats`]); nothing on the hot path
//! talks to a recorder. Whoever renders `/metrics` calls [`publish`] right before rendering:
//! it reads the counters once and hands them to the installed recorder as absolute values
//! (`counter!(..).absolute(v)`, `gauge!(..).set(v)`), so a scrape costs one
//! [`Node::stats`] and a pass over the peer table, whatever the traffic. [`describe`] gives
//! each series its help text and unit; call it once after installing the recorder.
//!
//! Rules:
//! 1. Every series is published at every call, zeros included, so a dashboard sees the whole
//!    set from the first scrape.
//! 2. Labels take a fixed, small set of values (listed below); nothing a peer sends becomes a
//!    label.
//! 3. Counters are the node's own totals since it started (they only grow while it runs);
//!    gauges are values now.
//!
//! # Series
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `troupe_node_frames_total` | counter | `direction` = `in`, `out` | frames received from / sent to peers (every channel, control included) |
//! | `troupe_node_bytes_total` | counter | `direction` = `in`, `out` | bytes read from / written to peer connections (frames with their headers) |
//! | `troupe_node_connections` | gauge | `direction` = `in`, `out` | connections open now: `in`, those peers dialled to this node that completed their handshake; `out`, this node's own connections to peers whose session is up (every lane of every channel) |
//! | `troupe_node_connections_accepted_total` | counter | | TCP connections accepted on the listen address (before any handshake) |
//! | `troupe_node_connections_closed_total` | counter | | accepted connections that ended (refused, failed or closed) |
//! | `troupe_node_refusals_total` | counter | `reason` (below) | what this node refused or was refused, by reason |
//! | `troupe_node_peers` | gauge | `state` = `up`, `connecting`, `down` | peers in the peer table now, by state of their session |
//! | `troupe_node_sessions_lost_total` | counter | | peer sessions that ended after being up (node-down events) |
//! | `troupe_node_reorder_buffer_bytes` | gauge | | bytes of acknowledged frames that arrived ahead of a missing one and are held for order now, over all peers |
//! | `troupe_node_held_for_order_total` | counter | | acknowledged frames that arrived ahead of a missing one and waited for it |
//! | `troupe_node_retransmits_total` | counter | | acknowledged frames sent again after `ack_timeout_ms` |
//! | `troupe_node_reply_bytes` | gauge | | bytes of replies to remote askers queued or being written now (`max_reply_bytes` budget) |
//! | `troupe_node_replies_dropped_total` | counter | | replies to askers on a peer that is down, or past the reply budget: dropped |
//! | `troupe_node_limit_closes_total` | counter | | sessions closed because their peer went past a budget |
//! | `troupe_node_log_lines_suppressed_total` | counter | | warning lines suppressed by the log rate limit (process-wide) |
//! | `troupe_node_log_lines_dropped_total` | counter | | log lines dropped because stderr did not keep up (process-wide) |
//!
//! `troupe_node_refusals_total` `reason` values:
//! - `handshake`: accepted connections whose handshake failed, for any reason (bad frames,
//!   no first byte, timeouts, and the `auth` and `tls` ones below: those are counted here
//!   too, so do not add the three);
//! - `auth`: handshakes that failed authentication (wrong cluster secret);
//! - `tls`: TLS handshakes that failed, on accepted and on dialled connections;
//! - `refused_in`: messages from peers this node refused (unknown actor, type mismatch,
//!   undecodable);
//! - `refused_by_peer`: messages of this node that a peer refused;
//! - `malformed`: connections closed for a malformed frame;
//! - `oversized`: connections closed for a frame over `max_frame_bytes`;
//! - `connection_budget`: connections past `max_connections_per_peer`;
//! - `peer_table_full`: new peers refused because the peer table was full (`max_peers`);
//! - `forged_ref`: messages refused because a ref in them named an unknown address.
//!
//! ```
//! # #[tokio::main] async fn main() {
//! use troupe_remote::{Node, NodeConfig};
//! let node = Node::start(NodeConfig::new("a", "secret")).await.unwrap();
//! // With a recorder installed (say a Prometheus exporter), before rendering /metrics:
//! troupe_remote::metrics::publish(&node);
//! node.shutdown();
//! # }
//! ```

use ::metrics::{counter, describe_counter, describe_gauge, gauge, Unit};

use crate::node::peer::Status;
use crate::Node;

/// The `reason` values of `troupe_node_refusals_total`, in the order of the module docs.
pub const REFUSAL_REASONS: [&str; 10] = [
    "handshake",
    "auth",
    "tls",
    "refused_in",
    "refused_by_peer",
    "malformed",
    "oversized",
    "connection_budget",
    "peer_table_full",
    "forged_ref",
];

/// Reads `node`'s counters and publishes every series of the module docs to the installed
/// recorder (rule 1). Cheap enough for every scrape; never called on the hot path.
pub fn publish(node: &Node) {
    let s = node.stats();
    counter!("troupe_node_frames_total", "direction" => "in").absolute(s.frames_in);
    counter!("troupe_node_frames_total", "direction" => "out").absolute(s.frames_out);
    counter!("troupe_node_bytes_total", "direction" => "in").absolute(s.bytes_in);
    counter!("troupe_node_bytes_total", "direction" => "out").absolute(s.bytes_out);
    counter!("troupe_node_connections_accepted_total").absolute(s.connections_accepted);
    counter!("troupe_node_connections_closed_total").absolute(s.connections_closed);
    let refusals = [
        s.handshake_failures,
        s.auth_failures,
        s.tls_failures,
        s.refused_in,
        s.refused_by_peer,
        s.malformed_frames,
        s.oversized_frames,
        s.connections_refused,
        s.peers_refused,
        s.refs_refused,
    ];
    for (reason, v) in REFUSAL_REASONS.iter().zip(refusals) {
        counter!("troupe_node_refusals_total", "reason" => *reason).absolute(v);
    }
    counter!("troupe_node_sessions_lost_total").absolute(s.nodes_down);
    gauge!("troupe_node_reorder_buffer_bytes").set(s.held_bytes as f64);
    counter!("troupe_node_held_for_order_total").absolute(s.held_for_order);
    counter!("troupe_node_retransmits_total").absolute(s.retransmits);
    gauge!("troupe_node_reply_bytes").set(s.reply_bytes as f64);
    counter!("troupe_node_replies_dropped_total").absolute(s.replies_dropped);
    counter!("troupe_node_limit_closes_total").absolute(s.limit_closes);
    counter!("troupe_node_log_lines_suppressed_total").absolute(s.log_lines_suppressed);
    counter!("troupe_node_log_lines_dropped_total").absolute(s.log_lines_dropped);

    let (mut up, mut connecting, mut down, mut conns_in, mut conns_out) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for p in node.inner.all_peers() {
        conns_in += p.inbound.load(std::sync::atomic::Ordering::Relaxed) as u64;
        if p.is_up() {
            up += 1;
            conns_out += p.channels.iter().map(|c| c.lanes.len() as u64).sum::<u64>();
        } else if matches!(*p.status.borrow(), Status::Connecting) {
            connecting += 1;
        } else {
            down += 1;
        }
    }
    gauge!("troupe_node_connections", "direction" => "in").set(conns_in as f64);
    gauge!("troupe_node_connections", "direction" => "out").set(conns_out as f64);
    gauge!("troupe_node_peers", "state" => "up").set(up as f64);
    gauge!("troupe_node_peers", "state" => "connecting").set(connecting as f64);
    gauge!("troupe_node_peers", "state" => "down").set(down as f64);
}

/// Gives every series of the module docs its unit and help text (the `# HELP` line of a
/// Prometheus page). Call it once, after installing the recorder.
pub fn describe() {
    let count = |name: &'static str, help: &'static str| describe_counter!(name, Unit::Count, help);
    count("troupe_node_frames_total", "Frames received from (in) and sent to (out) peers.");
    describe_counter!(
        "troupe_node_bytes_total",
        Unit::Bytes,
        "Bytes read from (in) and written to (out) peer connections."
    );
    describe_gauge!(
        "troupe_node_connections",
        Unit::Count,
        "Connections open now: in, peers' connections to this node past their handshake; out, this node's \
         connections to peers that are up."
    );
    count("troupe_node_connections_accepted_total", "TCP connections accepted on the listen address.");
    count("troupe_node_connections_closed_total", "Accepted connections that ended.");
    count(
        "troupe_node_refusals_total",
        "Refusals by reason (handshake counts every failed handshake, auth and tls included).",
    );
    describe_gauge!("troupe_node_peers", Unit::Count, "Peers in the peer table now, by session state.");
    count("troupe_node_sessions_lost_total", "Peer sessions that ended after being up.");
    describe_gauge!(
        "troupe_node_reorder_buffer_bytes",
        Unit::Bytes,
        "Bytes of acknowledged frames held for order now, over all peers."
    );
    count("troupe_node_held_for_order_total", "Acknowledged frames that arrived ahead of a missing one.");
    count("troupe_node_retransmits_total", "Acknowledged frames sent again.");
    describe_gauge!(
        "troupe_node_reply_bytes",
        Unit::Bytes,
        "Bytes of replies to remote askers queued or being written now."
    );
    count("troupe_node_replies_dropped_total", "Replies dropped (asker's peer down, or past the reply budget).");
    count("troupe_node_limit_closes_total", "Sessions closed because their peer went past a budget.");
    count("troupe_node_log_lines_suppressed_total", "Warning lines suppressed by the log rate limit.");
    count("troupe_node_log_lines_dropped_total", "Log lines dropped because stderr did not keep up.");
}
