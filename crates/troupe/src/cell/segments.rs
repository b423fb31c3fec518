//! A long mailbox's tail, in fixed-size segments (`cell.rs`, rule 13).
//!
//! A mailbox's queue is one `VecDeque` while it is short. Once that front buffer is full at
//! [`seg_cap`] slots, further messages go to segments of `seg_cap` slots each, kept here (in
//! the cell's `Extra`, so a short mailbox pays nothing for them), and the front never grows
//! past that size. A mailbox filled faster than it is drained (a sender that runs before its
//! receiver on one worker) then costs one fixed-size allocation per segment, which the
//! allocator hands back from its free lists once earlier segments are drained, instead of a
//! doubling buffer whose every growth copies the whole queue into fresh memory.
//!
//! Rules:
//! 1. The queue in order is the front buffer, then the segments, oldest first.
//! 2. Segments are non-empty only while the front is: when the front is emptied (by a take or
//!    a whole-batch hand-over) the oldest segment becomes the front.
//! 3. A segment holds at most `seg_cap` messages; a push goes to the newest segment while it
//!    has room, else to a new one.

use std::collections::VecDeque;

/// About how many bytes a segment holds (the front buffer grows as a `VecDeque` up to it).
const SEG_BYTES: usize = 8 * 1024;
/// The fewest slots a segment has, for large messages.
const MIN_SEG: usize = 32;

/// The slots of a segment for messages of type `T` (rule 3).
pub(super) const fn seg_cap<T>() -> usize {
    let size = if std::mem::size_of::<T>() == 0 { 1 } else { std::mem::size_of::<T>() };
    let n = SEG_BYTES / size;
    if n < MIN_SEG {
        MIN_SEG
    } else {
        n
    }
}

/// The segments after the front buffer (rule 1), and how many messages they hold.
pub(super) struct Segments<T> {
    segs: VecDeque<VecDeque<T>>,
    len: usize,
}

impl<T> Default for Segments<T> {
    fn default() -> Self {
        Self { segs: VecDeque::new(), len: 0 }
    }
}

impl<T> Segments<T> {
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Messages held in the segments.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Rule 3: to the newest segment while it has room, else to a new one.
    pub(super) fn push(&mut self, msg: T) {
        let cap = seg_cap::<T>();
        match self.segs.back_mut() {
            Some(s) if s.len() < cap => s.push_back(msg),
            _ => {
                let mut s = VecDeque::with_capacity(cap);
                s.push_back(msg);
                self.segs.push_back(s);
            }
        }
        self.len += 1;
    }

    /// Rule 2: the oldest segment, to become the front.
    pub(super) fn take_oldest(&mut self) -> Option<VecDeque<T>> {
        let s = self.segs.pop_front()?;
        self.len -= s.len();
        Some(s)
    }

    /// Every segment, for a death to drop (`cell.rs`, rule 7).
    pub(super) fn take_all(&mut self) -> Segments<T> {
        std::mem::take(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_about_8_kib_and_never_under_32_slots() {
        assert_eq!(seg_cap::<u64>(), 1024);
        assert_eq!(seg_cap::<[u8; 1024]>(), 32);
        assert_eq!(seg_cap::<()>(), SEG_BYTES);
    }

    #[test]
    fn pushes_fill_the_newest_segment_then_open_another_in_order() {
        let mut s = Segments::<u64>::default();
        let cap = seg_cap::<u64>() as u64;
        for i in 0..cap * 2 + 3 {
            s.push(i);
        }
        assert_eq!(s.len(), (cap * 2 + 3) as usize);
        let first = s.take_oldest().expect("three segments");
        assert_eq!(first.len() as u64, cap);
        assert_eq!((first[0], first[first.len() - 1]), (0, cap - 1));
        assert_eq!(first.capacity() as u64, cap, "rule 3: a segment is allocated at its size once");
        let second = s.take_oldest().expect("two left");
        assert_eq!(second[0], cap);
        let third = s.take_oldest().expect("one left");
        assert_eq!(third.iter().copied().collect::<Vec<_>>(), vec![cap * 2, cap * 2 + 1, cap * 2 + 2]);
        assert!(s.is_empty() && s.take_oldest().is_none());
    }
}
