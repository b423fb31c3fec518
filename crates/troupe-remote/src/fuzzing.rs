//! Entry points for fuzzing the parts that read untrusted bytes: the frame decoder (with every
//! frame kind's body parser), both sides of the handshake, and a live node's dispatch of the
//! frames an authenticated peer sends after it: as raw bytes ([`session_frames`]) and as
//! well-formed control and causal frames built from the input's choices ([`control_frames`]),
//! which reach far deeper into monitors, links, global names and causal holds than random
//! bytes do. The cargo-fuzz targets in `fuzz/` call these; `tests/remote_fuzz_smoke.rs` runs
//! them on random and mutated inputs on stable Rust. The property in every case: no panic, no
//! hang, no unbounded allocation.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use troupe::{Actor, Ctx, ExitReason};

use crate::causal::{Clock, Stamp};
use crate::codec::{self, tag_hash};
use crate::frame::{kind, read_reply_ext, write_frame, DataHeader, FrameBuf, HeaderExt, Target};
use crate::handshake::{self, Identity};
use crate::proto::{Challenge, Control, GlobalEntry, Hello, Proof, Refuse, RefuseReason};

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
        kind::DATA => drop(DataHeader::read_ext(body)),
        kind::REPLY => drop(read_reply_ext(body)),
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

/// Reads a fuzz input as a sequence of choices; an exhausted input answers zeros.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// A number below `n` (> 0).
    fn below(&mut self, n: u8) -> u8 {
        self.byte() % n
    }

    fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// A number of 0 to 8 bytes: mostly small, sometimes anything.
    fn number(&mut self) -> u64 {
        (0..self.below(9)).fold(0, |v, _| v << 8 | u64::from(self.byte()))
    }

    /// A short string, sometimes with characters logs must escape.
    fn string(&mut self) -> String {
        const ODD: [char; 6] = ['\n', '\u{1b}', '\u{2028}', '\u{202e}', 'é', ':'];
        (0..self.below(12))
            .map(|_| match self.below(8) {
                0 => ODD[usize::from(self.below(ODD.len() as u8))],
                _ => char::from(b'a' + self.below(26)),
            })
            .collect()
    }

    fn bytes(&mut self, max: u8) -> Vec<u8> {
        (0..self.below(max)).map(|_| self.byte()).collect()
    }
}

/// The built-in services [`control_frames`] runs, and the actor it may kill or stop.
const SERVICES: [&str; 4] = ["echo", "counter", "pong", "ack"];
const VICTIM: &str = "victim";

/// An actor frames may kill, stop, link to or monitor; started again for every input.
struct Victim;

impl Actor for Victim {
    type Msg = crate::Blob;
    async fn handle(&mut self, _: crate::Blob, _: &mut Ctx<Self>) {}
}

/// Budgets small enough that inputs of a few hundred bytes cross them (`node/mod.rs` rules
/// 6-7, `causal_wire.rs` rule 5).
fn small_budgets() -> crate::NodeConfig {
    crate::NodeConfig {
        max_monitors_per_peer: 16,
        max_links_per_peer: 16,
        max_globals_per_peer: 8,
        max_globals: 12,
        max_causal_held_bytes_per_label: 4096,
        max_causal_held_bytes_per_session: 6144,
        max_causal_held_bytes: 8192,
        ..crate::NodeConfig::new("fuzz", "secret")
    }
}

fn target(c: &mut Choices<'_>) -> Target {
    match c.below(8) {
        n @ 0..=3 => Target::Name(SERVICES[usize::from(n)].into()),
        4 => Target::Name(VICTIM.into()),
        5 => Target::Name(c.string()),
        6 => Target::Id(u64::from(c.below(16))),
        _ => Target::Id(c.number()),
    }
}

fn reason(c: &mut Choices<'_>) -> ExitReason {
    match c.below(8) {
        0 => ExitReason::Normal,
        1 => ExitReason::Shutdown,
        2 => ExitReason::ShutdownWith(c.string()),
        3 => ExitReason::Killed,
        4 => ExitReason::Panicked(c.string()),
        5 => ExitReason::Error(c.string()),
        6 => ExitReason::NoProc,
        _ => ExitReason::NoConnection,
    }
}

/// A monitor number or actor key: mostly from a few, so frames reuse them.
fn small_id(c: &mut Choices<'_>) -> u64 {
    if c.below(4) == 0 {
        c.number()
    } else {
        u64::from(c.below(24))
    }
}

/// The addresses a generated frame may name: the peer's, this node's, another, or any string.
fn address(c: &mut Choices<'_>, peer: &str, me: &str) -> String {
    match c.below(4) {
        0 => peer.to_owned(),
        1 => me.to_owned(),
        2 => "127.0.0.1:10".to_owned(),
        _ => c.string(),
    }
}

fn globals(c: &mut Choices<'_>, peer: &str, me: &str) -> Control {
    let entries = (0..c.below(8))
        .map(|_| GlobalEntry {
            name: if c.flag() { format!("g{}", c.below(16)) } else { c.string() },
            node: address(c, peer, me),
            id: small_id(c),
            tag: if c.flag() { tag_hash("troupe.blob") } else { c.number() },
            tag_name: c.string(),
        })
        .collect();
    Control::Globals { entries, full: c.flag() }
}

fn clock(c: &mut Choices<'_>, keys: &[u64; 3]) -> Clock {
    (0..c.below(4))
        .map(|_| {
            let k = match c.below(4) {
                3 => c.number(),
                i => keys[usize::from(i)],
            };
            (k, u64::from(c.below(8)))
        })
        .collect()
}

/// A causal frame body (`causal_wire.rs` rule 2) with a structured stamp: clocks over this
/// node, the peer and a node that never sends, so frames are delivered, held or refused.
fn causal(c: &mut Choices<'_>, peer: &str, me: &str) -> Option<Vec<u8>> {
    use crate::node::causal_wire::{node_key, write_prefix};
    let keys = [node_key(peer), node_key(me), node_key("127.0.0.1:10")];
    let label = match c.below(4) {
        0 => "chat".to_owned(),
        1 => "x".to_owned(),
        _ => c.string(),
    };
    let sender = if c.below(4) == 0 { c.number() } else { keys[0] };
    let stamp = Stamp {
        sender,
        clock: clock(c, &keys),
        deps: (0..c.below(3)).map(|_| (keys[usize::from(c.below(3))], clock(c, &keys))).collect(),
    };
    let tag = match c.below(3) {
        0 => tag_hash("troupe.svc.counter.v1"),
        1 => tag_hash("troupe.blob"),
        _ => c.number(),
    };
    let header = DataHeader { target: target(c), tag, ack_seq: if c.below(8) == 0 { c.number() } else { 0 } };
    let payload = c.bytes(64);
    // `frame.rs` rule 7: sometimes a trace context, well-formed or not.
    let traceparent = match c.below(4) {
        0 => Some(b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_vec()),
        1 => Some(c.bytes(64)),
        _ => None,
    };
    let tracestate = if c.below(4) == 0 { Some(c.bytes(32)) } else { None };
    let ext = HeaderExt { traceparent: traceparent.as_deref(), tracestate: tracestate.as_deref() };
    let mut out = Vec::new();
    write_prefix(&label, &stamp, &mut out).ok()?;
    header.write_ext(&ext, &mut out).ok()?;
    out.extend_from_slice(&payload);
    out.push(0);
    Some(out)
}

/// One well-formed frame (kind and body) chosen by `c`.
fn control_frame(c: &mut Choices<'_>, peer: &str, me: &str) -> Option<(u8, Vec<u8>)> {
    let msg = match c.below(16) {
        0 => Control::Monitor { mid: small_id(c), target: target(c) },
        1 => Control::Demonitor { mid: small_id(c) },
        2 => Control::Link { from: small_id(c), to: target(c) },
        3 => Control::Unlink { from: small_id(c), to: target(c) },
        4 => Control::Exit { from: target(c), to: target(c), reason: reason(c) },
        5 if c.flag() => Control::Down { mid: small_id(c), actor: small_id(c), reason: reason(c) },
        5 => Control::Downs {
            actor: small_id(c),
            reason: reason(c),
            mids: (0..c.below(8)).map(|_| small_id(c)).collect(),
        },
        6 => globals(c, peer, me),
        7 => Control::GlobalGone { name: if c.flag() { format!("g{}", c.below(16)) } else { c.string() } },
        8 => Control::Lookup { req: small_id(c), name: c.string() },
        9 => Control::LookupReply { req: small_id(c), found: c.flag().then(|| (small_id(c), c.number(), c.string())) },
        10 => {
            // Only the victim or actors that do not exist: the services stay up.
            let target = if c.flag() { Target::Name(VICTIM.into()) } else { Target::Id(c.number() | 1 << 60) };
            if c.flag() {
                Control::Kill { target }
            } else {
                Control::Stop { target, reason: reason(c) }
            }
        }
        11 => Control::Ack {
            channel: if c.flag() { "default".into() } else { c.string() },
            lane: u16::from(c.below(4)),
            seqs: (0..c.below(6)).map(|_| small_id(c)).collect(),
        },
        12 => Control::Refused {
            target: target(c),
            tag: c.number(),
            replies: (0..c.below(4)).map(|_| small_id(c)).collect(),
            reason: match c.below(4) {
                0 => RefuseReason::NoActor,
                1 => RefuseReason::TypeMismatch { found: c.string() },
                2 => RefuseReason::Undecodable(c.string()),
                _ => RefuseReason::Full,
            },
        },
        13 => Control::Heartbeat,
        14 => return causal(c, peer, me).map(|b| (kind::CAUSAL, b)),
        _ => {
            // A burst of monitors with fresh numbers: crosses `max_monitors_per_peer`.
            let first = c.number();
            let target = target(c);
            let n = c.below(32);
            let mut out = Vec::new();
            for i in 0..u64::from(n) {
                let m = Control::Monitor { mid: first.wrapping_add(i), target: target.clone() };
                write_frame(&mut out, kind::CONTROL, |b| codec::encode_into(&m, b)).ok()?;
            }
            return Some((0, out)); // already framed
        }
    };
    let mut body = Vec::new();
    codec::encode_into(&msg, &mut body).ok()?;
    Some((kind::CONTROL, body))
}

thread_local! {
    static CONTROL: std::cell::OnceCell<Option<(tokio::runtime::Runtime, crate::Node)>> =
        const { std::cell::OnceCell::new() };
}

/// Builds well-formed control frames (monitor, demonitor, link, unlink, exit, down, global
/// names and their removal, lookups and answers, kill, stop, acks, refusals, heartbeats,
/// bursts of monitors) and causal frames with structured stamps from the choices `data`
/// makes, and hands them in order, as an authenticated peer's frames, to the inbound dispatch
/// of a real node (one per thread, with the built-in services and small budgets, so inputs
/// cross them). Frames a budget refuses end the input, as a closed session would. After each
/// input the peer's session is torn down the way a lost peer's is, so inputs do not
/// accumulate memory.
pub fn control_frames(data: &[u8]) {
    CONTROL.with(|cell| {
        let Some((rt, node)) = cell.get_or_init(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            let node = rt.block_on(async {
                let n = crate::Node::start(small_budgets()).await.ok()?;
                crate::services::start(&n, &SERVICES.map(str::to_owned)).ok()?;
                Some(n)
            })?;
            Some((rt, node))
        }) else {
            return;
        };
        rt.block_on(async {
            let inner = &node.inner;
            for name in SERVICES.iter().chain([&VICTIM]) {
                let alive = inner.resolve_local(&Target::Name((*name).into())).is_some_and(|(_, e)| e.any.is_alive());
                if !alive && *name == VICTIM {
                    let _ = node.export(VICTIM, &troupe::spawn(Victim));
                } else if !alive {
                    let _ = crate::services::start(node, &[(*name).to_owned()]);
                }
            }
            let peer_addr = "127.0.0.1:9";
            let me = node.addr();
            let peer = inner.peer_for(peer_addr);
            let mut ctx =
                crate::node::inbound::InCtx { channel: "default".into(), lane: 0, incarnation: 1, acks: Vec::new() };
            let mut c = Choices(data);
            'frames: for _ in 0..256 {
                if c.0.is_empty() {
                    break;
                }
                let Some((k, body)) = control_frame(&mut c, peer_addr, &me) else { continue };
                let mut framed = FrameBuf::new();
                if k == 0 {
                    framed.extend(&body); // already framed (a burst)
                } else {
                    let mut f = Vec::with_capacity(body.len() + 5);
                    if write_frame(&mut f, k, |b| {
                        b.extend_from_slice(&body);
                        Ok(())
                    })
                    .is_ok()
                    {
                        framed.extend(&f);
                    }
                }
                while let Ok(Some((k, body))) = framed.next_frame(1 << 20) {
                    if crate::node::inbound::dispatch(inner, &peer, &mut ctx, k, body).is_err() {
                        break 'frames;
                    }
                }
                tokio::task::yield_now().await;
            }
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
            crate::node::conn::peer_down(inner, &peer, None, crate::node::conn::Cause::Local, "the fuzz input ended");
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::{control_frames, CONTROL};

    /// The structured inputs reach past decoding: budgets are crossed (sessions closed), causal
    /// frames are delivered and held, monitors are placed.
    #[test]
    fn control_frames_reach_the_budgets_and_the_causal_hold() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in 0..2000u32 {
            let mut data = vec![(i % 16) as u8];
            for _ in 0..128 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                data.push(x as u8);
            }
            control_frames(&data);
        }
        let s = CONTROL.with(|c| c.get().and_then(|n| n.as_ref()).map(|(_, n)| n.stats())).expect("the node started");
        assert!(s.limit_closes > 0, "no budget was crossed: {s:?}");
        assert!(s.causal_delivered > 0 && s.causal_waited > 0, "{s:?}");
        assert!(s.frames_out > 0, "the node answered nothing: {s:?}");
        assert_eq!((s.monitors_in, s.links, s.causal_held), (0, 0, 0), "each input is torn down: {s:?}");
    }
}
