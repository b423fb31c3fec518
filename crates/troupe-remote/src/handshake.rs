//! The versioned, authenticated handshake that opens every connection.
//!
//! Rules (each checked by tests here and in `tests/remote_bad_input.rs`):
//! 1. The dialler sends `Hello` (magic, version, name, listen address, incarnation, channel,
//!    lane, a fresh 32-byte nonce). A wrong magic or version is refused with `Refuse` naming the
//!    acceptor's version, and the connection closes.
//! 2. The acceptor answers `Challenge`: its own identity, its fresh nonce, and a proof
//!    `HMAC-SHA256(secret, "troupe/1 acceptor" | dialler nonce | acceptor nonce | names)`.
//! 3. The dialler checks the proof (in constant time) and answers `Proof` with
//!    `HMAC-SHA256(secret, "troupe/1 dialler" | acceptor nonce | dialler nonce | names)`; a bad
//!    acceptor proof ends the handshake on the dialler's side. The labels differ per direction,
//!    so one side's proof can never be replayed as the other's.
//! 4. The acceptor checks that proof; on success it sends `Welcome`, else `Refuse` and closes.
//!    Nothing but handshake frames is accepted before `Welcome`, and each is at most
//!    [`HANDSHAKE_MAX`] bytes.
//! 5. The whole handshake has a deadline; a silent or stopped peer fails it with `Timeout`.
//! 6. A node name or listen address stated in a handshake is 1 to [`MAX_NAME`] bytes without
//!    control characters, line separators or direction controls
//!    ([`crate::logging::unsafe_char`]), and the listen address is `host:port` (a DNS name, an
//!    IPv4 address or a bracketed IPv6 address, and a port from 1 to 65535), checked before it
//!    is logged or dialled; anything else is refused, so no peer-supplied string can forge a
//!    log or stdout line or a `key=value` field.
//! 7. Bytes that are not a Troupe frame are named for what they are: a TLS record ("the peer
//!    speaks TLS"), an HTTP request ("an HTTP request, not a Troupe peer"), a first frame over
//!    the handshake's fixed limit ("does not speak the Troupe handshake", never "raise
//!    max_frame_bytes"), a wrong magic ("not a Troupe peer"), a wrong version (both versions).
//! 8. Under TLS the name a node states must be the subject common name (CN) of the certificate
//!    it presented in the TLS handshake beneath ([`accept_bound`], [`dial_bound`]); both sides
//!    check, and a mismatch (another node's certificate, or one without a CN) is refused with
//!    both names, so holding one node's certificate and the secret does not make a node
//!    another (issue 36: node "c" was accepted presenting node b's certificate).
//! 9. The acceptor's `Welcome` may advertise optional features it accepts on this connection
//!    ([`Features`]: a flags byte; empty, as every build without such a feature sends it, means
//!    none). The dialler, which is the one that sends data on the connection (rule 1 of the
//!    node), uses a feature only when it was advertised; bytes after the flags are ignored,
//!    room for later features. Builds from before this rule ignore the body, so it costs them
//!    nothing. The feature `otel` advertises trace context ([`Features::TRACE_CONTEXT`]);
//!    every build since the derive advertises typed refusals ([`Features::TYPED_REFUSALS`]:
//!    it decodes `RefuseReason::UnknownType`). A node replies and refuses over the session
//!    it dialled, so a refusal earned before that session is up (the peer's features not yet
//!    known) is held until it is, then sent typed or untyped as that `Welcome` said. Every
//!    build since issue 30 advertises batched `Down`s ([`Features::BATCHED_DOWNS`]: it decodes
//!    `Control::Downs`); a peer that did not advertise them gets one `Down` per monitor.

use std::time::Duration;

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::codec;
use crate::error::{Error, ErrorKind};
use crate::frame::{kind, write_frame, FrameBuf, HANDSHAKE_MAX};
use crate::proto::{Challenge, Hello, Proof, Refuse, MAGIC, VERSION};

/// One side's identity as the handshake states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Node name.
    pub name: String,
    /// Listen address.
    pub listen: String,
    /// Incarnation (random per node lifetime).
    pub incarnation: u64,
}

/// What the acceptor learns: the dialler and which lane this connection is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The dialler.
    pub peer: Identity,
    /// The channel.
    pub channel: String,
    /// The lane.
    pub lane: u16,
}

/// Rule 9: what an acceptor accepts beyond the base protocol, advertised in its `Welcome`.
///
/// ```
/// use troupe_remote::handshake::Features;
/// let f = Features { trace_context: true, typed_refusals: true, batched_downs: true };
/// assert_eq!(Features::from_welcome(&f.to_welcome()), f);
/// assert_eq!(Features::from_welcome(&[]), Features::default(), "an empty Welcome: none");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// W3C trace context in data and reply headers (`frame.rs` rule 7, feature `otel`).
    pub trace_context: bool,
    /// `RefuseReason::UnknownType` in a `Refused` control message (older builds could not
    /// decode it, and would close the connection).
    pub typed_refusals: bool,
    /// `Control::Downs`: the `Down`s of one death to one peer in one frame (`node/downs.rs`;
    /// older builds could not decode it, and would close the connection).
    pub batched_downs: bool,
}

impl Features {
    /// The flag of [`Features::trace_context`].
    pub const TRACE_CONTEXT: u8 = 1;
    /// The flag of [`Features::typed_refusals`].
    pub const TYPED_REFUSALS: u8 = 2;
    /// The flag of [`Features::batched_downs`].
    pub const BATCHED_DOWNS: u8 = 4;

    /// What this build accepts: trace context with the feature `otel`, typed refusals and
    /// batched `Down`s.
    #[must_use]
    pub const fn ours() -> Features {
        Features { trace_context: cfg!(feature = "otel"), typed_refusals: true, batched_downs: true }
    }

    /// The `Welcome` body advertising these features: empty when there are none, as before
    /// rule 9 existed.
    #[must_use]
    pub fn to_welcome(self) -> Vec<u8> {
        let flags = if self.trace_context { Self::TRACE_CONTEXT } else { 0 }
            | if self.typed_refusals { Self::TYPED_REFUSALS } else { 0 }
            | if self.batched_downs { Self::BATCHED_DOWNS } else { 0 };
        if flags == 0 {
            Vec::new()
        } else {
            vec![flags]
        }
    }

    /// The features a `Welcome` body advertises (unknown flags and later bytes are ignored).
    #[must_use]
    pub fn from_welcome(body: &[u8]) -> Features {
        let flags = body.first().copied().unwrap_or(0);
        Features {
            trace_context: flags & Self::TRACE_CONTEXT != 0,
            typed_refusals: flags & Self::TYPED_REFUSALS != 0,
            batched_downs: flags & Self::BATCHED_DOWNS != 0,
        }
    }
}

type HmacSha256 = Hmac<Sha256>;

/// Rule 6: the longest node name or listen address a handshake accepts.
pub const MAX_NAME: usize = 255;

/// Rule 6.
fn check_identity(what: &str, name: &str, listen: &str) -> Result<(), Error> {
    for (field, v) in [("name", name), ("listen address", listen)] {
        if v.is_empty() || v.len() > MAX_NAME || v.chars().any(crate::logging::unsafe_char) {
            return Err(ErrorKind::Handshake(format!(
                "the {what}'s {field} \"{}\" is empty, longer than {MAX_NAME} bytes or has control characters",
                crate::logging::esc(&v.chars().take(64).collect::<String>())
            ))
            .into());
        }
    }
    crate::config::check_host_port(listen).map_err(|e| {
        Error::from(ErrorKind::Handshake(format!(
            "the {what}'s listen address \"{}\" is not host:port: {e}",
            crate::logging::esc(&listen.chars().take(64).collect::<String>())
        )))
    })
}

/// Rule 7: the start of an HTTP request or response (a method or `HTTP/`, then a space or
/// slash). As a Troupe frame it would declare over 1 GB.
fn http(b: &[u8]) -> bool {
    const STARTS: [&[u8]; 10] =
        [b"GET ", b"POST ", b"PUT ", b"HEAD ", b"DELETE ", b"OPTIONS ", b"PATCH ", b"CONNECT ", b"TRACE ", b"HTTP/"];
    STARTS.iter().any(|m| b.len() >= m.len() && b.starts_with(m))
}

/// Rule 7: the start of a TLS record (alert or handshake, TLS major version 3). As a Troupe
/// frame it would declare over 300 MB, so it is never a valid handshake frame.
fn tls_record(b: &[u8]) -> bool {
    b.len() >= 2 && (0x14..=0x17).contains(&b[0]) && b[1] == 3
}

fn mac(secret: &[u8], label: &str, first: &[u8; 32], second: &[u8; 32], dialler: &str, acceptor: &str) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    for part in [label.as_bytes(), first, second, dialler.as_bytes(), acceptor.as_bytes()] {
        m.update(&(part.len() as u32).to_be_bytes());
        m.update(part);
    }
    m
}

fn nonce() -> [u8; 32] {
    let mut n = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut n);
    n
}

async fn send<S: AsyncWrite + Unpin, T: serde::Serialize>(s: &mut S, k: u8, v: &T) -> Result<(), Error> {
    let mut out = Vec::new();
    write_frame(&mut out, k, |b| codec::encode_into(v, b))?;
    s.write_all(&out).await.map_err(|e| Error::io("cannot write a handshake frame", e))?;
    s.flush().await.map_err(|e| Error::io("cannot write a handshake frame", e))
}

async fn recv<S: AsyncRead + Unpin>(s: &mut S, fb: &mut FrameBuf) -> Result<(u8, Vec<u8>), Error> {
    loop {
        if tls_record(fb.peek()) {
            return Err(ErrorKind::Handshake(
                "the peer speaks TLS and this node does not: give both nodes a [tls] section \
                 (`troupe node --dev-certs DIR` makes one) or neither"
                    .into(),
            )
            .into());
        }
        if http(fb.peek()) {
            let line: String =
                String::from_utf8_lossy(fb.peek()).lines().next().unwrap_or("").chars().take(80).collect();
            return Err(ErrorKind::Handshake(format!(
                "the peer sent an HTTP request (\"{}\"), not a Troupe handshake: this port is a Troupe node's; \
                 point HTTP clients (health checks, browsers, proxies) elsewhere, or probe it over plain TCP",
                crate::logging::esc(&line)
            ))
            .into());
        }
        let next = fb.next_frame(HANDSHAKE_MAX).map_err(|e| match e.kind {
            // Rule 7: raising max_frame_bytes cannot help here (the handshake's limit is fixed).
            ErrorKind::FrameTooLarge { size, max } => Error::from(ErrorKind::Handshake(format!(
                "the peer's first frame declares {size} bytes, over the handshake's limit of {max}: \
                 it does not speak the Troupe handshake (another protocol, a scanner, or garbage)"
            ))),
            _ => e,
        })?;
        if let Some((k, body)) = next {
            return Ok((k, body.to_vec()));
        }
        let spare = fb.spare(HANDSHAKE_MAX);
        let n = s.read(spare).await;
        let read = *n.as_ref().unwrap_or(&0);
        fb.filled(HANDSHAKE_MAX, read);
        match n {
            Ok(0) => {
                return Err(ErrorKind::Handshake("the peer closed the connection during the handshake".into()).into())
            }
            Ok(_) => {}
            Err(e) => return Err(Error::io("cannot read a handshake frame", e)),
        }
    }
}

fn refused(body: &[u8]) -> Error {
    match codec::decode::<Refuse>(body) {
        Ok(r) if r.version != VERSION => ErrorKind::Version { ours: VERSION, theirs: r.version }.into(),
        Ok(r) if r.reason.starts_with("auth") => {
            ErrorKind::Auth(format!("the peer refused us: {}", crate::logging::esc(&r.reason))).into()
        }
        Ok(r) => ErrorKind::Handshake(format!("the peer refused us: {}", crate::logging::esc(&r.reason))).into(),
        Err(_) => ErrorKind::Handshake("the peer refused us with an unreadable reason".into()).into(),
    }
}

fn unexpected(k: u8) -> Error {
    ErrorKind::Handshake(format!("unexpected frame kind {k} during the handshake")).into()
}

/// Rule 8: `name`, stated in the handshake, against `cert`, the subject CN of the certificate
/// the same peer presented under TLS (`Some("")`: it has none; `None`: no TLS).
fn check_cert(what: &str, name: &str, cert: Option<&str>) -> Result<(), Error> {
    let esc = crate::logging::esc;
    match cert {
        None => Ok(()),
        Some(cn) if cn == name => Ok(()),
        Some("") => Err(ErrorKind::Handshake(format!(
            "the {what} says it is node \"{}\" but its TLS certificate has no subject common name (CN); \
             under TLS a node's certificate must carry its node name as CN",
            esc(name)
        ))
        .into()),
        Some(cn) => Err(ErrorKind::Handshake(format!(
            "the {what} says it is node \"{}\" but presented the TLS certificate of \"{}\": under TLS a \
             node's name must be its certificate's subject common name (CN)",
            esc(name),
            esc(cn)
        ))
        .into()),
    }
}

/// Runs the dialler's side (rules 1, 3); returns the acceptor's identity and any bytes the
/// acceptor sent after `Welcome`.
pub async fn dial<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    me: &Identity,
    channel: &str,
    lane: u16,
    secret: &[u8],
    deadline: Duration,
) -> Result<(Identity, FrameBuf), Error> {
    dial_bound(s, me, channel, lane, secret, deadline, None).await
}

/// [`dial`] over TLS (rule 8): `cert` is the subject CN of the certificate the acceptor
/// presented (`Some("")` when it has none), which must be the name it states.
pub async fn dial_bound<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    me: &Identity,
    channel: &str,
    lane: u16,
    secret: &[u8],
    deadline: Duration,
    cert: Option<&str>,
) -> Result<(Identity, FrameBuf), Error> {
    dial_features(s, me, channel, lane, secret, deadline, cert).await.map(|(id, fb, _)| (id, fb))
}

/// [`dial_bound`] that also returns the [`Features`] the acceptor advertised (rule 9).
pub async fn dial_features<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    me: &Identity,
    channel: &str,
    lane: u16,
    secret: &[u8],
    deadline: Duration,
    cert: Option<&str>,
) -> Result<(Identity, FrameBuf, Features), Error> {
    let fut = async {
        let n_d = nonce();
        let hello = Hello {
            magic: MAGIC,
            version: VERSION,
            name: me.name.clone(),
            listen: me.listen.clone(),
            incarnation: me.incarnation,
            channel: channel.to_owned(),
            lane,
            nonce: n_d,
        };
        send(s, kind::HELLO, &hello).await?;
        let mut fb = FrameBuf::new();
        let (k, body) = recv(s, &mut fb).await?;
        let ch: Challenge = match k {
            kind::CHALLENGE => codec::decode(&body)?,
            kind::REFUSE => return Err(refused(&body)),
            k => return Err(unexpected(k)),
        };
        if ch.version != VERSION {
            return Err(ErrorKind::Version { ours: VERSION, theirs: ch.version }.into());
        }
        check_identity("acceptor", &ch.name, &ch.listen)?;
        if let Err(e) = check_cert("acceptor", &ch.name, cert) {
            let reason = "name: the node name does not match its TLS certificate".to_owned();
            let _ = send(s, kind::REFUSE, &Refuse { version: VERSION, reason }).await;
            return Err(e);
        }
        let check = mac(secret, "troupe/1 acceptor", &n_d, &ch.nonce, &me.name, &ch.name);
        if check.verify_slice(&ch.proof).is_err() {
            let _ =
                send(s, kind::REFUSE, &Refuse { version: VERSION, reason: "auth: bad acceptor proof".into() }).await;
            return Err(ErrorKind::Auth("the acceptor's proof is wrong".into()).into());
        }
        let proof = mac(secret, "troupe/1 dialler", &ch.nonce, &n_d, &me.name, &ch.name).finalize().into_bytes();
        send(s, kind::PROOF, &Proof { proof: proof.into() }).await?;
        let (k, body) = recv(s, &mut fb).await?;
        let features = match k {
            kind::WELCOME => Features::from_welcome(&body),
            kind::REFUSE => return Err(refused(&body)),
            k => return Err(unexpected(k)),
        };
        Ok((Identity { name: ch.name, listen: ch.listen, incarnation: ch.incarnation }, fb, features))
    };
    tokio::time::timeout(deadline, fut)
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout(format!("handshake did not finish within {deadline:?}"))))?
}

/// Runs the acceptor's side (rules 1, 2, 4); returns the dialler, its lane, and the bytes
/// that followed its proof (data frames may follow at once).
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    me: &Identity,
    secret: &[u8],
    deadline: Duration,
) -> Result<(Accepted, FrameBuf), Error> {
    accept_bound(s, me, secret, deadline, None).await
}

/// [`accept`] over TLS (rule 8): `cert` is the subject CN of the client certificate the
/// dialler presented (`Some("")` when it has none), which must be the name it states.
pub async fn accept_bound<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    me: &Identity,
    secret: &[u8],
    deadline: Duration,
    cert: Option<&str>,
) -> Result<(Accepted, FrameBuf), Error> {
    let fut = async {
        let mut fb = FrameBuf::new();
        let (k, body) = recv(s, &mut fb).await?;
        if k != kind::HELLO {
            return Err(unexpected(k));
        }
        let hello: Hello = codec::decode(&body)?;
        if hello.magic != MAGIC {
            let reason = format!("version: not a Troupe hello; this node speaks troupe protocol {VERSION}");
            let _ = send(s, kind::REFUSE, &Refuse { version: VERSION, reason }).await;
            return Err(ErrorKind::Handshake(format!(
                "not a Troupe peer: the hello's magic is {:02x?}, Troupe's is {MAGIC:02x?}",
                hello.magic
            ))
            .into());
        }
        if hello.version != VERSION {
            let reason = format!("version: this node speaks troupe protocol {VERSION}");
            let _ = send(s, kind::REFUSE, &Refuse { version: VERSION, reason }).await;
            return Err(ErrorKind::Version { ours: VERSION, theirs: hello.version }.into());
        }
        if let Err(e) = check_identity("dialler", &hello.name, &hello.listen) {
            let reason = "name: node name or listen address refused".to_owned();
            let _ = send(s, kind::REFUSE, &Refuse { version: VERSION, reason }).await;
            return Err(e);
        }
        if let Err(e) = check_cert("dialler", &hello.name, cert) {
            let reason = "name: the node name does not match its TLS certificate".to_owned();
            let _ = send(s, kind::REFUSE, &Refuse { version: VERSION, reason }).await;
            return Err(e);
        }
        let n_a = nonce();
        let proof = mac(secret, "troupe/1 acceptor", &hello.nonce, &n_a, &hello.name, &me.name).finalize().into_bytes();
        let ch = Challenge {
            version: VERSION,
            name: me.name.clone(),
            listen: me.listen.clone(),
            incarnation: me.incarnation,
            nonce: n_a,
            proof: proof.into(),
        };
        send(s, kind::CHALLENGE, &ch).await?;
        let (k, body) = recv(s, &mut fb).await?;
        let p: Proof = match k {
            kind::PROOF => codec::decode(&body)?,
            kind::REFUSE => return Err(refused(&body)),
            k => return Err(unexpected(k)),
        };
        let check = mac(secret, "troupe/1 dialler", &n_a, &hello.nonce, &hello.name, &me.name);
        if check.verify_slice(&p.proof).is_err() {
            let _ = send(s, kind::REFUSE, &Refuse { version: VERSION, reason: "auth: wrong secret".into() }).await;
            return Err(ErrorKind::Auth(format!(
                "node \"{}\" at \"{}\" gave a wrong proof",
                crate::logging::esc(&hello.name),
                crate::logging::esc(&hello.listen)
            ))
            .into());
        }
        let mut out = Vec::new();
        write_frame(&mut out, kind::WELCOME, |b| {
            b.extend_from_slice(&Features::ours().to_welcome()); // rule 9
            Ok(())
        })?;
        s.write_all(&out).await.map_err(|e| Error::io("cannot write a handshake frame", e))?;
        let peer = Identity { name: hello.name, listen: hello.listen, incarnation: hello.incarnation };
        Ok((Accepted { peer, channel: hello.channel, lane: hello.lane }, fb))
    };
    tokio::time::timeout(deadline, fut)
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout(format!("handshake did not finish within {deadline:?}"))))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> Identity {
        Identity { name: name.into(), listen: format!("{name}:1"), incarnation: 7 }
    }

    async fn pair(sa: &'static [u8], sb: &'static [u8]) -> (Result<Identity, Error>, Result<Accepted, Error>) {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let d = Duration::from_secs(2);
        let (ia, ib) = (id("a"), id("b"));
        let (x, y) = tokio::join!(dial(&mut a, &ia, "default", 0, sa, d), accept(&mut b, &ib, sb, d));
        (x.map(|r| r.0), y.map(|r| r.0))
    }

    #[tokio::test]
    async fn same_secret_authenticates_both_ways() {
        let (a, b) = pair(b"s3cret", b"s3cret").await;
        assert_eq!(a.unwrap(), id("b"));
        let acc = b.unwrap();
        assert_eq!((acc.peer, acc.channel.as_str(), acc.lane), (id("a"), "default", 0));
    }

    #[tokio::test]
    async fn a_wrong_secret_fails_on_both_sides() {
        let (a, b) = pair(b"one", b"two").await;
        assert!(matches!(a.unwrap_err().kind, ErrorKind::Auth(_)));
        assert!(b.is_err());
    }

    #[tokio::test]
    async fn rule_9_the_dialler_learns_what_the_acceptor_advertises() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let d = Duration::from_secs(2);
        let (ia, ib) = (id("a"), id("b"));
        let (x, y) =
            tokio::join!(dial_features(&mut a, &ia, "default", 0, b"s", d, None), accept(&mut b, &ib, b"s", d));
        y.unwrap();
        let (who, _, features) = x.unwrap();
        assert_eq!((who, features), (id("b"), Features::ours()));
        assert_eq!(Features::ours().trace_context, cfg!(feature = "otel"));
        assert!(Features::ours().typed_refusals);
        assert!(Features::ours().batched_downs);
        // Nothing to advertise: the empty Welcome of before rule 9.
        assert!(Features::default().to_welcome().is_empty());
        assert_eq!(
            Features::from_welcome(&[Features::TRACE_CONTEXT | 0x80, 9, 9]),
            Features { trace_context: true, typed_refusals: false, batched_downs: false }
        );
        assert_eq!(
            Features::from_welcome(&[Features::BATCHED_DOWNS]),
            Features { trace_context: false, typed_refusals: false, batched_downs: true }
        );
    }

    #[tokio::test]
    async fn a_silent_peer_times_out() {
        let (_a, mut b) = tokio::io::duplex(1024);
        let r = accept(&mut b, &id("b"), b"x", Duration::from_millis(50)).await;
        assert!(matches!(r.unwrap_err().kind, ErrorKind::Timeout(_)));
    }

    #[tokio::test]
    async fn bad_magic_is_not_reported_as_a_version_mismatch() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let hello = Hello {
            magic: *b"HTTP",
            version: VERSION,
            name: "x".into(),
            listen: "x:1".into(),
            incarnation: 1,
            channel: "default".into(),
            lane: 0,
            nonce: [0; 32],
        };
        send(&mut a, kind::HELLO, &hello).await.unwrap();
        let e = accept(&mut b, &id("b"), b"x", Duration::from_secs(1)).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e.kind, ErrorKind::Handshake(_)), "{text}");
        assert!(text.contains("not a Troupe peer") && !text.contains("we speak"), "{text}");
    }

    #[tokio::test]
    async fn a_tls_answer_is_named_as_tls_not_as_a_large_frame() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        // A TLS alert record, as a TLS server answers a plaintext hello.
        b.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]).await.unwrap();
        let e = dial(&mut a, &id("a"), "default", 0, b"x", Duration::from_secs(1)).await.unwrap_err();
        let text = e.to_string();
        assert!(text.contains("speaks TLS") && !text.contains("max_frame_bytes"), "{text}");
    }

    #[tokio::test]
    async fn a_name_with_control_characters_is_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let evil = Identity { name: "a\nWARN forged".into(), listen: "127.0.0.1:1".into(), incarnation: 1 };
        let me = id("b");
        let (x, y) = tokio::join!(
            dial(&mut a, &evil, "default", 0, b"s", Duration::from_secs(2)),
            accept(&mut b, &me, b"s", Duration::from_secs(2))
        );
        assert!(x.is_err());
        let text = y.unwrap_err().to_string();
        assert!(!text.contains('\n') && text.contains("control characters"), "{text}");
    }

    /// The acceptor's error for a dialler stating `evil`.
    async fn refusal_of(evil: Identity) -> String {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let me = id("b");
        let (x, y) = tokio::join!(
            dial(&mut a, &evil, "default", 0, b"s", Duration::from_secs(2)),
            accept(&mut b, &me, b"s", Duration::from_secs(2))
        );
        assert!(x.is_err());
        y.unwrap_err().to_string()
    }

    #[tokio::test]
    async fn rule_6_a_listen_address_that_is_not_host_port_is_refused() {
        for listen in ["127.0.0.1:9 peer=forged", "127.0.0.1", "host:0", "a b:1", "[::1:7"] {
            let text = refusal_of(Identity { name: "a".into(), listen: listen.into(), incarnation: 1 }).await;
            assert!(text.contains("not host:port"), "{listen}: {text}");
        }
        for ok in ["[::1]:7000", "node-0.troupe.svc:7000", "10.0.0.1:1"] {
            assert!(check_identity("dialler", "a", ok).is_ok(), "{ok}");
        }
    }

    #[tokio::test]
    async fn rule_6_line_separators_and_direction_controls_are_refused() {
        for name in ["a\u{2028}WARN forged", "a\u{202e}gnp.exe", "a\u{2066}b", "a\u{85}b"] {
            let text = refusal_of(Identity { name: name.into(), listen: "127.0.0.1:1".into(), incarnation: 1 }).await;
            assert!(text.contains("control characters"), "{text}");
            assert!(!text.chars().any(crate::logging::unsafe_char), "escaped: {text:?}");
        }
    }

    #[tokio::test]
    async fn rule_7_an_http_request_is_named_as_http_not_as_a_large_frame() {
        for req in [&b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..], b"POST /api HTTP/1.1\r\n", b"HTTP/1.1 400 Bad\r\n"] {
            let (mut a, mut b) = tokio::io::duplex(1 << 16);
            a.write_all(req).await.unwrap();
            let e = accept(&mut b, &id("b"), b"x", Duration::from_secs(1)).await.unwrap_err();
            let text = e.to_string();
            assert!(text.contains("HTTP request") && !text.contains("max_frame_bytes"), "{text}");
            assert!(!text.contains('\r') && !text.contains('\n'), "{text:?}");
        }
    }

    #[tokio::test]
    async fn rule_8_a_name_that_is_not_the_certificates_is_refused_on_both_sides() {
        let d = Duration::from_secs(2);
        let (ia, ib) = (id("a"), id("b"));
        for (dial_cert, accept_cert) in [(Some("b"), Some("x")), (Some("x"), Some("a")), (Some(""), Some("a"))] {
            let (mut a, mut b) = tokio::io::duplex(1 << 16);
            let (x, y) = tokio::join!(
                dial_bound(&mut a, &ia, "default", 0, b"s", d, dial_cert),
                accept_bound(&mut b, &ib, b"s", d, accept_cert)
            );
            let text = format!("{:?} / {:?}", x.map(|r| r.0), y.map(|r| r.0));
            assert!(text.contains("TLS certificate"), "{dial_cert:?} {accept_cert:?}: {text}");
        }
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let (x, y) = tokio::join!(
            dial_bound(&mut a, &ia, "default", 0, b"s", d, Some("b")),
            accept_bound(&mut b, &ib, b"s", d, Some("a"))
        );
        assert_eq!((x.unwrap().0, y.unwrap().0.peer), (id("b"), id("a")));
    }

    #[tokio::test]
    async fn a_wrong_version_is_refused_with_ours() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let hello = Hello {
            magic: MAGIC,
            version: 99,
            name: "old".into(),
            listen: "x".into(),
            incarnation: 1,
            channel: "default".into(),
            lane: 0,
            nonce: [0; 32],
        };
        send(&mut a, kind::HELLO, &hello).await.unwrap();
        let r = accept(&mut b, &id("b"), b"x", Duration::from_secs(1)).await;
        assert_eq!(r.unwrap_err().kind, ErrorKind::Version { ours: VERSION, theirs: 99 });
        let mut fb = FrameBuf::new();
        let (k, body) = recv(&mut a, &mut fb).await.unwrap();
        assert_eq!(k, kind::REFUSE);
        assert_eq!(codec::decode::<Refuse>(&body).unwrap().version, VERSION);
    }
}
