//! Mailbox configuration: unbounded (the default), or bounded with a policy for a full mailbox.
//!
//! Rules:
//! 1. Every actor has two lanes: system messages (exit signals, downs, stop requests) are always
//!    handled before user messages, and never count against the capacity.
//! 2. A bounded mailbox holds at most `capacity` user messages.
//! 3. `Backpressure`: `send` on a full mailbox returns `SendError` with the message, `send_wait`
//!    waits for room. `DropNewest`/`DropOldest`: the send succeeds and the newest (the one being
//!    sent) or oldest queued message is dropped and counted ([`crate::ActorRef::dropped`]).

/// What a bounded mailbox does when it is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// Refuse the send (message handed back) or make `send_wait` wait.
    #[default]
    Backpressure,
    /// Drop the message being sent, count it.
    DropNewest,
    /// Drop the oldest queued message to make room, count it.
    DropOldest,
}

/// An actor's mailbox: unbounded, or bounded with an [`Overflow`] policy.
///
/// ```
/// use troupe::{MailboxConfig, Overflow};
/// let m = MailboxConfig::bounded(64).with_overflow(Overflow::DropOldest);
/// assert_eq!(m.capacity(), Some(64));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MailboxConfig {
    cap: u32,
    overflow: Overflow,
}

impl MailboxConfig {
    /// An unbounded mailbox (the default).
    #[must_use]
    pub const fn unbounded() -> Self {
        Self { cap: 0, overflow: Overflow::Backpressure }
    }

    /// A mailbox holding at most `capacity` user messages, with backpressure.
    ///
    /// # Panics
    /// When `capacity` is 0 or above `u32::MAX` (as `tokio::sync::mpsc::channel(0)` does): a
    /// mailbox that can hold nothing is a programming error.
    #[must_use]
    pub fn bounded(capacity: usize) -> Self {
        assert!(
            capacity > 0 && capacity <= u32::MAX as usize,
            "MailboxConfig::bounded: capacity must be between 1 and {}, got {capacity}",
            u32::MAX
        );
        Self { cap: capacity as u32, overflow: Overflow::Backpressure }
    }

    /// Sets what happens when the bounded mailbox is full (no effect on an unbounded one).
    #[must_use]
    pub const fn with_overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// The capacity, or `None` when unbounded.
    #[must_use]
    pub const fn capacity(&self) -> Option<usize> {
        if self.cap == 0 {
            None
        } else {
            Some(self.cap as usize)
        }
    }

    /// The overflow policy.
    #[must_use]
    pub const fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// The bound as stored (0: unbounded), for a cell that keeps the parts apart.
    pub(crate) const fn raw_cap(&self) -> u32 {
        self.cap
    }

    /// Rebuilds a config from [`MailboxConfig::raw_cap`] and [`MailboxConfig::overflow`].
    pub(crate) const fn from_parts(cap: u32, overflow: Overflow) -> Self {
        Self { cap, overflow }
    }
}
