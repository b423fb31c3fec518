//! Entry points for fuzzing the parts that read untrusted bytes: the frame decoder (with every
//! frame kind's body parser) and both sides of the handshake. The cargo-fuzz targets in
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
        fb.extend(piece);
        loop {
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
        _ => {}
    }
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
