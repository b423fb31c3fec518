//! One peer node as this node sees it: its lanes (outbound connections, one set per channel;
//! each lane's queue and writer rules are in `lane.rs`), its status, and the monitors and links
//! that cross to it.
//!
//! Rules:
//! 1. A lane is picked per send: an explicit partition key, else (with affinity) a hash of
//!    sender and receiver, else at random. The same pair therefore always uses one lane, so
//!    per-pair FIFO holds.
//! 2. Every session (successful connect) has a generation; tasks of an older generation can
//!    neither bring the peer down nor deliver into the new session.
//! 3. Acknowledged frames stay in their lane's `unacked` map until the peer acks them, and are
//!    retransmitted (through fault injection again) every `ack_timeout`.
//! 4. A frame whose encoded size the sender knows and that is large (`lane.rs` rule 4) is
//!    encoded outside the lane's lock into a buffer of its size and queued as its own segment;
//!    every other frame on the hot path is encoded straight into the lane's batch buffer.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use troupe::{AnyRef, ExitReason, MonitorId};

use crate::error::Error;
use crate::fault::Verdict;
use crate::frame::{kind, write_frame};
use crate::logging::Esc;
pub(crate) use crate::node::lane::Lane;
use crate::node::lane::{Seg, LARGE_FRAME};
use crate::node::Shared;
use crate::proto::Control;

/// A peer's connection status.
#[derive(Clone, Debug)]
pub(crate) enum Status {
    Down(Option<Error>),
    Connecting,
    Up,
}

/// Rule 4: room beyond a body's encoded size for the frame and data headers and the reply
/// trailer, so a large frame's buffer does not regrow (only a target name over ~1 KB can make
/// it grow once).
const FRAME_SLACK: usize = 1024;

/// A frame body's encoded size (rule 4): all of it, and what is copied into the frame buffer
/// when its large `SharedBlob`s are sent from where they are (`blob.rs` rule 4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size {
    pub(crate) full: usize,
    pub(crate) copied: usize,
}

impl Size {
    /// `v`'s sizes, when it serialises; the spliced size is counted only for a large body.
    pub(crate) fn of<T: serde::Serialize + ?Sized>(v: &T) -> Option<Size> {
        let full = crate::codec::size_hint(v)?;
        let copied =
            if full >= LARGE_FRAME { crate::codec::size_hint_spliced(v).unwrap_or(full).min(full) } else { full };
        Some(Size { full, copied })
    }
}

/// `blob.rs` rule 4: a frame encoded with its spliced blobs left out, as the lane's pieces in
/// order: its length field counts the blobs, and each blob follows the encoded bytes before it.
fn pieces(mut frame: Vec<u8>, at: Vec<(usize, bytes::Bytes)>) -> Result<Vec<Seg>, Error> {
    let spliced: usize = at.iter().map(|(_, b)| b.len()).sum();
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize + spliced;
    let len32 = u32::try_from(len)
        .map_err(|_| Error::from(crate::error::ErrorKind::FrameTooLarge { size: len, max: u32::MAX as usize }))?;
    frame[..4].copy_from_slice(&len32.to_be_bytes());
    let frame = bytes::Bytes::from(frame);
    let mut out = Vec::with_capacity(2 * at.len() + 1);
    let mut from = 0;
    for (off, b) in at {
        if off > from {
            out.push(Seg::Bytes(frame.slice(from..off)));
        }
        out.push(Seg::Bytes(b));
        from = off;
    }
    if from < frame.len() {
        out.push(Seg::Bytes(frame.slice(from..)));
    }
    Ok(out)
}

thread_local! {
    /// Rule 4: where a frame of unknown size is encoded (taken out while in use, so a
    /// serialiser that sends from inside cannot reach it twice).
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Puts a cleared scratch buffer back: a large one goes to the node's pool instead.
fn keep_scratch(shared: &Shared, mut v: Vec<u8>) {
    if v.capacity() >= LARGE_FRAME {
        shared.large.put(v);
    } else {
        v.clear();
        SCRATCH.set(v);
    }
}

/// A channel's lanes to one peer.
pub(crate) struct ChannelLanes {
    pub(crate) name: Arc<str>,
    pub(crate) affinity: bool,
    pub(crate) lanes: Vec<Arc<Lane>>,
}

/// Who is told when a remote actor we monitor stops.
pub(crate) enum Watcher {
    Actor(AnyRef, MonitorId),
    Once(tokio::sync::oneshot::Sender<ExitReason>),
}

/// Monitors and links crossing to this peer.
#[derive(Default)]
pub(crate) struct Relations {
    /// Our monitors on their actors: our mid -> (their actor, watcher). Our numbers, so a
    /// cheap hasher (`IdMap`); their numbers below keep SipHash.
    pub(crate) monitors_out: crate::node::IdMap<(u64, Watcher)>,
    /// Their monitors on our actors: their mid -> (our actor, our monitor id).
    pub(crate) monitors_in: HashMap<u64, (AnyRef, MonitorId)>,
    /// Links: (our actor seq, their actor key) -> (our actor, how they address our actor).
    pub(crate) links: HashMap<(u64, u64), (AnyRef, crate::frame::Target)>,
}

/// Most acknowledged frames an inbound lane holds back waiting for a missing one; past this the
/// gap is given up (counted in `order_gaps_skipped`) so a lost frame cannot pin memory forever.
const MAX_HELD: usize = 65_536;

/// Receiver-side state of one inbound lane for acknowledged frames (rule 3 of `inbound.rs`):
/// duplicates are dropped, and frames are released in sequence order, so acknowledged delivery
/// keeps per-lane (hence, with affinity, per-pair) FIFO even when a retransmission fills a gap.
#[derive(Default)]
pub(crate) struct Reorder {
    /// Every sequence number up to this one has been handled.
    delivered: u64,
    /// Frames that arrived ahead of a missing one: seq -> frame body.
    held: BTreeMap<u64, Vec<u8>>,
}

/// The receiver-side state of every inbound lane of one peer's session, with the bytes they
/// hold back (bounded by `max_held_bytes_per_session` and, over all peers, `max_held_bytes`).
#[derive(Default)]
pub(crate) struct Dedup {
    pub(crate) lanes: HashMap<(String, u16), Reorder>,
    /// Body bytes held in `lanes`.
    pub(crate) held_bytes: usize,
}

/// What to do with an acknowledged frame that arrived.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Seen before: drop it.
    Duplicate,
    /// Next in order: handle it now, then whatever [`Reorder::release`] gives.
    Deliver,
    /// Ahead of a gap: kept; `skipped` when a gap was given up to make room.
    Held { skipped: bool },
}

impl Reorder {
    pub(crate) fn arrive(&mut self, seq: u64, body: &[u8]) -> Arrival {
        if seq <= self.delivered || self.held.contains_key(&seq) {
            return Arrival::Duplicate;
        }
        if seq == self.delivered + 1 {
            self.delivered = seq;
            return Arrival::Deliver;
        }
        self.held.insert(seq, body.to_vec());
        let skipped = self.held.len() > MAX_HELD;
        if skipped {
            if let Some((&first, _)) = self.held.first_key_value() {
                self.delivered = first - 1;
            }
        }
        Arrival::Held { skipped }
    }

    /// Drops every held frame (keeping what was delivered); returns their bytes.
    pub(crate) fn drop_held(&mut self) -> usize {
        std::mem::take(&mut self.held).values().map(Vec::len).sum()
    }

    /// The next held frame, when it is now in order.
    pub(crate) fn release(&mut self) -> Option<Vec<u8>> {
        let (&s, _) = self.held.first_key_value()?;
        if s != self.delivered + 1 {
            return None;
        }
        self.delivered = s;
        self.held.pop_first().map(|(_, b)| b)
    }
}

pub(crate) struct Session {
    pub(crate) name: String,
    pub(crate) incarnation: u64,
    pub(crate) generation: u64,
    pub(crate) tasks: Vec<AbortHandle>,
}

/// A peer node.
pub(crate) struct Peer {
    pub(crate) index: u16,
    pub(crate) addr: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) channels: Vec<ChannelLanes>,
    pub(crate) status: watch::Sender<Status>,
    pub(crate) up: AtomicBool,
    pub(crate) session: Mutex<Session>,
    pub(crate) last_seen_us: AtomicU64,
    pub(crate) relations: Mutex<Relations>,
    pub(crate) dedup: Mutex<Dedup>,
    /// Bytes of causal frames from this peer held for their causes (`causal_wire.rs` rule 5).
    pub(crate) causal_bytes: AtomicU64,
    /// Live connections it dialled to us (rule 9 of `node/mod.rs`).
    pub(crate) inbound: std::sync::atomic::AtomicUsize,
    /// Bytes of large frames its connections are receiving (rule 11 of `node/mod.rs`).
    pub(crate) partial_bytes: std::sync::atomic::AtomicUsize,
    /// Keep reconnecting (a configured peer, or one we were asked to connect to).
    pub(crate) keep: AtomicBool,
    /// A session with it has been up at least once (a known member: rule 7 of `node/mod.rs`).
    pub(crate) ever_up: AtomicBool,
    /// Its current session's `Welcome` advertised W3C trace context (`otel.rs`).
    #[cfg(feature = "otel")]
    pub(crate) trace_context: AtomicBool,
    /// Whether the peer decodes `RefuseReason::UnknownType` (`handshake.rs` rule 9), and the
    /// refusals waiting to learn it ([`Peer::refuse_typed`]).
    pub(crate) refusals: Mutex<Refusals>,
    /// The neighbour our current session's connections are routed through (`relay.rs`);
    /// `None` for direct TCP.
    pub(crate) via: Mutex<Option<String>>,
    /// How the peer's control connection to us came, in its current session (`relay.rs` rule
    /// 6): ours to it takes the same path; `None` before it came.
    pub(crate) came: Mutex<Option<Came>>,
    /// A data, reply or causal frame went either way since [`crate::Node::session_use`] last
    /// looked (the overlay closes idle routed sessions: `troupe_cluster` `links.rs` rule 4).
    pub(crate) used: AtomicBool,
    /// [`crate::Node::dial_directly`]: the next session goes over TCP whatever the router says.
    pub(crate) direct_hint: AtomicBool,
    /// Our current session's `Welcome` advertised batched `Down`s (`downs.rs` rule 2).
    pub(crate) batched_downs: AtomicBool,
    /// `Down`s waiting for their flush (`downs.rs` rule 1).
    pub(crate) downs: Mutex<Vec<crate::node::downs::PendingDown>>,
}

/// The path a peer's control connection to this node came by (`relay.rs` rule 6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Came {
    /// Over TCP.
    Tcp,
    /// Through a tunnel from this neighbour.
    Through(String),
}

/// The most typed refusals held for a peer whose features are not known yet; past it they go
/// out at once as `Undecodable`, which every build decodes.
const MAX_HELD_REFUSALS: usize = 256;

/// What a peer's current session advertised about typed refusals: `None` until our first
/// session with it is up. A frame can arrive on the peer's own connection before that, and
/// the refusal it earns goes back over ours, so it waits (issue 31: an ask refused in that
/// window came back untyped, as `NoReply`).
#[derive(Default)]
pub(crate) struct Refusals {
    typed: Option<bool>,
    /// Each refusal as `(typed, untyped)`.
    held: Vec<(Control, Control)>,
}

impl Peer {
    pub(crate) fn new(index: u16, addr: String, shared: Arc<Shared>) -> Self {
        let channels = shared
            .channels
            .iter()
            .map(|c| {
                let name: Arc<str> = Arc::from(c.name.as_str());
                let lanes = (0..c.parallelism).map(|i| Arc::new(Lane::new(name.clone(), i))).collect();
                ChannelLanes { name, affinity: c.affinity, lanes }
            })
            .collect();
        Self {
            index,
            addr,
            shared,
            channels,
            status: watch::channel(Status::Down(None)).0,
            up: AtomicBool::new(false),
            session: Mutex::new(Session { name: String::new(), incarnation: 0, generation: 0, tasks: Vec::new() }),
            last_seen_us: AtomicU64::new(0),
            relations: Mutex::new(Relations::default()),
            dedup: Mutex::new(Dedup::default()),
            causal_bytes: AtomicU64::new(0),
            inbound: std::sync::atomic::AtomicUsize::new(0),
            partial_bytes: std::sync::atomic::AtomicUsize::new(0),
            keep: AtomicBool::new(false),
            ever_up: AtomicBool::new(false),
            #[cfg(feature = "otel")]
            trace_context: AtomicBool::new(false),
            refusals: Mutex::new(Refusals::default()),
            via: Mutex::new(None),
            came: Mutex::new(None),
            used: AtomicBool::new(false),
            direct_hint: AtomicBool::new(false),
            batched_downs: AtomicBool::new(false),
            downs: Mutex::new(Vec::new()),
        }
    }

    #[inline]
    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// `relay.rs`: the neighbour our session is routed through, if any.
    pub(crate) fn via(&self) -> Option<String> {
        self.via.lock().clone()
    }

    pub(crate) fn name(&self) -> String {
        self.session.lock().name.clone()
    }

    pub(crate) fn generation(&self) -> u64 {
        self.session.lock().generation
    }

    pub(crate) fn seen(&self) {
        self.last_seen_us.store(self.shared.now_us(), Ordering::Relaxed);
    }

    pub(crate) fn control_lane(&self) -> &Arc<Lane> {
        &self.channels[0].lanes[0]
    }

    /// Rule 1.
    pub(crate) fn pick_lane(&self, channel: usize, key: Option<u64>, sender: u64, target: u64) -> &Arc<Lane> {
        let ch = &self.channels[channel.min(self.channels.len() - 1)];
        let n = ch.lanes.len();
        if n == 1 {
            return &ch.lanes[0];
        }
        let i = match key {
            Some(k) => mix(k) as usize % n,
            None if ch.affinity => mix(sender ^ mix(target)) as usize % n,
            None => fastrand() as usize % n,
        };
        &ch.lanes[i]
    }

    /// Queues a frame whose body `body` writes, applying fault injection and the buffer limit.
    /// With `ack`, the frame gets a sequence number (written by `body` from the argument) and
    /// is kept for retransmission. `size`, when known, is the body's encoded size (rule 4).
    pub(crate) fn send_frame(
        &self,
        lane: &Lane,
        kind: u8,
        ack: bool,
        size: Option<Size>,
        body: impl FnOnce(&mut Vec<u8>, u64) -> Result<(), Error>,
    ) -> Result<(), SendFail> {
        // Read first: a line every sender shares is written once per look, not per frame.
        if kind != kind::CONTROL && !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        if !ack && !self.shared.faults.active() {
            if size.is_some_and(|n| n.full < LARGE_FRAME) {
                // The hot path: a small frame, encoded straight into the lane's buffer.
                let mut g = lane.buf.lock();
                if g.queued() > self.shared.max_buffer {
                    return Err(SendFail::Full);
                }
                let was_empty = g.is_empty();
                let before = g.out.len();
                write_frame(&mut g.out, kind, |b| body(b, 0)).map_err(SendFail::Encode)?;
                if kind == kind::REPLY {
                    let n = g.out.len() - before;
                    g.charge_reply(&self.shared, n); // rule 6 of `lane.rs`
                }
                self.shared.stats.frames_out.fetch_add(1, Ordering::Relaxed);
                lane.kick(&self.shared, g, was_empty);
                return Ok(());
            }
            return self.send_unsized(lane, kind, size, body);
        }
        let seq = if ack {
            let mut g = lane.buf.lock();
            let s = g.next_seq;
            g.next_seq += 1;
            s
        } else {
            0
        };
        let mut bytes = Vec::with_capacity(size.filter(|n| n.full >= LARGE_FRAME).map_or(0, |n| n.full + FRAME_SLACK));
        write_frame(&mut bytes, kind, |b| body(b, seq)).map_err(SendFail::Encode)?;
        if lane.buf.lock().queued() > self.shared.max_buffer {
            return Err(SendFail::Full);
        }
        let bytes = Arc::new(bytes);
        if ack {
            lane.buf.lock().unacked.insert(seq, (Instant::now(), bytes.clone()));
        }
        self.shared.stats.frames_out.fetch_add(1, Ordering::Relaxed);
        self.inject(lane, bytes);
        Ok(())
    }

    /// Rule 4: a large frame, or one whose size is not known (`size` is `None`), encoded
    /// outside the lane's lock into a pooled or per-thread buffer (rule 5 of `lane.rs`), then
    /// queued as a segment when large or copied into the batch when small.
    fn send_unsized(
        &self,
        lane: &Lane,
        kind: u8,
        size: Option<Size>,
        body: impl FnOnce(&mut Vec<u8>, u64) -> Result<(), Error>,
    ) -> Result<(), SendFail> {
        if lane.buf.lock().queued() > self.shared.max_buffer {
            return Err(SendFail::Full);
        }
        if let Some(n) = size.filter(|n| n.copied < n.full) {
            // `blob.rs` rule 4: its large shared blobs are sent from where they are.
            let mut frame = Vec::with_capacity(n.copied + FRAME_SLACK);
            let (encoded, at) = crate::codec::splicing(&mut frame, |f| write_frame(f, kind, |b| body(b, 0)));
            encoded.map_err(SendFail::Encode)?;
            let pieces = pieces(frame, at).map_err(SendFail::Encode)?;
            if !lane.push_large(&self.shared, kind == kind::REPLY, pieces) {
                return Err(SendFail::Full);
            }
            self.shared.stats.frames_out.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let mut frame = match size {
            Some(n) => self.shared.large.take(n.full + FRAME_SLACK),
            None => match SCRATCH.take() {
                v if v.capacity() > 0 => v,
                _ => self.shared.large.take(0),
            },
        };
        let encoded = write_frame(&mut frame, kind, |b| body(b, 0));
        if let Err(e) = encoded {
            keep_scratch(&self.shared, frame);
            return Err(SendFail::Encode(e));
        }
        if frame.len() >= LARGE_FRAME {
            if !lane.push_large(&self.shared, kind == kind::REPLY, [Seg::Own(frame)]) {
                return Err(SendFail::Full);
            }
        } else {
            let mut g = lane.buf.lock();
            let was_empty = g.is_empty();
            g.out.extend_from_slice(&frame);
            if kind == kind::REPLY {
                g.charge_reply(&self.shared, frame.len()); // rule 6 of `lane.rs`
            }
            lane.kick(&self.shared, g, was_empty);
            keep_scratch(&self.shared, frame);
        }
        self.shared.stats.frames_out.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Sends already-encoded frame bytes through fault injection.
    pub(crate) fn inject(&self, lane: &Lane, bytes: Arc<Vec<u8>>) {
        if !self.shared.faults.active() {
            lane.push_frame(&self.shared, &bytes);
            return;
        }
        let stats = &self.shared.stats;
        match self.shared.faults.verdict(&self.addr, &lane.channel) {
            Verdict::Pass => lane.push_frame(&self.shared, &bytes),
            Verdict::Drop => {
                stats.fault_dropped.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Send { copies, delay } => {
                if copies > 1 {
                    stats.fault_duplicated.fetch_add(1, Ordering::Relaxed);
                }
                if delay.is_zero() {
                    for _ in 0..copies {
                        lane.push_frame(&self.shared, &bytes);
                    }
                } else {
                    stats.fault_delayed.fetch_add(1, Ordering::Relaxed);
                    let lane = self.lane_arc(lane);
                    let shared = self.shared.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        for _ in 0..copies {
                            lane.push_frame(&shared, &bytes);
                        }
                    });
                }
            }
        }
    }

    fn lane_arc(&self, lane: &Lane) -> Arc<Lane> {
        for ch in &self.channels {
            for l in &ch.lanes {
                if std::ptr::eq(&**l, lane) {
                    return l.clone();
                }
            }
        }
        unreachable!("a lane always belongs to its peer")
    }

    /// Sends a control message on the control lane.
    pub(crate) fn control(&self, msg: &Control) {
        let r =
            self.send_frame(self.control_lane(), kind::CONTROL, false, None, |b, _| crate::codec::encode_into(msg, b));
        if let Err(e) = r {
            crate::warn_limited!(peer = %Esc(&self.addr), "control message not sent: {e:?}");
        }
    }

    /// Sends a refusal that names an unknown type (`handshake.rs` rule 9): `typed` to a peer
    /// whose session advertised typed refusals, `untyped` to one that did not, and, while no
    /// session with the peer has been up yet, whichever fits once one is
    /// ([`Peer::set_typed_refusals`]).
    pub(crate) fn refuse_typed(&self, typed: Control, untyped: Control) {
        let mut r = self.refusals.lock();
        let send = match r.typed {
            Some(true) => typed,
            Some(false) => untyped,
            None if r.held.len() < MAX_HELD_REFUSALS => {
                r.held.push((typed, untyped));
                return;
            }
            None => untyped,
        };
        drop(r);
        self.control(&send);
    }

    /// Records what a new session advertised about typed refusals and sends the refusals held
    /// until it was known.
    pub(crate) fn set_typed_refusals(&self, yes: bool) {
        let held = {
            let mut r = self.refusals.lock();
            r.typed = Some(yes);
            std::mem::take(&mut r.held)
        };
        for (typed, untyped) in held {
            self.control(if yes { &typed } else { &untyped });
        }
    }

    /// Rule 3: frames unacknowledged for longer than `timeout` go out again.
    pub(crate) fn retransmit(&self, timeout: Duration) {
        let now = Instant::now();
        for ch in &self.channels {
            for lane in &ch.lanes {
                let due: Vec<Arc<Vec<u8>>> = {
                    let mut g = lane.buf.lock();
                    g.unacked
                        .values_mut()
                        .filter(|(t, _)| now.duration_since(*t) >= timeout)
                        .map(|(t, b)| {
                            *t = now;
                            b.clone()
                        })
                        .collect()
                };
                for b in due {
                    self.shared.stats.retransmits.fetch_add(1, Ordering::Relaxed);
                    self.inject(lane, b);
                }
            }
        }
    }

    pub(crate) fn acked(&self, channel: &str, lane: u16, seqs: &[u64]) {
        if let Some(ch) = self.channels.iter().find(|c| &*c.name == channel) {
            if let Some(l) = ch.lanes.get(lane as usize) {
                let mut g = l.buf.lock();
                for s in seqs {
                    g.unacked.remove(s);
                }
            }
        }
    }

    /// Forgets every inbound lane's order state (the session ended) and returns the held
    /// bytes to the node's account.
    /// Drops what is held for order; the bytes it held.
    pub(crate) fn clear_dedup(&self) -> usize {
        let mut d = self.dedup.lock();
        let n = std::mem::take(&mut d.held_bytes);
        d.lanes.clear();
        drop(d);
        self.shared.stats.held_bytes.fetch_sub(n as u64, Ordering::Relaxed);
        n
    }

    /// The inbound connection of `channel`/`lane` ended: what it held back can never be
    /// released (a gap is filled by retransmission on the same connection; a new connection
    /// comes with a new session whose sequence numbers start again), so it is freed now.
    pub(crate) fn drop_held(&self, channel: &str, lane: u16) {
        let mut d = self.dedup.lock();
        let Some(r) = d.lanes.get_mut(&(channel.to_owned(), lane)) else { return };
        let n = r.drop_held();
        d.held_bytes = d.held_bytes.saturating_sub(n);
        drop(d);
        self.shared.stats.held_bytes.fetch_sub(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn unacked(&self) -> usize {
        self.channels.iter().flat_map(|c| &c.lanes).map(|l| l.buf.lock().unacked.len()).sum()
    }
}

/// Why a frame was not queued.
#[derive(Debug)]
pub(crate) enum SendFail {
    Full,
    Encode(Error),
}

/// A 64-bit mixer (splitmix64's finaliser) for lane hashing.
#[inline]
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn fastrand() -> u64 {
    use std::cell::Cell;
    thread_local!(static S: Cell<u64> = Cell::new(rand::random::<u64>() | 1));
    S.with(|s| {
        let v = mix(s.get());
        s.set(v | 1);
        v
    })
}

#[cfg(test)]
mod tests {
    use super::{Arrival, Reorder, MAX_HELD};

    #[test]
    fn reorder_drops_duplicates_and_releases_in_sequence() {
        let mut r = Reorder::default();
        assert_eq!(r.arrive(1, b"1"), Arrival::Deliver);
        assert_eq!(r.arrive(3, b"3"), Arrival::Held { skipped: false });
        assert_eq!(r.arrive(4, b"4"), Arrival::Held { skipped: false });
        assert_eq!(r.arrive(3, b"3"), Arrival::Duplicate);
        assert_eq!(r.release(), None, "2 is still missing");
        assert_eq!(r.arrive(2, b"2"), Arrival::Deliver);
        assert_eq!(r.release().as_deref(), Some(&b"3"[..]));
        assert_eq!(r.release().as_deref(), Some(&b"4"[..]));
        assert_eq!(r.release(), None);
        assert_eq!(r.arrive(2, b"2"), Arrival::Duplicate);
    }

    #[test]
    fn reorder_gives_up_a_gap_when_too_much_waits_behind_it() {
        let mut r = Reorder::default();
        for s in 0..MAX_HELD as u64 {
            assert_eq!(r.arrive(s + 2, b"x"), Arrival::Held { skipped: false });
        }
        assert_eq!(r.arrive(MAX_HELD as u64 + 2, b"x"), Arrival::Held { skipped: true });
        let mut n = 0;
        while r.release().is_some() {
            n += 1;
        }
        assert_eq!(n, MAX_HELD + 1, "everything after the lost frame 1 is released in order");
        assert_eq!(r.arrive(1, b"late"), Arrival::Duplicate, "the lost frame is given up for good");
    }
}
