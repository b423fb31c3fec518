//! The serde codec for message payloads and control frames: bincode 1 (little-endian,
//! fixed-width integers). Chosen by measurement (`benches/codec.rs`, see docs/distribution.md):
//! on our message shapes it encoded and decoded fastest, 1.27x faster than postcard and 1.95x
//! faster than rmp-serde in total, at the cost of larger small messages (postcard's varints
//! halve them), which loopback and LAN links do not notice.
//!
//! Also the stable type tags: a tag string hashed with 64-bit FNV-1a, the same on every build.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Error;

/// Appends `v`'s encoding to `out`.
pub fn encode_into<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) -> Result<(), Error> {
    bincode::serialize_into(out, v).map_err(|e| Error::malformed(format!("encode: {e}")))
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
        .map_err(|e| Error::malformed(format!("decode: {e}")))
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
