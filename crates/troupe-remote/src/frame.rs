//! Framing: every message on a connection is `[u32 big-endian length][u8 kind][body]`, where
//! the length counts the kind byte and the body.
//!
//! Rules:
//! 1. A length of 0 (no kind byte) is malformed; a length above the connection's limit is
//!    refused before any of the body is read or buffered.
//! 2. Before authentication the limit is [`HANDSHAKE_MAX`] (4 KiB), so an unauthenticated peer
//!    cannot make a node buffer more than that.
//! 3. The decoder never panics and never reads past what it was given; a frame split across
//!    reads is kept until it is complete.
//! 4. The data-frame header is a fixed little-endian layout (no serde on the hot path); every
//!    other body is a [`crate::codec`] value.
//! 5. A connection reads into the buffer's spare capacity ([`FrameBuf::room`]): nothing is
//!    zero-filled first, and a frame whose header has arrived gets room for all of it at once
//!    (within the connection's limit, rule 1), so a large frame is read into place instead of
//!    regrowing the buffer once per doubling.
//! 6. A large frame (at least the `large` given to [`FrameBuf::take_large`]) is moved to the
//!    front of the buffer before the rest of it is read, and once complete it is handed out as
//!    the buffer itself (owned bytes; what was read after it moves to a new buffer), so what
//!    it carries can be kept without a copy (`blob.rs`, `SharedBlob`).
//! 7. A data or reply header may carry an extension block ([`HeaderExt`]: W3C trace context,
//!    feature `otel`), flagged in the header itself: bit 7 of a data frame's target-kind byte
//!    ([`EXT_TARGET_FLAG`]), bit 63 of a reply frame's reply number ([`EXT_REPLY_FLAG`]). The
//!    block follows the fixed header: `[u8 n]`, then `n` entries `[u8 key][u16 LE len][len
//!    bytes]`; keys this build does not know are skipped, and an entry longer than the body is
//!    a malformed frame (closing the connection, as any). Without the flag the layout is the one
//!    nodes spoke before the block existed, so frames without it decode everywhere. A node only
//!    sends the block to a peer whose handshake `Welcome` advertised it (rule 9 of
//!    [`crate::handshake`]); a build without `otel` never advertises it, and builds from before
//!    the block, which would refuse the flag as an unknown target kind, never receive it. What
//!    an entry holds is checked by its user (`otel.rs`), never here: a bad value is dropped
//!    there and counted, the message is still delivered.

use crate::error::{Error, ErrorKind};

/// The frame-size limit while the handshake runs.
pub const HANDSHAKE_MAX: usize = 4096;
/// The default frame-size limit after it (16 MiB).
pub const DEFAULT_MAX_FRAME: usize = 16 << 20;
/// Rule 6: frames of at least this many bytes are read at the front of the buffer.
pub const LARGE_AT_FRONT: usize = 64 * 1024;

/// Frame kinds.
pub mod kind {
    /// Handshake: the dialler's hello.
    pub const HELLO: u8 = 1;
    /// Handshake: the acceptor's challenge and proof.
    pub const CHALLENGE: u8 = 2;
    /// Handshake: the dialler's proof.
    pub const PROOF: u8 = 3;
    /// Handshake: accepted.
    pub const WELCOME: u8 = 4;
    /// Handshake: refused, with a reason.
    pub const REFUSE: u8 = 5;
    /// A user message for an actor.
    pub const DATA: u8 = 16;
    /// The answer to a remote `ask`.
    pub const REPLY: u8 = 17;
    /// The runtime's own traffic (monitors, links, heartbeats, acks, names).
    pub const CONTROL: u8 = 18;
    /// A user message sent with a causal label: a causal stamp, then a DATA body
    /// (`node/causal_wire.rs`).
    pub const CAUSAL: u8 = 19;
}

/// Appends a frame with the given kind, its body written by `body`; patches the length.
pub fn write_frame(
    out: &mut Vec<u8>,
    kind: u8,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
) -> Result<(), Error> {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, kind]);
    if let Err(e) = body(out) {
        out.truncate(start);
        return Err(e);
    }
    let len = out.len() - start - 4;
    let Ok(len32) = u32::try_from(len) else {
        out.truncate(start);
        return Err(ErrorKind::FrameTooLarge { size: len, max: u32::MAX as usize }.into());
    };
    out[start..start + 4].copy_from_slice(&len32.to_be_bytes());
    Ok(())
}

/// Accumulates bytes read from a connection and cuts them into frames.
#[derive(Debug, Default)]
pub struct FrameBuf {
    buf: Vec<u8>,
    start: usize,
}

impl FrameBuf {
    /// An empty buffer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops the consumed bytes in front when they are all or most of the buffer.
    fn compact(&mut self) {
        if self.start > 0 && (self.start == self.buf.len() || self.start > self.buf.len() / 2) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    /// Room to read into: at least `n` bytes at the end, compacting consumed bytes first.
    pub fn spare(&mut self, n: usize) -> &mut [u8] {
        self.compact();
        let len = self.buf.len();
        self.buf.resize(len + n, 0);
        &mut self.buf[len..]
    }

    /// Rule 5: the buffer to read into (append to its spare capacity, e.g. with tokio's
    /// `read_buf`), with room for at least `chunk` more bytes, or for the rest of the frame
    /// being read when that is larger and within `max`. Consumed bytes are compacted first.
    pub fn room(&mut self, chunk: usize, max: usize) -> &mut Vec<u8> {
        self.compact();
        let mut want = chunk;
        if let Some(len) = self.pending_len().filter(|&len| len <= max) {
            let avail = self.buf.len() - self.start;
            if 4 + len > avail && 4 + len >= LARGE_AT_FRONT && self.start > 0 {
                // Rule 6: a large frame being read starts the buffer.
                self.buf.drain(..self.start);
                self.start = 0;
            }
            want = want.max((4 + len).saturating_sub(avail));
        }
        if self.buf.capacity() - self.buf.len() < want {
            self.buf.reserve_exact(want);
        }
        &mut self.buf
    }

    /// The whole length (with its length field) of the frame at the front when it is at
    /// least `large` bytes, within `max`, and not complete yet: what a connection reading it
    /// will hold (rule 5); 0 otherwise.
    #[must_use]
    pub fn large_in_progress(&self, large: usize, max: usize) -> usize {
        match self.pending_len() {
            Some(len) if len > 0 && len <= max && 4 + len >= large && self.buf.len() - self.start < 4 + len => 4 + len,
            _ => 0,
        }
    }

    /// The length field of the frame at the front, once its 4 bytes are in.
    fn pending_len(&self) -> Option<usize> {
        let avail = &self.buf[self.start..];
        (avail.len() >= 4).then(|| u32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize)
    }

    /// Rule 6: the next frame as `(kind, whole frame)` when it is complete, at least `large`
    /// bytes and at the front of the buffer; the body is `frame[5..]`. `Ok(None)` otherwise
    /// (then [`FrameBuf::next_frame`] gives it, or more bytes are needed); errors as there.
    pub fn take_large(&mut self, max: usize, large: usize) -> Result<Option<(u8, bytes::Bytes)>, Error> {
        let Some(len) = self.pending_len() else { return Ok(None) };
        if len == 0 || len > max {
            return self.next_frame(max).map(|_| None); // the same refusal as next_frame
        }
        let avail = self.buf.len() - self.start;
        if self.start != 0 || 4 + len < large || avail < 4 + len {
            return Ok(None);
        }
        let rest = self.buf.split_off(4 + len);
        let frame = std::mem::replace(&mut self.buf, rest);
        let kind = frame[4];
        Ok(Some((kind, bytes::Bytes::from(frame))))
    }

    /// After reading into [`FrameBuf::spare`]: keep only the `read` bytes actually filled of
    /// the `n` offered.
    pub fn filled(&mut self, n: usize, read: usize) {
        let len = self.buf.len();
        self.buf.truncate(len - n + read.min(n));
    }

    /// Bytes of room the buffer has without growing (for tests).
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Appends bytes (for tests and fuzzing).
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes buffered and not yet cut into frames.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The bytes buffered and not yet cut into frames.
    #[must_use]
    pub fn peek(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// The next complete frame as `(kind, body)`, `Ok(None)` when more bytes are needed, or an
    /// error (rule 1) after which the connection must be closed.
    pub fn next_frame(&mut self, max: usize) -> Result<Option<(u8, &[u8])>, Error> {
        let avail = &self.buf[self.start..];
        if avail.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize;
        if len == 0 {
            return Err(Error::malformed("zero-length frame"));
        }
        if len > max {
            return Err(ErrorKind::FrameTooLarge { size: len, max }.into());
        }
        if avail.len() < 4 + len {
            return Ok(None);
        }
        let s = self.start;
        self.start += 4 + len;
        Ok(Some((self.buf[s + 4], &self.buf[s + 5..s + 4 + len])))
    }
}

/// Rule 7: set in a data frame's target-kind byte when a header extension block follows the
/// fixed header.
pub const EXT_TARGET_FLAG: u8 = 0x80;
/// Rule 7: set in a reply frame's reply number when a header extension block follows the
/// fixed header (reply numbers are a node's counter from 1; they never reach this bit).
pub const EXT_REPLY_FLAG: u64 = 1 << 63;

/// Rule 7: the extension keys.
pub mod ext {
    /// W3C `traceparent` (ASCII, `00-<32 hex>-<16 hex>-<2 hex>`).
    pub const TRACEPARENT: u8 = 1;
    /// W3C `tracestate` (ASCII, comma-separated `key=value` list).
    pub const TRACESTATE: u8 = 2;
}

/// Rule 7: the optional extensions of a data or reply header, as raw bytes (their meaning is
/// checked by their user, `otel.rs`). The default is no extension at all, written as no block.
///
/// ```
/// use troupe_remote::frame::{DataHeader, HeaderExt, Target};
/// let tp = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
/// let ext = HeaderExt { traceparent: Some(tp), tracestate: None };
/// let h = DataHeader { target: Target::Name("echo".into()), tag: 7, ack_seq: 0 };
/// let mut body = Vec::new();
/// h.write_ext(&ext, &mut body).unwrap();
/// body.extend_from_slice(b"payload");
/// body.push(0); // no reply handles
/// let (back, got, payload, replies) = DataHeader::read_ext(&body).unwrap();
/// assert_eq!((back, got, payload, replies.len()), (h, ext, &b"payload"[..], 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderExt<'a> {
    /// The W3C `traceparent` value ([`ext::TRACEPARENT`]).
    pub traceparent: Option<&'a [u8]>,
    /// The W3C `tracestate` value ([`ext::TRACESTATE`]).
    pub tracestate: Option<&'a [u8]>,
}

impl<'a> HeaderExt<'a> {
    /// True when there is nothing to write (no block, no flag).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_none() && self.tracestate.is_none()
    }

    /// Appends the block (`[u8 n]`, then the entries).
    fn write(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let entries = [(ext::TRACEPARENT, self.traceparent), (ext::TRACESTATE, self.tracestate)];
        let n = entries.iter().filter(|(_, v)| v.is_some()).count();
        out.push(n as u8);
        for (key, v) in entries {
            let Some(v) = v else { continue };
            let len = u16::try_from(v.len())
                .map_err(|_| Error::malformed("a header extension is longer than 65535 bytes; leave it out"))?;
            out.push(key);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(v);
        }
        Ok(())
    }

    /// Reads a block; unknown keys are skipped, a repeated key keeps its last value.
    fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        let mut e = HeaderExt::default();
        for _ in 0..r.u8()? {
            let key = r.u8()?;
            let len = r.u16()? as usize;
            let v = r.take(len).map_err(|_| Error::malformed("a header extension is longer than its frame"))?;
            match key {
                ext::TRACEPARENT => e.traceparent = Some(v),
                ext::TRACESTATE => e.tracestate = Some(v),
                _ => {}
            }
        }
        Ok(e)
    }
}

/// Where a data frame goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Target {
    /// An actor by its number on the receiving node.
    Id(u64),
    /// An actor by its registered name there.
    Name(String),
}

/// A data-frame body as [`DataHeader::read_ext`] parses it: the header, its extensions
/// (rule 7), the payload and the reply numbers.
pub type DataParts<'a> = (DataHeader, HeaderExt<'a>, &'a [u8], Vec<u64>);

/// The fixed header of a data frame. The body is the header, the payload, then a trailer of
/// the pending-reply numbers created while encoding the payload (`[u64 LE]*n`, then `u8 n`), so
/// the payload can be encoded straight into the frame and a refusal can fail those replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// The receiving actor.
    pub target: Target,
    /// The stable hash of the message type's tag.
    pub tag: u64,
    /// Sequence number for acknowledged delivery; 0 when no ack is wanted.
    pub ack_seq: u64,
}

impl DataHeader {
    /// Appends the header.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.write_ext(&HeaderExt::default(), out)
    }

    /// Appends the header with extensions (rule 7); with none it is [`DataHeader::write`].
    pub fn write_ext(&self, ext: &HeaderExt<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
        let flag = if ext.is_empty() { 0 } else { EXT_TARGET_FLAG };
        match &self.target {
            Target::Id(id) => {
                out.push(flag);
                out.extend_from_slice(&id.to_le_bytes());
            }
            Target::Name(n) => {
                let len = u16::try_from(n.len()).map_err(|_| Error::malformed("actor name longer than 65535 bytes"))?;
                out.push(1 | flag);
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(n.as_bytes());
            }
        }
        out.extend_from_slice(&self.tag.to_le_bytes());
        out.extend_from_slice(&self.ack_seq.to_le_bytes());
        if flag != 0 {
            ext.write(out)?;
        }
        Ok(())
    }

    /// Parses a data-frame body into its header, payload and reply numbers (extensions, if
    /// any, are skipped: [`DataHeader::read_ext`]).
    pub fn read(body: &[u8]) -> Result<(DataHeader, &[u8], Vec<u64>), Error> {
        let (h, _, payload, replies) = Self::read_ext(body)?;
        Ok((h, payload, replies))
    }

    /// Parses a data-frame body into its header, extensions (rule 7), payload and reply
    /// numbers.
    pub fn read_ext(body: &[u8]) -> Result<DataParts<'_>, Error> {
        let mut r = Reader(body);
        let first = r.u8()?;
        let target = match first & !EXT_TARGET_FLAG {
            0 => Target::Id(r.u64()?),
            1 => {
                let len = r.u16()? as usize;
                let name =
                    std::str::from_utf8(r.take(len)?).map_err(|_| Error::malformed("actor name is not UTF-8"))?;
                Target::Name(name.to_owned())
            }
            t => return Err(Error::malformed(format!("unknown target kind {t}"))),
        };
        let tag = r.u64()?;
        let ack_seq = r.u64()?;
        let ext = if first & EXT_TARGET_FLAG != 0 { HeaderExt::read(&mut r)? } else { HeaderExt::default() };
        let rest = r.0;
        let (&n, rest) = rest.split_last().ok_or_else(|| Error::malformed("data frame without its trailer"))?;
        let n = n as usize;
        if rest.len() < 8 * n {
            return Err(Error::malformed("data frame trailer longer than the frame"));
        }
        let (payload, trailer) = rest.split_at(rest.len() - 8 * n);
        let mut t = Reader(trailer);
        let replies = (0..n).map(|_| t.u64()).collect::<Result<Vec<_>, _>>()?;
        Ok((DataHeader { target, tag, ack_seq }, ext, payload, replies))
    }
}

/// The fixed header of a reply frame: `[u64 reply id][u64 tag]`, then the payload
/// (extensions, if any, are skipped: [`read_reply_ext`]).
pub fn read_reply(body: &[u8]) -> Result<(u64, u64, &[u8]), Error> {
    let (id, tag, _, payload) = read_reply_ext(body)?;
    Ok((id, tag, payload))
}

/// Appends a reply frame's header: `[u64 reply id][u64 tag]`, then the extension block when
/// `ext` has any (rule 7, flagged by [`EXT_REPLY_FLAG`] in the reply number).
pub fn write_reply_header(out: &mut Vec<u8>, id: u64, tag: u64, ext: &HeaderExt<'_>) -> Result<(), Error> {
    if id & EXT_REPLY_FLAG != 0 {
        return Err(Error::malformed("a reply number has its top bit set, which marks header extensions"));
    }
    let flag = if ext.is_empty() { 0 } else { EXT_REPLY_FLAG };
    out.extend_from_slice(&(id | flag).to_le_bytes());
    out.extend_from_slice(&tag.to_le_bytes());
    if flag != 0 {
        ext.write(out)?;
    }
    Ok(())
}

/// A reply frame's header as `(reply id, tag, extensions, payload)` (rule 7).
pub fn read_reply_ext(body: &[u8]) -> Result<(u64, u64, HeaderExt<'_>, &[u8]), Error> {
    let mut r = Reader(body);
    let id = r.u64()?;
    let tag = r.u64()?;
    let ext = if id & EXT_REPLY_FLAG != 0 { HeaderExt::read(&mut r)? } else { HeaderExt::default() };
    Ok((id & !EXT_REPLY_FLAG, tag, ext, r.0))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.0.len() < n {
            return Err(Error::malformed("truncated header"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, Error> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u64(&mut self) -> Result<u64, Error> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_reads_are_reassembled() {
        let mut out = Vec::new();
        write_frame(&mut out, kind::CONTROL, |b| {
            b.extend_from_slice(b"hello");
            Ok(())
        })
        .unwrap();
        let mut fb = FrameBuf::new();
        fb.extend(&out[..3]);
        assert!(fb.next_frame(100).unwrap().is_none());
        fb.extend(&out[3..]);
        let (k, body) = fb.next_frame(100).unwrap().unwrap();
        assert_eq!((k, body), (kind::CONTROL, &b"hello"[..]));
        assert!(fb.next_frame(100).unwrap().is_none());
    }

    #[test]
    fn oversized_and_empty_frames_are_refused() {
        let mut fb = FrameBuf::new();
        fb.extend(&1000u32.to_be_bytes());
        assert!(matches!(fb.next_frame(999).unwrap_err().kind, ErrorKind::FrameTooLarge { size: 1000, max: 999 }));
        let mut fb = FrameBuf::new();
        fb.extend(&0u32.to_be_bytes());
        assert!(fb.next_frame(999).is_err());
    }

    #[test]
    fn rule_5_a_large_frame_gets_room_for_all_of_it_once_its_header_is_in() {
        let mut out = Vec::new();
        write_frame(&mut out, kind::DATA, |b| {
            b.resize(b.len() + (1 << 20), 7);
            Ok(())
        })
        .unwrap();
        let mut fb = FrameBuf::new();
        fb.room(64, 4 << 20).extend_from_slice(&out[..64]);
        let cap = fb.room(64, 4 << 20).capacity();
        assert!(cap >= out.len(), "room for the whole frame: {cap} < {}", out.len());
        fb.room(64, 4 << 20).extend_from_slice(&out[64..]);
        assert_eq!(fb.capacity(), cap, "reading the rest did not regrow the buffer");
        let (k, body) = fb.next_frame(4 << 20).unwrap().unwrap();
        assert_eq!((k, body.len()), (kind::DATA, 1 << 20));
    }

    #[test]
    fn rule_6_a_large_frame_is_handed_out_whole_and_what_follows_it_stays() {
        let mut out = Vec::new();
        write_frame(&mut out, kind::CONTROL, |b| {
            b.extend_from_slice(b"small");
            Ok(())
        })
        .unwrap();
        let small = out.len();
        write_frame(&mut out, kind::DATA, |b| {
            b.resize(b.len() + LARGE_AT_FRONT, 9);
            Ok(())
        })
        .unwrap();
        let end_of_large = out.len();
        write_frame(&mut out, kind::CONTROL, |b| {
            b.extend_from_slice(b"after");
            Ok(())
        })
        .unwrap();
        let mut fb = FrameBuf::new();
        fb.room(64, 1 << 20).extend_from_slice(&out[..small + 100]);
        assert!(fb.take_large(1 << 20, LARGE_AT_FRONT).unwrap().is_none(), "a small frame is first");
        assert_eq!(fb.next_frame(1 << 20).unwrap().unwrap().1, b"small");
        assert!(fb.take_large(1 << 20, LARGE_AT_FRONT).unwrap().is_none(), "incomplete");
        fb.room(64, 1 << 20).extend_from_slice(&out[small + 100..]);
        let (k, frame) = fb.take_large(1 << 20, LARGE_AT_FRONT).unwrap().expect("the large frame, whole");
        assert_eq!((k, frame.len()), (kind::DATA, end_of_large - small));
        assert!(frame[5..].iter().all(|&b| b == 9));
        assert_eq!(fb.next_frame(1 << 20).unwrap().unwrap().1, b"after", "what followed stays");
    }

    #[test]
    fn rule_5_an_oversized_header_gets_no_room_beyond_the_chunk() {
        let mut fb = FrameBuf::new();
        fb.room(64, 1000).extend_from_slice(&(1u32 << 30).to_be_bytes());
        assert!(fb.room(64, 1000).capacity() < 1 << 20);
        assert!(fb.next_frame(1000).is_err());
    }

    #[test]
    fn data_header_round_trips() {
        for target in [Target::Id(42), Target::Name("echo".into())] {
            let h = DataHeader { target, tag: 9, ack_seq: 3 };
            let mut b = Vec::new();
            h.write(&mut b).unwrap();
            let header_len = b.len();
            b.extend_from_slice(b"payload");
            b.extend_from_slice(&1u64.to_le_bytes());
            b.extend_from_slice(&2u64.to_le_bytes());
            b.push(2);
            let (h2, p, replies) = DataHeader::read(&b).unwrap();
            assert_eq!((h2, p, replies), (h, &b"payload"[..], vec![1, 2]));
            for cut in 0..header_len {
                assert!(DataHeader::read(&b[..cut]).is_err(), "cut at {cut}");
            }
        }
    }

    const TP: &[u8] = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn data_body(h: &DataHeader, ext: &HeaderExt<'_>) -> Vec<u8> {
        let mut b = Vec::new();
        h.write_ext(ext, &mut b).unwrap();
        b.extend_from_slice(b"payload");
        b.extend_from_slice(&5u64.to_le_bytes());
        b.push(1);
        b
    }

    #[test]
    fn rule_7_a_data_header_round_trips_with_and_without_extensions() {
        let both = HeaderExt { traceparent: Some(TP), tracestate: Some(b"k=v,x=y") };
        let only_tp = HeaderExt { traceparent: Some(TP), tracestate: None };
        for target in [Target::Id(42), Target::Name("echo".into())] {
            let h = DataHeader { target, tag: 9, ack_seq: 3 };
            for ext in [HeaderExt::default(), only_tp, both] {
                let b = data_body(&h, &ext);
                let (h2, e2, p, replies) = DataHeader::read_ext(&b).unwrap();
                assert_eq!((&h2, e2, p, replies), (&h, ext, &b"payload"[..], vec![5]));
                // The extension-blind reader sees the same message.
                let (h3, p3, r3) = DataHeader::read(&b).unwrap();
                assert_eq!((h3, p3, r3), (h.clone(), &b"payload"[..], vec![5]));
                let header_len = b.len() - b"payload".len() - 9;
                for cut in 0..header_len {
                    assert!(DataHeader::read_ext(&b[..cut]).is_err(), "cut at {cut} of {ext:?}");
                }
            }
        }
    }

    #[test]
    fn rule_7_without_extensions_the_layout_is_the_one_from_before_the_block() {
        // A no-otel encoder's frame, byte for byte: target kind 1, name, tag, ack sequence.
        let h = DataHeader { target: Target::Name("ab".into()), tag: 0x0102, ack_seq: 7 };
        let mut legacy = vec![1, 2, 0, b'a', b'b'];
        legacy.extend_from_slice(&0x0102u64.to_le_bytes());
        legacy.extend_from_slice(&7u64.to_le_bytes());
        let mut b = Vec::new();
        h.write_ext(&HeaderExt::default(), &mut b).unwrap();
        assert_eq!(b, legacy, "no extension, no flag, no block");
        let mut r = Vec::new();
        write_reply_header(&mut r, 9, 4, &HeaderExt::default()).unwrap();
        assert_eq!(r, [9u64.to_le_bytes(), 4u64.to_le_bytes()].concat());
        // And such frames decode on this build, with no extension.
        legacy.extend_from_slice(b"p\0");
        let (h2, e, p, _) = DataHeader::read_ext(&legacy).unwrap();
        assert_eq!((h2, e, p), (h, HeaderExt::default(), &b"p"[..]));
    }

    #[test]
    fn rule_7_a_reply_header_round_trips_and_its_flag_is_not_part_of_the_number() {
        for ext in [HeaderExt::default(), HeaderExt { traceparent: Some(TP), tracestate: Some(b"a=b") }] {
            let mut b = Vec::new();
            write_reply_header(&mut b, 77, 5, &ext).unwrap();
            b.extend_from_slice(b"answer");
            assert_eq!(read_reply_ext(&b).unwrap(), (77, 5, ext, &b"answer"[..]));
            assert_eq!(read_reply(&b).unwrap(), (77, 5, &b"answer"[..]));
        }
        let mut b = Vec::new();
        assert!(write_reply_header(&mut b, EXT_REPLY_FLAG | 1, 5, &HeaderExt::default()).is_err());
    }

    #[test]
    fn rule_7_unknown_keys_are_skipped_and_an_entry_past_the_body_is_malformed() {
        let h = DataHeader { target: Target::Id(1), tag: 2, ack_seq: 0 };
        let mut b = vec![EXT_TARGET_FLAG];
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&[2, 200, 3, 0, b'x', b'y', b'z', ext::TRACEPARENT, TP.len() as u8, 0]);
        b.extend_from_slice(TP);
        b.extend_from_slice(b"p\0");
        let (h2, e, p, _) = DataHeader::read_ext(&b).unwrap();
        assert_eq!((h2, e.traceparent, e.tracestate, p), (h, Some(TP), None, &b"p"[..]));
        // An entry that claims more bytes than the body has.
        let mut bad = b[..25].to_vec();
        bad.extend_from_slice(&[1, ext::TRACEPARENT, 0xff, 0xff, b'0']);
        let e = DataHeader::read_ext(&bad).unwrap_err().to_string();
        assert!(e.contains("longer than its frame"), "{e}");
        // A flagged reply with a truncated block.
        let mut r = (7u64 | EXT_REPLY_FLAG).to_le_bytes().to_vec();
        r.extend_from_slice(&1u64.to_le_bytes());
        r.push(3);
        assert!(read_reply_ext(&r).is_err());
    }
}
