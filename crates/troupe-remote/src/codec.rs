//! The serde codec for message payloads and control frames: bincode 1 (little-endian,
//! fixed-width integers). Chosen by measurement (`benches/codec.rs`, see docs/distribution.md):
//! on our message shapes it encoded and decoded fastest, 1.27x faster than postcard and 1.95x
//! faster than rmp-serde in total, at the cost of larger small messages (postcard's varints
//! halve them), which loopback and LAN links do not notice.
//!
//! Also the stable type tags: a tag string hashed with 64-bit FNV-1a, the same on every build.

use std::cell::RefCell;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Error;

/// Appends `v`'s encoding to `out`. Inside `splicing`, a large `SharedBlob` in `v` writes
/// only its length prefix and is recorded to be sent from where it is (rule 4 of `blob.rs`).
pub fn encode_into<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) -> Result<(), Error> {
    let r = if SPLICE.with(|s| s.borrow().is_some()) {
        bincode::serialize_into(SpliceOut(out), v)
    } else {
        bincode::serialize_into(out, v)
    };
    r.map_err(|e| Error::malformed(format!("encode: {e}")))
}

/// What [`splicing`] collects: each spliced blob with the offset in the output where its bytes
/// belong (right after its length prefix).
#[derive(Default)]
struct Splices {
    /// Only counting (no output): a spliced blob counts as its prefix.
    sizing: bool,
    at: Vec<(usize, Bytes)>,
    /// Spliced after the next write (its prefix).
    after_next: Option<Bytes>,
}

thread_local! {
    static SPLICE: RefCell<Option<Splices>> = const { RefCell::new(None) };
}

/// The writer in splicing mode: records a pending splice after the write that carries its
/// prefix.
struct SpliceOut<'a>(&'a mut Vec<u8>);

impl std::io::Write for SpliceOut<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        SPLICE.with(|s| {
            if let Some(sp) = s.borrow_mut().as_mut() {
                if let Some(b) = sp.after_next.take() {
                    sp.at.push((self.0.len(), b));
                }
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Rule 4 of `blob.rs`: called by a large `SharedBlob` about to serialise; true when it should
/// write only its length (as a `u64`, bincode's byte-string prefix) because its bytes will be
/// sent from where they are.
pub(crate) fn splice(bytes: &Bytes) -> bool {
    SPLICE.with(|s| match s.borrow_mut().as_mut() {
        Some(sp) if sp.sizing => true,
        Some(sp) if sp.after_next.is_none() => {
            sp.after_next = Some(bytes.clone());
            true
        }
        _ => false,
    })
}

/// Runs `f` (which encodes into `out` with [`encode_into`]) with large `SharedBlob`s spliced:
/// returns `f`'s result and the blobs with the offsets in `out` where their bytes belong.
pub(crate) fn splicing<T>(out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> T) -> (T, Vec<(usize, Bytes)>) {
    let before = SPLICE.with(|s| s.replace(Some(Splices::default())));
    let r = f(out);
    let mut sp = SPLICE.with(|s| s.replace(before)).unwrap_or_default();
    if let Some(b) = sp.after_next.take() {
        sp.at.push((out.len(), b));
    }
    (r, sp.at)
}

/// `v`'s encoded size without the large `SharedBlob`s `splicing` would leave out (what is
/// copied into the frame buffer), when it serialises.
pub fn size_hint_spliced<T: Serialize + ?Sized>(v: &T) -> Option<usize> {
    let before = SPLICE.with(|s| s.replace(Some(Splices { sizing: true, ..Default::default() })));
    let n = size_hint(v);
    SPLICE.with(|s| s.replace(before));
    n
}

/// `v`'s encoding.
pub fn encode<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    encode_into(v, &mut out)?;
    Ok(out)
}

/// `v`'s encoded size, at least (refs and reply handles count without their node address:
/// `troupe::remote_api::sizing`), or `None` when `v` does not serialise. Large frames are sized
/// with it so they are encoded once into a buffer of their size (rule 4 of `node/lane.rs`).
pub fn size_hint<T: Serialize + ?Sized>(v: &T) -> Option<usize> {
    troupe::remote_api::sizing(|| bincode::serialized_size(v)).ok().and_then(|n| usize::try_from(n).ok())
}

/// Decodes a `T`, refusing trailing bytes and never allocating more than `bytes.len()` allows.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|e| match *e {
            // bincode reports running out of input as an I/O error with no text (issue 36:
            // "decode: io error: "); say what it means.
            bincode::ErrorKind::Io(ref io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                Error::malformed(format!(
                    "decode: the {}-byte body ended before a whole {} was read (truncated or not this type)",
                    bytes.len(),
                    std::any::type_name::<T>().rsplit("::").next().unwrap_or("value")
                ))
            }
            e => Error::malformed(format!("decode: {e}")),
        })
}

/// The stable 64-bit hash of a type tag (FNV-1a).
///
/// ```
/// assert_eq!(troupe_remote::tag_hash("a"), 0xaf63dc4c8601ec8c);
/// ```
#[must_use]
pub const fn tag_hash(tag: &str) -> u64 {
    let b = tag.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 36): a truncated body was reported as "decode: io error: ".
    #[test]
    fn a_truncated_body_is_reported_with_text() {
        let b = encode(&(7u64, "hello".to_string())).unwrap();
        let e = decode::<(u64, String)>(&b[..b.len() - 2]).unwrap_err().to_string();
        assert!(e.contains("ended before a whole") && !e.ends_with(": "), "{e}");
    }

    #[test]
    fn round_trip_and_trailing_bytes_refused() {
        let v = (7u64, "x".to_string());
        let mut b = encode(&v).unwrap();
        assert_eq!(decode::<(u64, String)>(&b).unwrap(), v);
        b.push(0);
        assert!(decode::<(u64, String)>(&b).is_err());
    }

    #[test]
    fn size_hint_is_the_encoded_size() {
        let v = (7u64, crate::Blob(vec![1; 1000]));
        assert_eq!(size_hint(&v), Some(encode(&v).unwrap().len()));
    }

    #[test]
    fn rule_4_of_blob_rs_a_spliced_encoding_with_its_blobs_put_back_is_the_plain_one() {
        let big = crate::SharedBlob::from((0..70_000u32).map(|i| i as u8).collect::<Vec<u8>>());
        let small = crate::SharedBlob::from(vec![5u8; 10]);
        let v = (1u64, big.clone(), 2u16, small, big.clone(), 3u8);
        let plain = encode(&v).unwrap();
        let mut out = vec![9u8; 3]; // a frame header before it
        let (r, at) = splicing(&mut out, |o| encode_into(&v, o));
        r.unwrap();
        assert_eq!(at.len(), 2, "the two large blobs were spliced, the small one copied");
        let mut joined = Vec::new();
        let mut from = 3;
        for (off, b) in &at {
            joined.extend_from_slice(&out[from..*off]);
            joined.extend_from_slice(b);
            from = *off;
        }
        joined.extend_from_slice(&out[from..]);
        assert_eq!(joined, plain);
        assert_eq!(size_hint_spliced(&v), Some(out.len() - 3));
        assert_eq!(size_hint(&v), Some(plain.len()));
    }

    #[test]
    fn size_hint_counts_a_reply_handle_without_taking_it() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        let got = Arc::new(AtomicU32::new(0));
        let g = got.clone();
        let v = (crate::Blob(vec![1; 1000]), troupe::ReplyTo::from_fn(move |r: u32| g.store(r, Ordering::SeqCst)));
        assert!(encode(&v).is_err(), "outside a node a reply handle does not serialise");
        let n = size_hint(&v).expect("sized");
        assert!(n >= 8 + 1000 + 8 + 16, "{n}");
        v.1.send(7);
        assert_eq!(got.load(Ordering::SeqCst), 7, "the handle still answers after sizing");
    }

    #[test]
    fn a_huge_declared_length_is_refused_without_allocating() {
        // A Vec<u8> claiming 2^62 elements in 8 bytes of input.
        let mut b = (1u64 << 62).to_le_bytes().to_vec();
        b.push(1);
        assert!(decode::<Vec<u8>>(&b).is_err());
    }
}
