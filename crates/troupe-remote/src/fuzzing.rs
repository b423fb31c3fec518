//! Entry points for fuzzing the parts that read untrusted bytes: the frame decoder (with every
//! frame kind's body parser), both sides of the handshake, and a live node's dispatch of the
//! frames an authenticated peer sends after it ([`session_frames`]). The cargo-fuzz targets in
//! `fuzz/` call these; `tests/remote_fuzz_smoke.rs` runs them on random and mutated inputs on
//! stable Rust. The property in every case: no panic, no hang, no unbounded allocation.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::codec;
use crate::frame::{kind, read_reply, DataHeader, FrameBuf};
use crate::handshake::{self, Identity};
use crate::proto::{Challenge, Control, Hello, Proof, Refuse};

/// Cuts `data` into frames (in chunks whose sizes come from the data itself, to exercise
/// reassembly) and parses every frame body as its kind says.
pub fn frame_decoder(data: &[u8]) {
    let Some((&chunk, rest)) = data.split_first() else { return };
    let chunk = usize::from(chunk).max(1);
    let mut fb = FrameBuf::new();
    for piece in rest.chunks(chunk) {
        // Reading the way a connection does (`room`, rule 5), with "large" frames from 64
        // bytes up handed out whole (rule 6), so both paths see the same bytes.
        fb.room(chunk, 1 << 16).extend_from_slice(piece);
        loop {
            match fb.take_large(1 << 16, 64) {
                Ok(Some((k, frame))) => {
                    parse_body(k, &frame[5..]);
                    continue;
                }
                Ok(None) => {}
                Err(_) => return,
            }
            match fb.next_frame(1 << 16) {
                Ok(Some((k, body))) => parse_body(k, body),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

fn parse_body(k: u8, body: &[u8]) {
    match k {
        kind::HELLO => drop(codec::decode::<Hello>(body)),
        kind::CHALLENGE => drop(codec::decode::<Challenge>(body)),
        kind::PROOF => drop(codec::decode::<Proof>(body)),
        kind::REFUSE => drop(codec::decode::<Refuse>(body)),
        kind::DATA => drop(DataHeader::read(body)),
        kind::REPLY => drop(read_reply(body)),
        kind::CONTROL => drop(codec::decode::<Control>(body)),
        kind::CAUSAL => drop(crate::node::causal_wire::read(body)),
        _ => {}
    }
}

thread_local! {
    static SESSION: std::cell::OnceCell<Option<(tokio::runtime::Runtime, crate::Node)>> =
        const { std::cell::OnceCell::new() };
}

/// Cuts `data` into frames and hands each, as an authenticated peer's frame on its `default`
/// lane 0, to the inbound dispatch of a real node (one per thread, with the `echo`, `counter`,
/// `pong` and `ack` services), then lets its actors run. Decoding, refusals, acknowledged
/// reordering, control messages (monitors, links, lookups, globals) all run for real. The
/// peer's state is reset after each input, so inputs do not accumulate memory.
pub fn session_frames(data: &[u8]) {
    SESSION.with(|cell| {
        let Some((rt, node)) = cell.get_or_init(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            let node = rt.block_on(async {
                let n = crate::Node::start(crate::NodeConfig::new("fuzz", "secret")).await.ok()?;
                let svc = ["echo", "counter", "pong", "ack"].map(str::to_owned);
                crate::services::start(&n, &svc).ok()?;
                Some(n)
            })?;
            Some((rt, node))
        }) else {
            return;
        };
        rt.block_on(async {
            let inner = &node.inner;
            let peer = inner.peer_for("127.0.0.1:9");
            let mut ctx =
                crate::node::inbound::InCtx { channel: "default".into(), lane: 0, incarnation: 1, acks: Vec::new() };
            let mut fb = FrameBuf::new();
            fb.extend(data);
            while let Ok(Some((k, body))) = fb.next_frame(1 << 16) {
                if crate::node::inbound::dispatch(inner, &peer, &mut ctx, k, body).is_err() {
                    break;
                }
            }
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
            peer.clear_dedup();
            for l in peer.channels.iter().flat_map(|c| &c.lanes) {
                l.reset(&inner.shared);
            }
            *peer.relations.lock() = Default::default();
        });
    });
}

fn me() -> Identity {
    Identity { name: "fuzz".into(), listen: "127.0.0.1:1".into(), incarnation: 1 }
}

fn run(f: impl std::future::Future<Output = ()>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    if let Ok(rt) = rt {
        rt.block_on(f);
    }
}

/// The acceptor's side of the handshake reading `data` from an unknown dialler.
pub fn handshake_acceptor(data: &[u8]) {
    run(async {
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 16);
        let _ = theirs.write_all(data).await;
        let _ = theirs.shutdown().await;
        let _ = handshake::accept(&mut ours, &me(), b"secret", Duration::from_secs(1)).await;
    });
}

/// The dialler's side of the handshake reading `data` from an unknown acceptor.
pub fn handshake_dialler(data: &[u8]) {
    run(async {
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 16);
        let _ = theirs.write_all(data).await;
        let _ = theirs.shutdown().await;
        let _ = handshake::dial(&mut ours, &me(), "default", 0, b"secret", Duration::from_secs(1)).await;
    });
}
