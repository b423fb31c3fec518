//! The device-tracking messages (rules in `devices/mod.rs`): what a device says to a server's
//! desk and tracker, what they say back, and the per-device record servers replicate. Local
//! variants (timers, internal notes) share the enums because a remote ref is typed by one
//! message type; a peer sending them gains nothing (they only re-run local checks).

use serde::{Deserialize, Serialize};
use troupe::{ActorRef, ReplyTo};
use troupe_remote::{Nested, RemoteMessage};

/// The protocol version a device states in its `Hello` (rule 2).
pub const PROTOCOL_VERSION: u32 = 1;

/// The name a server's desk is exported under on its node.
pub const DESK: &str = "troupe-devices";

/// A device's first words to a server (rule 1).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version the device speaks.
    pub version: u32,
    /// The device's name (its key on the ring).
    pub device: String,
    /// Which life of the device this is (0 for the first start).
    pub incarnation: u64,
    /// When this incarnation started, wall clock µs since the epoch.
    pub started_us: i64,
    /// Whether an owner already summed a report of this incarnation (a re-home, not a
    /// recovery: no new [`super::ServerEvent::StatusCurrent`]).
    pub reported: bool,
    /// Where the server answers.
    pub reply_to: ActorRef<DeviceMsg>,
}

/// One device's status as servers replicate it (rule 8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// The device's name.
    pub device: String,
    /// Its latest incarnation seen.
    pub incarnation: u64,
    /// When that incarnation started, µs.
    pub started_us: i64,
    /// The server that tracks it (its address).
    pub owner: String,
    /// Reports summed for this incarnation.
    pub reports: u64,
    /// Sum of all values reported by this incarnation.
    pub total: i64,
    /// When the last report was summed, µs.
    pub last_report_us: i64,
}

impl DeviceRecord {
    /// Whether `self` is newer than `other` (rule 8's merge order: incarnation, then reports).
    pub fn newer_than(&self, other: &DeviceRecord) -> bool {
        (self.incarnation, self.reports) > (other.incarnation, other.reports)
    }
}

/// What a desk counted, for collectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskTotals {
    /// Reports summed by this server's trackers since it started.
    pub reports: u64,
    /// Devices it tracks now.
    pub tracked: u64,
    /// Devices disconnected for a wrong protocol version or a malformed report.
    pub refused: u64,
    /// Trackers stood down (rules 9 and 10).
    pub stood_down: u64,
}

impl RemoteMessage for DeskTotals {
    const TAG: &'static str = "troupe.devices.totals.v1";
}

/// What a server's desk receives.
#[derive(Debug, Serialize, Deserialize)]
pub enum DeskMsg {
    /// A device says hello (rules 1-4).
    Hello(Hello),
    /// Records from another server (rule 8); acknowledged with the count merged when asked.
    Status {
        /// The sender's address.
        from: String,
        /// Its records.
        records: Vec<DeviceRecord>,
        /// Where to acknowledge, if the sender waits.
        ack: Option<ReplyTo<u64>>,
    },
    /// A collector asks for the counters.
    Totals(ReplyTo<DeskTotals>),
    /// The records this server holds (for tests and tools).
    Records(ReplyTo<Records>),
    /// Local: the live servers changed (rule 10).
    Members(Vec<String>),
    /// Local: time to send the owned records to the others (rule 8).
    Sync,
    /// Local: a tracker ended.
    TrackerEnded {
        /// Its device.
        device: String,
        /// Its serial number on this server.
        serial: u64,
    },
}

impl RemoteMessage for DeskMsg {
    const TAG: &'static str = "troupe.devices.desk.v1";
    fn nested(n: &mut Nested) {
        n.add::<DeviceMsg>();
        n.add::<u64>();
        n.add::<DeskTotals>();
        n.add::<Records>();
    }
}

/// The records a server holds, sorted by device name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Records(pub Vec<DeviceRecord>);

impl RemoteMessage for Records {
    const TAG: &'static str = "troupe.devices.records.v1";
}

/// What a device receives.
#[derive(Debug, Serialize, Deserialize)]
pub enum DeviceMsg {
    /// The owner took the device; talk to `tracker` (rule 4).
    Welcome {
        /// The owner's address.
        owner: String,
        /// The per-device tracker.
        tracker: ActorRef<TrackerMsg>,
    },
    /// Not the owner; say hello to `owner` (rule 3).
    Redirect {
        /// The owner by the sender's ring.
        owner: String,
    },
    /// The owner's heartbeat (rule 5).
    Heartbeat {
        /// The sender's address.
        owner: String,
    },
    /// The owner asks for a report (rule 6).
    Request {
        /// The sender's address.
        owner: String,
        /// The request number.
        req: u64,
    },
    /// The device belongs to another server now (rule 10).
    Rehome {
        /// The new owner.
        owner: String,
    },
    /// The server refuses the device (rules 2 and 7).
    Disconnect {
        /// Why.
        reason: String,
    },
    /// Local: the device's timer.
    Tick,
    /// Local: a message held back by the link-fault delay.
    Delayed(Box<DeviceMsg>),
}

impl RemoteMessage for DeviceMsg {
    const TAG: &'static str = "troupe.devices.device.v1";
    fn nested(n: &mut Nested) {
        n.add::<TrackerMsg>();
    }
}

/// What a tracker receives.
#[derive(Debug, Serialize, Deserialize)]
pub enum TrackerMsg {
    /// The device's heartbeat (rule 5).
    Beat,
    /// A report (rule 6).
    Report {
        /// The request it answers.
        req: u64,
        /// The values.
        values: Vec<i64>,
    },
    /// Local: the tracker's timer.
    Tick,
    /// Local: stand down, telling the device to go to `rehome` when given (rules 9, 10).
    StandDown {
        /// Why.
        reason: String,
        /// The new owner to send the device to.
        rehome: Option<String>,
    },
    /// Local: one round of the first report's replication finished (rule 8).
    Replicated {
        /// The servers asked that did not acknowledge in time.
        missing: Vec<String>,
    },
    /// Local: the device said hello again (same incarnation); welcome it again.
    Rewelcome(ActorRef<DeviceMsg>),
}

impl RemoteMessage for TrackerMsg {
    const TAG: &'static str = "troupe.devices.tracker.v1";
    fn nested(n: &mut Nested) {
        n.add::<DeviceMsg>();
    }
}

/// Sends `make()` to `to` every `period` (first after one period) until a send fails, i.e.
/// until the actor has stopped. (`Ctx::interval` needs a `Clone` message; these enums carry
/// reply handles, which are not.)
pub(super) fn every<M: Send + 'static>(to: ActorRef<M>, period: std::time::Duration, make: fn() -> M) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if to.send(make()).is_err() {
                break;
            }
        }
    });
}
