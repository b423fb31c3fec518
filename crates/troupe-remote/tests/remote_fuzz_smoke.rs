//! A short fuzz run on stable Rust: the fuzzing entry points (frame decoder, both handshake
//! sides, a live node's dispatch of post-handshake frames, raw and as structured control and
//! causal frames) on random bytes and on mutations of valid frames and handshakes. Never a
//! panic.

use proptest::prelude::*;
use troupe_remote::codec;
use troupe_remote::frame::{kind, write_frame, write_reply_header, DataHeader, HeaderExt, Target};
use troupe_remote::fuzzing;
use troupe_remote::proto::{Control, Hello, MAGIC, VERSION};

fn valid_stream() -> Vec<u8> {
    let mut out = vec![7u8]; // chunk size for the decoder
    let h = DataHeader { target: Target::Name("echo".into()), tag: 1, ack_seq: 2 };
    write_frame(&mut out, kind::DATA, |b| {
        h.write(b)?;
        b.extend_from_slice(b"payload");
        b.push(0);
        Ok(())
    })
    .unwrap();
    let c = Control::Lookup { req: 1, name: "x".into() };
    write_frame(&mut out, kind::CONTROL, |b| codec::encode_into(&c, b)).unwrap();
    out
}

/// What an authenticated peer sends after the handshake: data frames (to services, with and
/// without acks, one ahead of a gap), a reply, and control messages of several kinds.
fn valid_session() -> Vec<u8> {
    let mut out = Vec::new();
    for (target, seq) in [(Target::Name("counter".into()), 0), (Target::Name("echo".into()), 2), (Target::Id(1), 1)] {
        let h = DataHeader { target, tag: troupe_remote::tag_hash("troupe.svc.counter.v1"), ack_seq: seq };
        write_frame(&mut out, kind::DATA, |b| {
            h.write(b)?;
            b.extend_from_slice(&[0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);
            b.push(0);
            Ok(())
        })
        .unwrap();
    }
    write_frame(&mut out, kind::REPLY, |b| {
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(b"answer");
        Ok(())
    })
    .unwrap();
    // Header extensions (`frame.rs` rule 7): a trace context on a data frame and a reply.
    let tp = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let ext = HeaderExt { traceparent: Some(tp), tracestate: Some(b"k=v") };
    let h = DataHeader {
        target: Target::Name("counter".into()),
        tag: troupe_remote::tag_hash("troupe.svc.counter.v1"),
        ack_seq: 0,
    };
    write_frame(&mut out, kind::DATA, |b| {
        h.write_ext(&ext, b)?;
        b.extend_from_slice(&[0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);
        b.push(0);
        Ok(())
    })
    .unwrap();
    write_frame(&mut out, kind::REPLY, |b| {
        write_reply_header(b, 8, 1, &ext)?;
        b.extend_from_slice(b"answer");
        Ok(())
    })
    .unwrap();
    let controls = [
        Control::Lookup { req: 1, name: "echo".into() },
        Control::Monitor { mid: 3, target: Target::Name("counter".into()) },
        Control::Link { from: 4, to: Target::Name("pong".into()) },
        Control::Ack { channel: "default".into(), lane: 0, seqs: vec![1, 2] },
        Control::Heartbeat,
    ];
    for c in &controls {
        write_frame(&mut out, kind::CONTROL, |b| codec::encode_into(c, b)).unwrap();
    }
    out
}

fn valid_hello() -> Vec<u8> {
    let hello = Hello {
        magic: MAGIC,
        version: VERSION,
        name: "n".into(),
        listen: "127.0.0.1:1".into(),
        incarnation: 3,
        channel: "default".into(),
        lane: 0,
        nonce: [1; 32],
    };
    let mut out = Vec::new();
    write_frame(&mut out, kind::HELLO, |b| codec::encode_into(&hello, b)).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic_the_decoder(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        fuzzing::frame_decoder(&data);
    }

    #[test]
    fn mutated_frames_never_panic_the_decoder(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut data = valid_stream();
        for (i, b) in flips {
            let n = data.len();
            data[i % n] = b;
        }
        fuzzing::frame_decoder(&data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_handshakes_never_panic_either_side(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6), cut in any::<usize>()) {
        let mut data = valid_hello();
        for (i, b) in flips {
            let n = data.len();
            data[i % n] = b;
        }
        let cut = cut % (data.len() + 1);
        fuzzing::handshake_acceptor(&data[..cut]);
        fuzzing::handshake_dialler(&data[..cut]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_session_frames_never_panic_a_node(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8), cut in any::<usize>()) {
        let mut data = valid_session();
        for (i, b) in flips {
            let n = data.len();
            data[i % n] = b;
        }
        let cut = cut % (data.len() + 1);
        fuzzing::session_frames(&data[..cut]);
    }

    #[test]
    fn random_session_bytes_never_panic_a_node(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        fuzzing::session_frames(&data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// `fuzzing::control_frames` reads its input as choices, so random bytes are well-formed
    /// control and causal frames (and bursts that cross the node's small budgets).
    #[test]
    fn structured_control_frames_never_panic_a_node(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        fuzzing::control_frames(&data);
    }
}

/// Every kind of frame `control_frames` builds (its first choice picks the kind), each from
/// several inputs, reaches the node.
#[test]
fn every_structured_frame_kind_reaches_a_node() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for kind in 0..16u8 {
        for _ in 0..16 {
            let mut data = vec![kind];
            for _ in 0..96 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                data.push(x as u8);
            }
            fuzzing::control_frames(&data);
        }
    }
}
