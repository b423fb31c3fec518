//! The measurement behind the wire codec choice: bincode 1 vs postcard vs rmp-serde
//! (MessagePack) on the message shapes Troupe actually sends (a data-frame header, a small
//! ping, a chat line with a ref in it, a control message, a 512-byte payload message).
//! Prints encode+decode time per message and encoded size. Run with
//! `cargo bench -p troupe-remote --bench codec` (release profile).

use std::hint::black_box;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Header {
    target: u64,
    tag: u64,
    seq: u64,
    replies: Vec<u64>,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
enum Ping {
    Ping(u64),
    Pong(u64),
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct WireRef {
    node: String,
    id: u64,
    tag: u64,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct ChatLine {
    room: String,
    from: WireRef,
    text: String,
    at_us: u64,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
enum Control {
    Monitor { watcher: u64, target: u64, mid: u64 },
    Down { mid: u64, actor: u64, reason: String },
    Heartbeat { at_us: u64 },
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Payload {
    seq: u64,
    #[serde(with = "bytes")]
    data: Vec<u8>,
}

mod bytes {
    use serde::{Deserializer, Serializer};
    pub(crate) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_byte_buf(V)
    }
}

trait Codec {
    const NAME: &'static str;
    fn enc<T: Serialize>(v: &T, out: &mut Vec<u8>);
    fn dec<T: DeserializeOwned>(b: &[u8]) -> T;
}

struct Bincode;
impl Codec for Bincode {
    const NAME: &'static str = "bincode 1";
    fn enc<T: Serialize>(v: &T, out: &mut Vec<u8>) {
        bincode::serialize_into(out, v).unwrap();
    }
    fn dec<T: DeserializeOwned>(b: &[u8]) -> T {
        bincode::deserialize(b).unwrap()
    }
}

struct Postcard;
impl Codec for Postcard {
    const NAME: &'static str = "postcard";
    fn enc<T: Serialize>(v: &T, out: &mut Vec<u8>) {
        let taken = std::mem::take(out);
        *out = postcard::to_extend(v, taken).unwrap();
    }
    fn dec<T: DeserializeOwned>(b: &[u8]) -> T {
        postcard::from_bytes(b).unwrap()
    }
}

struct Rmp;
impl Codec for Rmp {
    const NAME: &'static str = "rmp-serde";
    fn enc<T: Serialize>(v: &T, out: &mut Vec<u8>) {
        rmp_serde::encode::write(out, v).unwrap();
    }
    fn dec<T: DeserializeOwned>(b: &[u8]) -> T {
        rmp_serde::from_slice(b).unwrap()
    }
}

/// Nanoseconds per encode+decode round and the encoded size.
fn measure<C: Codec, T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(v: &T, iters: u32) -> (f64, usize) {
    let mut buf = Vec::with_capacity(1024);
    C::enc(v, &mut buf);
    let size = buf.len();
    assert_eq!(&C::dec::<T>(&buf), v, "{} round trip", C::NAME);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..iters {
            buf.clear();
            C::enc(black_box(v), &mut buf);
            black_box(C::dec::<T>(black_box(&buf)));
        }
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(iters));
    }
    (best, size)
}

fn row<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    name: &str,
    v: &T,
    iters: u32,
    totals: &mut [f64; 3],
) {
    let b = measure::<Bincode, T>(v, iters);
    let p = measure::<Postcard, T>(v, iters);
    let r = measure::<Rmp, T>(v, iters);
    totals[0] += b.0;
    totals[1] += p.0;
    totals[2] += r.0;
    println!(
        "| {name:<22} | {:>7.1} ns / {:>4} B | {:>7.1} ns / {:>4} B | {:>7.1} ns / {:>4} B |",
        b.0, b.1, p.0, p.1, r.0, r.1
    );
}

fn main() {
    let iters = 200_000;
    println!("| message                | bincode 1             | postcard              | rmp-serde             |");
    println!("|------------------------|-----------------------|-----------------------|-----------------------|");
    let mut totals = [0.0; 3];
    let header = Header { target: 1234, tag: 0x9e37_79b9_7f4a_7c15, seq: 0, replies: vec![] };
    row("data header", &header, iters, &mut totals);
    row("ping(u64)", &Ping::Ping(123_456), iters, &mut totals);
    let wr = WireRef { node: "127.0.0.1:40123".into(), id: 77, tag: 0x1234_5678_9abc_def0 };
    let chat =
        ChatLine { room: "lobby".into(), from: wr, text: "hello there, how are you".into(), at_us: 1_700_000_000_000 };
    row("chat line with a ref", &chat, iters, &mut totals);
    row("control: monitor", &Control::Monitor { watcher: 12, target: 99, mid: 5 }, iters, &mut totals);
    let payload = Payload { seq: 9, data: vec![7u8; 512] };
    row("512 B payload", &payload, iters / 4, &mut totals);
    println!(
        "| sum of the rows        | {:>7.1} ns            | {:>7.1} ns            | {:>7.1} ns            |",
        totals[0], totals[1], totals[2]
    );
}
