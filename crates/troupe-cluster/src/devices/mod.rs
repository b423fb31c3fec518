//! External device tracking (seed 003 §2.10): devices that are not cluster members report to
//! the server that the hash ring of the live servers picks as their owner. This module owns the
//! protocol between a device and the servers, the server side ([`DeviceServer`], one per server
//! node, with a per-device tracker actor) and the device side ([`Device`], one actor per
//! device), plus views of the live servers: a gossip cluster's members ([`cluster_membership`])
//! or connectivity alone ([`peer_membership`]).
//!
//! Protocol rules (version [`PROTOCOL_VERSION`]; `crates/troupe-cluster/tests/devices_*.rs`
//! check them one by one):
//! 1. **Seeds.** A device is given the addresses of the seed servers. It sends `Hello`
//!    (protocol version, name, incarnation, start time, its own ref) to the desk
//!    ([`DESK`]) of one seed, the next seed on every retry, every `hello_retry_ms` until it is
//!    welcomed.
//! 2. **Version.** A desk answers a `Hello` of another protocol version with `Disconnect`
//!    naming both versions, counts it ([`DeskTotals::refused`]) and reports
//!    [`ServerEvent::Refused`]; the device stops and reports [`DeviceEvent::Disconnected`].
//! 3. **Ring owner.** The owner of device `d` is `HashRing::node_for(d)` over the live servers
//!    as this server sees them. A desk that is not the owner answers `Redirect {owner}`; the
//!    device sends its `Hello` there (after three redirects in a row it waits
//!    `hello_retry_ms` first, so two servers with different views cannot make it spin).
//! 4. **Tracker.** The owner starts one tracker actor per device and answers `Welcome` with the
//!    tracker's ref. A second `Hello` of the same incarnation gets the same tracker; a newer
//!    incarnation replaces the tracker; an older one is ignored.
//! 5. **Heartbeats.** The tracker sends `Heartbeat` every `heartbeat_ms`; the device answers
//!    each one from its owner with `Beat`. Each side feeds what it receives to a phi-accrual
//!    detector ([`crate::PhiDetector`]), checked at every tick (a quarter of the period). A
//!    tracker whose device crosses `phi_threshold` stops ([`ServerEvent::DeviceLost`]); a device
//!    whose owner crosses it reports [`DeviceEvent::OwnerFailed`] and goes back to the seeds
//!    (rule 1), starting with the seed after the failed owner.
//! 6. **Reports.** The tracker asks `Request {req}`; the device answers `Report {req, values}`
//!    with the values its report function makes; the tracker checks the length
//!    (`report_len`), adds the sum to the device's total and asks `req + 1` at once. A request
//!    not answered within `report_timeout_ms` is asked again (same `req`); a report for another
//!    `req` is ignored, so a re-ask never counts twice.
//! 7. **Malformed.** A report of the wrong length disconnects the device: `Disconnect` with the
//!    reason, counted ([`DeskTotals::refused`]), [`ServerEvent::Refused`], the tracker stops.
//! 8. **Status replication.** Each server keeps a record per device (incarnation, owner,
//!    reports, last report time) and sends the records it owns to every other live server every
//!    `sync_ms`; records merge by (incarnation, reports) so every server converges. When a
//!    tracker sums the first report of an incarnation it sends the record to every other live
//!    server at once and waits for their acknowledgements, asking the live servers that did not
//!    acknowledge within `replicate_timeout_ms` again (ten rounds at most, then
//!    [`ServerEvent::StatusNotReplicated`]); once every server still live has acknowledged, the
//!    device's status is current and known to every server: [`ServerEvent::StatusCurrent`] (its
//!    `ms` from the device's start is the time to recover). A device that already had a report of this incarnation
//!    summed says so in its `Hello` (`reported`), so a re-home is not counted as a recovery.
//! 9. **Stand-down.** A server that learns from a record (rule 8) that another server tracks a
//!    device it tracks stands its tracker down ([`ServerEvent::StoodDown`]) when the other
//!    tracks a newer incarnation (the device lives there now), or when its own ring names
//!    another owner (the device is told to re-home there), or, when its ring names itself, if
//!    the other server's address is smaller (the device is told to re-home there). Servers
//!    whose views of the live servers differ thus still keep exactly one tracker per device.
//! 10. **Re-home.** When the live servers change, every server checks its trackers against the
//!     new ring; a tracker whose device now belongs elsewhere stands down and tells the device
//!     `Rehome {owner}`; the device says `Hello` to the new owner.
//!
//! Link faults for experiments ([`LinkFaults`]) are applied in the device only, to every
//! message it sends and receives, from its own seeded RNG.
//!
//! ```no_run
//! # async fn demo() -> Result<(), troupe_cluster::Error> {
//! use std::sync::Arc;
//! use troupe_cluster::devices::{peer_membership, Device, DeviceConfig, DeviceServer, ServerConfig};
//! use troupe_remote::{Node, NodeConfig};
//!
//! // Two servers that know each other.
//! let a = Node::start(NodeConfig::new("a", "s3cret")).await?;
//! let b = Node::start(NodeConfig::new("b", "s3cret")).await?;
//! let servers = vec![a.addr(), b.addr()];
//! for n in [&a, &b] {
//!     let live = peer_membership(n, servers.clone(), std::time::Duration::from_millis(200));
//!     DeviceServer::start(n, ServerConfig::default(), live, Arc::new(|_| {}))?;
//! }
//! // A device process: a node (not a cluster member) and one actor per device.
//! let d = Node::start(NodeConfig::new("devices", "s3cret")).await?;
//! let cfg = DeviceConfig::new("device-0", servers);
//! let device = Device::start(&d, cfg, Arc::new(|n| (1..=n as i64).collect()), |_| {});
//! # let _ = device; Ok(()) }
//! ```

mod client;
mod membership;
mod proto;
mod server;
mod tracker;

pub use client::{Device, DeviceConfig, DeviceEvent, DeviceObserver, LinkFaults, ReportFn};
pub use membership::{cluster_membership, peer_membership};
pub use proto::{DeskMsg, DeskTotals, DeviceMsg, DeviceRecord, Hello, Records, TrackerMsg, DESK, PROTOCOL_VERSION};
pub use server::{DeviceServer, ServerConfig, ServerEvent, ServerObserver};
