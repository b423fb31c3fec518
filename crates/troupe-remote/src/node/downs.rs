//! Remote monitors' `Down`s, sent and received in batches (issue 30: a chat with 50,000
//! remote clients used to send 50,000 frames when it died, one per monitor).
//!
//! Rules:
//! 1. A `Down` for a peer whose current session advertised batched `Down`s
//!    (`handshake.rs` rule 9) is queued on the peer; the first one queued defers one flush
//!    (`troupe::remote_api::defer`), which the core runs once the dying actor has signalled
//!    every monitor (`remote_api.rs` rule 5). So the monitors one peer holds on an actor
//!    leave as `Control::Downs` frames of up to [`MAX_MIDS`] monitor numbers each, instead of
//!    one frame per monitor. A flush sends what is queued in runs of the same actor and
//!    reason, in queue order; a run of one is a plain `Down`.
//! 2. A peer that did not advertise them (an older build, or one whose session from us is not
//!    up yet, or went down: the flag is cleared then, as the peer may come back as an older
//!    build) gets one `Down` per monitor at once, as before.
//! 3. The receiver takes every monitor of a batch from the peer's table under one lock, then
//!    fires each; a number it does not hold (demonitored meanwhile) is skipped, as for a lone
//!    `Down`.
//! 4. `StatsSnapshot::downs_out` counts the `Down`s sent (one per monitor, batched or not) and
//!    `down_frames_out` the frames that carried them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use troupe::ExitReason;

use crate::node::peer::Peer;
use crate::proto::Control;

/// Rule 1: the most monitor numbers in one `Downs` frame (8 bytes each on the wire: 32 KiB).
/// A node whose `max_frame_bytes` is smaller puts fewer in each ([`Peer::flush_downs`]).
pub(crate) const MAX_MIDS: usize = 4096;

/// Room in a `Downs` frame for everything but the reason and the numbers.
const FRAME_ROOM: usize = 256;

/// A `Down` waiting for its flush: the actor, why it stopped, the monitor's number.
pub(crate) type PendingDown = (u64, ExitReason, u64);

impl Peer {
    /// Rules 1 and 2: monitor `mid`, which the peer holds on this node's actor `actor`, fired.
    pub(crate) fn send_down(self: &Arc<Self>, mid: u64, actor: u64, reason: ExitReason) {
        if !self.batched_downs.load(Ordering::Relaxed) {
            self.control(&Control::Down { mid, actor, reason });
            self.count_downs(1);
            return;
        }
        let first = {
            let mut q = self.downs.lock();
            q.push((actor, reason, mid));
            q.len() == 1
        };
        if first {
            let peer = self.clone();
            troupe::remote_api::defer(move || peer.flush_downs());
        }
    }

    /// Rule 1: sends every queued `Down`.
    fn flush_downs(&self) {
        let queued = std::mem::take(&mut *self.downs.lock());
        let mut it = queued.into_iter().peekable();
        while let Some((actor, reason, mid)) = it.next() {
            // Within this node's own frame limit (peers of one cluster share it), after the
            // reason and the headers.
            let reason_bytes = crate::codec::size_hint(&reason).unwrap_or(0);
            let room = self.shared.max_frame.saturating_sub(FRAME_ROOM + reason_bytes);
            let per_frame = (room / 8).clamp(1, MAX_MIDS);
            let mut mids = vec![mid];
            while mids.len() < per_frame {
                match it.next_if(|(a, r, _)| *a == actor && *r == reason) {
                    Some((_, _, m)) => mids.push(m),
                    None => break,
                }
            }
            let n = mids.len();
            if n == 1 {
                self.control(&Control::Down { mid, actor, reason });
            } else {
                self.control(&Control::Downs { actor, reason, mids });
            }
            self.count_downs(n);
        }
    }

    fn count_downs(&self, n: usize) {
        let s = &self.shared.stats;
        s.downs_out.fetch_add(n as u64, Ordering::Relaxed);
        s.down_frames_out.fetch_add(1, Ordering::Relaxed);
    }

    /// Rule 3: fires the monitors `mids` of a `Downs` frame.
    pub(crate) fn receive_downs(&self, reason: &ExitReason, mids: &[u64]) {
        let fired: Vec<_> = {
            let mut r = self.relations.lock();
            mids.iter().filter_map(|m| r.monitors_out.remove(m).map(|w| (*m, w))).collect()
        };
        for (mid, (key, w)) in fired {
            crate::node::conn::fire(self, key, mid, w, reason.clone());
        }
    }
}
