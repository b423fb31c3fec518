//! One outbound connection slot of a peer (a *lane*): the queue of encoded frames waiting for
//! its socket, and who may write them. A peer has one set of lanes per channel (`peer.rs`).
//!
//! Rules:
//! 1. A lane queues encoded frames in send order; its writer task takes everything queued per
//!    turn, so frames queued while a write is in flight go out together (batching). Frames
//!    queued before the lane is connected wait in the queue; a queue over `max_buffer_bytes`
//!    refuses sends.
//! 2. One writer at a time owns a lane's socket ([`Owner`]): the writer task, or a sender
//!    writing through. Only the owner writes, and bytes leave in queue order.
//! 3. Write-through: a small frame queued on an idle lane (nothing queued, no owner, connected,
//!    no write-through in the last `WRITE_THROUGH_GAP_US`) is written by the sender itself with
//!    one non-blocking `try_write`, saving the wake-up of the writer task (the round-trip
//!    latency of a lone message). What the socket does not take goes back to the front of the
//!    queue and the writer task takes over. A second frame soon after finds the gap not yet
//!    passed and wakes the writer task instead, so streams of sends are still batched (rule 1).
//! 4. Large frames (at least [`LARGE_FRAME`] bytes) are never copied into the batch buffer:
//!    each is queued as a segment of its own, a buffer the sender encoded it into once (sized
//!    from the message's encoded size) or the retransmission copy it shares (acknowledged
//!    frames), and the writer writes it from there. The small frames queued before it are
//!    closed into a segment first, so order holds. A large frame never writes through: the
//!    writer task sends it. A frame whose large `SharedBlob`s were left out of its encoding
//!    (`blob.rs` rule 4) is queued as its pieces in order, the blobs' bytes among them, all
//!    under one lock so no other frame comes between. (Copying a multi-megabyte frame into a
//!    growing batch buffer cost a regrowth per doubling, each on freshly zeroed pages: that
//!    was most of the CPU time of the `latency` workload at 8 MiB.)
//! 5. The writer keeps the buffers of the large frames it wrote ([`LargeBufs`], at most
//!    `POOL_MAX` buffers and `POOL_MAX_BYTES` in all per node) and senders encode the next large
//!    frames into them, so a stream of large messages reuses pages already mapped instead of
//!    faulting in fresh zeroed ones. A frame whose size the sender cannot know beforehand (its
//!    message holds a ref or a reply handle) is encoded into a per-thread scratch buffer, or a
//!    pooled one, then queued as a segment when large or copied into the batch when small.
//! 6. Reply frames (answers to remote askers) are counted while the lane holds them
//!    (`node/mod.rs` rule 10): as queued from when they are queued, as in flight once the
//!    socket's owner took them to write, until that write is done (the writer's next turn, or
//!    the sender's write-through returning; what the socket did not take goes back to the
//!    queue), and `reset` releases both. Every change is made under the lane's lock and applied
//!    to the node's `reply_bytes` gauge, so the gauge is the sum over all lanes. Other frames
//!    pay nothing for it; a reply pays one atomic add, and a turn that carried replies one
//!    subtract.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;

use crate::node::Shared;

/// Who owns a lane's socket for writing (rule 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Nobody,
    Task,
    Sender,
}

/// Rule 3: a lane writes through at most once per this many microseconds.
const WRITE_THROUGH_GAP_US: u64 = 50;

/// Rule 4: frames of at least this many bytes travel as segments of their own.
pub(crate) const LARGE_FRAME: usize = crate::frame::LARGE_AT_FRONT;

/// Rule 5: most buffers, and most bytes of buffer, a node's pool keeps.
const POOL_MAX: usize = 8;
const POOL_MAX_BYTES: usize = 64 << 20;

/// Rule 5: buffers of written large frames, for the next large frames.
#[derive(Default)]
pub(crate) struct LargeBufs(Mutex<Vec<Vec<u8>>>);

impl LargeBufs {
    /// An empty buffer with room for `at_least` bytes if one is kept (else the largest kept,
    /// else a new one with that room).
    pub(crate) fn take(&self, at_least: usize) -> Vec<u8> {
        let mut g = self.0.lock();
        let pick = g
            .iter()
            .position(|v| v.capacity() >= at_least)
            .or_else(|| (0..g.len()).max_by_key(|&i| g[i].capacity()).filter(|_| at_least == 0));
        match pick {
            Some(i) => g.swap_remove(i),
            None => Vec::with_capacity(at_least),
        }
    }

    /// Keeps `v` (cleared) for a later large frame, unless it is small or the pool is full.
    pub(crate) fn put(&self, mut v: Vec<u8>) {
        if v.capacity() < LARGE_FRAME {
            return;
        }
        v.clear();
        let mut g = self.0.lock();
        let held: usize = g.iter().map(Vec::capacity).sum();
        if g.len() < POOL_MAX && held + v.capacity() <= POOL_MAX_BYTES {
            g.push(v);
        }
    }

    /// Buffers kept (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().len()
    }
}

/// A queued buffer of whole frames (rule 4).
pub(crate) enum Seg {
    /// Frames owned by the queue: a closed batch, or one large frame.
    Own(Vec<u8>),
    /// One large frame shared with the lane's retransmission map.
    Shared(Arc<Vec<u8>>),
    /// A piece of a frame sent from where its bytes are (a spliced `SharedBlob`, or the
    /// encoded pieces around it: `blob.rs` rule 4).
    Bytes(bytes::Bytes),
}

impl Seg {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Seg::Own(v) => v,
            Seg::Shared(v) => v,
            Seg::Bytes(b) => b,
        }
    }
}

/// What the writer task takes per turn (rule 1): the segments, then the batch buffer.
pub(crate) struct Turn {
    pub(crate) segs: VecDeque<Seg>,
    pub(crate) out: Vec<u8>,
}

pub(crate) struct LaneBuf {
    /// Small frames, batched, after every segment (rule 1).
    pub(crate) out: Vec<u8>,
    /// Closed segments queued ahead of `out` (rule 4).
    segs: VecDeque<Seg>,
    seg_bytes: usize,
    pub(crate) owner: Owner,
    /// The connected socket, for write-through (rule 3); `None` while not connected.
    pub(crate) sink: Option<Arc<OwnedWriteHalf>>,
    last_through_us: u64,
    pub(crate) next_seq: u64,
    pub(crate) unacked: std::collections::BTreeMap<u64, (Instant, Arc<Vec<u8>>)>,
    /// Rule 6: bytes of reply frames queued, and taken by the socket's owner to write.
    reply_queued: usize,
    reply_inflight: usize,
}

impl LaneBuf {
    /// Bytes queued (rule 1's limit).
    pub(crate) fn queued(&self) -> usize {
        self.out.len() + self.seg_bytes
    }

    /// Nothing queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.out.is_empty() && self.segs.is_empty()
    }

    /// Rule 4: queues one large frame after everything queued so far.
    fn push_seg(&mut self, seg: Seg) {
        if !self.out.is_empty() {
            let batch = std::mem::take(&mut self.out);
            self.seg_bytes += batch.len();
            self.segs.push_back(Seg::Own(batch));
        }
        self.seg_bytes += seg.bytes().len();
        self.segs.push_back(seg);
    }

    /// The writer's turn: everything queued, in order; `spare` becomes the new batch buffer.
    pub(crate) fn take_turn(&mut self, spare: Vec<u8>) -> Turn {
        self.seg_bytes = 0;
        self.reply_inflight += std::mem::take(&mut self.reply_queued);
        Turn { segs: std::mem::take(&mut self.segs), out: std::mem::replace(&mut self.out, spare) }
    }

    /// Rule 6: `n` bytes of reply frames were queued.
    #[inline]
    pub(crate) fn charge_reply(&mut self, shared: &Shared, n: usize) {
        self.reply_queued += n;
        shared.stats.reply_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Rule 6: the socket's owner wrote what it took; at most `back` of it (the reply bytes
    /// among what the socket did not take) goes back to the queue's count.
    #[inline]
    pub(crate) fn written(&mut self, shared: &Shared, back: usize) {
        if self.reply_inflight == 0 {
            return;
        }
        let back = back.min(self.reply_inflight);
        self.reply_queued += back;
        let done = std::mem::take(&mut self.reply_inflight) - back;
        shared.stats.reply_bytes.fetch_sub(done as u64, Ordering::Relaxed);
    }

    /// Rule 6: bytes of replies this lane holds, queued or being written.
    pub(crate) fn reply_bytes(&self) -> usize {
        self.reply_queued + self.reply_inflight
    }
}

/// One outbound connection slot.
pub(crate) struct Lane {
    pub(crate) channel: Arc<str>,
    pub(crate) index: u16,
    pub(crate) buf: Mutex<LaneBuf>,
    pub(crate) notify: Notify,
}

impl Lane {
    pub(crate) fn new(channel: Arc<str>, index: u16) -> Self {
        Self {
            channel,
            index,
            buf: Mutex::new(LaneBuf {
                out: Vec::new(),
                segs: VecDeque::new(),
                seg_bytes: 0,
                owner: Owner::Nobody,
                sink: None,
                last_through_us: 0,
                next_seq: 1,
                unacked: std::collections::BTreeMap::new(),
                reply_queued: 0,
                reply_inflight: 0,
            }),
            notify: Notify::new(),
        }
    }

    /// Queues already-encoded frame bytes (a large frame shares them, rule 4), then rule 3.
    pub(crate) fn push_frame(&self, shared: &Shared, bytes: &Arc<Vec<u8>>) {
        let mut g = self.buf.lock();
        let was_empty = g.is_empty();
        if bytes.len() >= LARGE_FRAME {
            g.push_seg(Seg::Shared(bytes.clone()));
        } else {
            g.out.extend_from_slice(bytes);
        }
        if bytes.get(4) == Some(&crate::frame::kind::REPLY) {
            g.charge_reply(shared, bytes.len()); // rule 6
        }
        self.kick(shared, g, was_empty);
    }

    /// Rule 4: queues one large frame, whole or as its pieces in order, together after
    /// everything queued so far; a reply frame is counted (rule 6). False (nothing queued)
    /// when the queue is over `max_buffer` (rule 1).
    pub(crate) fn push_large(&self, shared: &Shared, reply: bool, pieces: impl IntoIterator<Item = Seg>) -> bool {
        let mut g = self.buf.lock();
        if g.queued() > shared.max_buffer {
            return false;
        }
        let was_empty = g.is_empty();
        let before = g.queued();
        for p in pieces {
            g.push_seg(p);
        }
        if reply {
            let n = g.queued() - before;
            g.charge_reply(shared, n);
        }
        self.kick(shared, g, was_empty);
        true
    }

    /// After frames were queued on a lane that was `was_empty`: writes them through (rule 3)
    /// or wakes the writer task when nobody owns the socket.
    pub(crate) fn kick(&self, shared: &Shared, mut g: MutexGuard<'_, LaneBuf>, was_empty: bool) {
        if !was_empty || g.owner != Owner::Nobody {
            return; // whoever owns the socket, or the pending wake-up, takes these bytes too
        }
        let through = shared.write_through && g.sink.is_some() && g.segs.is_empty();
        let now = if through { shared.now_us() } else { 0 };
        if now == 0 || now.saturating_sub(g.last_through_us) < WRITE_THROUGH_GAP_US {
            drop(g);
            self.notify.notify_one();
            return;
        }
        let Some(sink) = g.sink.clone() else { return };
        g.owner = Owner::Sender;
        g.last_through_us = now;
        let mut batch = std::mem::take(&mut g.out);
        // Rule 6: no segments are queued, so every queued reply is in the batch.
        g.reply_inflight += std::mem::take(&mut g.reply_queued);
        drop(g);
        let n = sink.try_write(&batch).unwrap_or(0);
        shared.stats.bytes_out.fetch_add(n as u64, Ordering::Relaxed);
        if n > 0 {
            shared.stats.writes_through.fetch_add(1, Ordering::Relaxed);
        }
        let mut g = self.buf.lock();
        g.written(shared, batch.len() - n);
        if n == batch.len() && g.is_empty() {
            batch.clear();
            g.out = batch; // keeps the capacity
            g.owner = Owner::Nobody;
            return;
        }
        // The rest goes to the writer task ahead of what others queued meanwhile, in order.
        batch.drain(..n);
        if g.segs.is_empty() {
            batch.extend_from_slice(&g.out);
            g.out = batch;
        } else if !batch.is_empty() {
            g.seg_bytes += batch.len();
            g.segs.push_front(Seg::Own(batch));
        }
        g.owner = Owner::Task;
        drop(g);
        self.notify.notify_one();
    }

    /// Drops everything queued (and forgets what is in flight); returns the bytes queued.
    pub(crate) fn reset(&self, shared: &Shared) -> usize {
        let mut g = self.buf.lock();
        let queued = g.queued();
        g.out = Vec::new();
        g.segs.clear();
        g.seg_bytes = 0;
        g.owner = Owner::Nobody;
        g.sink = None;
        g.next_seq = 1;
        g.unacked.clear();
        let replies = std::mem::take(&mut g.reply_queued) + std::mem::take(&mut g.reply_inflight);
        shared.stats.reply_bytes.fetch_sub(replies as u64, Ordering::Relaxed);
        queued.max(replies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(t: Turn) -> Vec<u8> {
        let mut all: Vec<u8> = t.segs.iter().flat_map(|s| s.bytes().iter().copied()).collect();
        all.extend_from_slice(&t.out);
        all
    }

    #[test]
    fn rule_4_a_large_frame_keeps_its_place_between_small_ones() {
        let lane = Lane::new(Arc::from("data"), 0);
        let mut g = lane.buf.lock();
        g.out.extend_from_slice(b"ab");
        g.push_seg(Seg::Own(vec![b'L'; LARGE_FRAME]));
        g.out.extend_from_slice(b"cd");
        assert_eq!(g.queued(), 4 + LARGE_FRAME);
        let t = g.take_turn(Vec::new());
        assert!(g.is_empty());
        assert_eq!(g.queued(), 0);
        assert_eq!(t.segs.len(), 2, "the small frames before it were closed into a segment");
        let all = frames(t);
        assert_eq!(&all[..2], b"ab");
        assert!(all[2..2 + LARGE_FRAME].iter().all(|&b| b == b'L'));
        assert_eq!(&all[2 + LARGE_FRAME..], b"cd");
    }

    #[test]
    fn rule_5_the_pool_hands_back_a_large_enough_buffer_and_stays_bounded() {
        let pool = LargeBufs::default();
        pool.put(vec![0; 100]);
        assert_eq!(pool.len(), 0, "a small buffer is not kept");
        pool.put(vec![1; 4 * LARGE_FRAME]);
        pool.put(vec![1; 2 * LARGE_FRAME]);
        let v = pool.take(3 * LARGE_FRAME);
        assert!(v.is_empty() && v.capacity() >= 3 * LARGE_FRAME);
        let w = pool.take(3 * LARGE_FRAME);
        assert!(w.capacity() >= 3 * LARGE_FRAME, "none large enough kept: a new one");
        assert_eq!(pool.take(0).capacity(), 2 * LARGE_FRAME, "any size: the largest kept");
        for _ in 0..2 * POOL_MAX {
            pool.put(Vec::with_capacity(LARGE_FRAME));
        }
        assert_eq!(pool.len(), POOL_MAX);
        let big = LargeBufs::default();
        for _ in 0..POOL_MAX {
            big.put(Vec::with_capacity(POOL_MAX_BYTES / 2));
        }
        assert_eq!(big.len(), 2, "bounded by bytes too");
    }

    #[test]
    fn rule_4_a_shared_large_frame_is_not_copied() {
        let lane = Lane::new(Arc::from("data"), 0);
        let frame = Arc::new(vec![7u8; LARGE_FRAME]);
        let mut g = lane.buf.lock();
        g.push_seg(Seg::Shared(frame.clone()));
        let t = g.take_turn(Vec::new());
        match &t.segs[0] {
            Seg::Shared(s) => assert!(Arc::ptr_eq(s, &frame)),
            Seg::Own(_) | Seg::Bytes(_) => panic!("the shared frame was copied"),
        }
    }
}
