//! Byte payloads that cross nodes efficiently. serde's `Vec<u8>` is a sequence of single
//! bytes, which costs one call per byte in most codecs; both types here serialise as one byte
//! string.
//!
//! - [`Blob`] owns its bytes (a `Vec<u8>`): each message carries its own copy.
//! - [`SharedBlob`] holds reference-counted bytes (`bytes::Bytes`), as Erlang's large binaries
//!   are: cloning it to send the same payload to many actors copies nothing, and a large
//!   payload that arrives is not copied out of the frame it came in.
//!
//! Rules (for [`SharedBlob`] on arrival):
//! 1. A connection hands a large frame that it read into a buffer of its own to the decoder
//!    as shared bytes ([`with_arriving`]); a `SharedBlob` decoded from inside that frame keeps
//!    a slice of it instead of a copy.
//! 2. Only when the blob is at least half of the frame: a small blob is copied, so it never
//!    keeps a large frame alive.
//! 3. Anywhere else (a frame held back for ordering, a small frame, another codec) the bytes
//!    are copied, as for [`Blob`].
//!
//! And on sending:
//! 4. A `SharedBlob` of at least `SPLICE_MIN` bytes in a large frame that is sent without
//!    acknowledgement or fault injection is not copied into the frame: the encoding gets only
//!    its length prefix and the lane sends its bytes from where they are, as a segment of the
//!    frame (`codec::splicing`, `node/lane.rs` rule 4). The bytes on the wire are the same.

use std::cell::RefCell;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes that cross nodes efficiently, owned by the message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_byte_buf(BytesVisitor(|v: &[u8]| Blob(v.to_vec())))
    }
}

impl From<Vec<u8>> for Blob {
    fn from(v: Vec<u8>) -> Self {
        Blob(v)
    }
}

/// Reads a byte string into `T` (`.0` makes one from bytes the deserialiser lends), or a
/// sequence of bytes from codecs that write `Vec<u8>` that way.
struct BytesVisitor<T>(fn(&[u8]) -> T);

impl<'de, T: From<Vec<u8>>> serde::de::Visitor<'de> for BytesVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a byte string")
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<T, E> {
        Ok((self.0)(v))
    }
    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<T, E> {
        Ok(T::from(v))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<T, A::Error> {
        let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1 << 16));
        while let Some(b) = a.next_element()? {
            out.push(b);
        }
        Ok(T::from(out))
    }
}

/// Reference-counted bytes that cross nodes without copies where they can (rules 1-3): the
/// payload to send to many actors, or a large payload to keep after it arrives.
///
/// ```
/// use troupe_remote::SharedBlob;
/// let payload = SharedBlob::from(vec![0xa5; 1 << 20]);
/// let again = payload.clone(); // shares the same megabyte
/// assert_eq!(again.as_ref().as_ptr(), payload.as_ref().as_ptr());
/// assert_eq!(payload.len(), 1 << 20);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedBlob(pub Bytes);

impl SharedBlob {
    /// Bytes held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Holds no bytes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<u8>> for SharedBlob {
    fn from(v: Vec<u8>) -> Self {
        SharedBlob(Bytes::from(v))
    }
}

impl AsRef<[u8]> for SharedBlob {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Rule 4: blobs from this size up are sent from where they are.
pub(crate) const SPLICE_MIN: usize = 64 * 1024;

impl Serialize for SharedBlob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.len() >= SPLICE_MIN && crate::codec::splice(&self.0) {
            return s.serialize_u64(self.0.len() as u64); // rule 4: the prefix only
        }
        s.serialize_bytes(&self.0)
    }
}

thread_local! {
    /// Rule 1: the frame being decoded on this thread, when it is shared bytes.
    static ARRIVING: RefCell<Option<Bytes>> = const { RefCell::new(None) };
}

/// Rule 1: runs `f` (which decodes from `frame`) so that a [`SharedBlob`] inside keeps a slice
/// of `frame` instead of a copy.
pub(crate) fn with_arriving<T>(frame: &Bytes, f: impl FnOnce() -> T) -> T {
    let before = ARRIVING.with(|a| a.replace(Some(frame.clone())));
    let r = f();
    ARRIVING.with(|a| *a.borrow_mut() = before);
    r
}

/// Rules 1-3: `v` as shared bytes, sliced from the arriving frame when it lies within it and
/// is at least half of it, else copied.
fn share_or_copy(v: &[u8]) -> Bytes {
    ARRIVING.with(|a| {
        let a = a.borrow();
        let Some(frame) = a.as_ref() else { return Bytes::copy_from_slice(v) };
        let (f0, v0) = (frame.as_ptr() as usize, v.as_ptr() as usize);
        let inside = v0 >= f0 && v0 + v.len() <= f0 + frame.len();
        if inside && v.len() * 2 >= frame.len() {
            frame.slice_ref(v)
        } else {
            Bytes::copy_from_slice(v)
        }
    })
}

impl<'de> Deserialize<'de> for SharedBlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(BytesVisitor(|v: &[u8]| SharedBlob(share_or_copy(v))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(frame: &Bytes, at: usize) -> SharedBlob {
        let body = &frame[at..];
        with_arriving(frame, || crate::codec::decode::<SharedBlob>(body).unwrap())
    }

    fn frame_with(prefix: usize, blob: &[u8]) -> Bytes {
        let mut f = vec![7u8; prefix];
        crate::codec::encode_into(&SharedBlob::from(blob.to_vec()), &mut f).unwrap();
        Bytes::from(f)
    }

    #[test]
    fn rule_1_a_blob_that_is_most_of_the_arriving_frame_is_a_slice_of_it() {
        let frame = frame_with(16, &[3u8; 4096]);
        let b = decode(&frame, 16);
        assert_eq!(b.0, Bytes::from(vec![3u8; 4096]));
        let inside = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
        assert!(inside.contains(&(b.0.as_ptr() as usize)), "not copied");
    }

    #[test]
    fn rule_2_a_small_blob_in_a_large_frame_is_copied() {
        let frame = frame_with(10_000, &[3u8; 100]);
        let b = decode(&frame, 10_000);
        assert_eq!(b.0, Bytes::from(vec![3u8; 100]));
        let inside = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
        assert!(!inside.contains(&(b.0.as_ptr() as usize)), "a small blob must not pin the frame");
    }

    #[test]
    fn rule_3_without_an_arriving_frame_the_bytes_are_copied() {
        let bytes = crate::codec::encode(&SharedBlob::from(vec![1, 2, 3])).unwrap();
        let b = crate::codec::decode::<SharedBlob>(&bytes).unwrap();
        assert_eq!(b.as_ref(), &[1, 2, 3]);
        assert_eq!(crate::codec::decode::<Blob>(&bytes).unwrap().0, vec![1, 2, 3], "same wire form as Blob");
    }
}
