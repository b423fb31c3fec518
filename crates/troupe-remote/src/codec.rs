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
    fn a_huge_declared_length_is_refused_without_allocating() {
        // A Vec<u8> claiming 2^62 elements in 8 bytes of input.
        let mut b = (1u64 << 62).to_le_bytes().to_vec();
        b.push(1);
        assert!(decode::<Vec<u8>>(&b).is_err());
    }
}
