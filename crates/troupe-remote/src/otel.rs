//! W3C trace context across nodes (feature `otel`): a remote `tell`, an `ask` and the ask's
//! reply carry the sender's OpenTelemetry span context in their frame header, and the receiving
//! node handles the message inside a span parented on it, so both nodes' spans are one trace.
//!
//! Rules:
//! 1. On send, the context is the OpenTelemetry context of the current `tracing` span (through
//!    `tracing-opentelemetry`'s [`OpenTelemetrySpanExt::context`]), or else the OpenTelemetry
//!    API's current context; with neither valid nothing is added. It travels as W3C
//!    `traceparent` (and `tracestate`, when there is one of at most [`MAX_TRACESTATE`] bytes) in
//!    the header extension of `frame.rs` rule 7.
//! 2. It goes only to a peer whose current session's `Welcome` advertised trace context
//!    (`handshake.rs` rule 9): a build without `otel` never receives it, and a frame queued
//!    while no session is up carries none. So nodes with and without the feature interoperate,
//!    and the only wire change is on sessions where both ends have it.
//! 3. On receive, a data frame with a valid context is decoded and delivered to its actor
//!    inside a span [`RECEIVE_SPAN`] (`troupe.remote.receive`, INFO, fields `from` (the peer's
//!    address), `actor` (the target: `id:N` or `name:NAME`; `reply:N` for a reply), `tag` (the
//!    message type's tag), `kind` (`data` or `reply`); not `target`, which OpenTelemetry layers
//!    fill with the module) whose OpenTelemetry parent is that context. A reply frame with a
//!    context is handed to its asker inside the same kind of span on the asker's node. A frame
//!    without a context gets no span (an untraced message costs nothing extra and starts no
//!    trace of its own).
//! 4. A reply handle decoded inside that span remembers the span's context; the reply it sends
//!    carries the context current at the reply if that is valid, else the remembered one. So
//!    the reply continues the trace even when the actor's handler runs outside the span (the
//!    core's `trace-context` feature makes it continue the span itself).
//! 5. A malformed or oversized `traceparent` or `tracestate` ([`parse_traceparent`]: the W3C
//!    rules for version `00`, and for later versions their first 55 characters) is ignored:
//!    the message is delivered without a parent, the node counts it
//!    (`StatsSnapshot::trace_context_dropped`) and logs a rate-limited warning naming what was
//!    wrong. It never fails the message or closes the connection.
//!
//! ```
//! use opentelemetry::trace::{TraceContextExt, TraceId};
//! let tp = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
//! let sc = troupe_remote::otel::parse_traceparent(tp).unwrap();
//! assert_eq!(sc.trace_id(), TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap());
//! assert!(sc.is_remote() && sc.is_sampled());
//! assert_eq!(troupe_remote::otel::format_traceparent(&sc).as_bytes(), tp);
//! assert!(troupe_remote::otel::parse_traceparent(b"00-nope").is_err());
//! # let _ = opentelemetry::Context::new().with_remote_span_context(sc);
//! ```

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::Context;
pub use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::frame::{HeaderExt, Target};
use crate::logging::Esc;
use crate::node::peer::Peer;
use crate::node::NodeInner;

/// The receive span's name (rule 3).
pub const RECEIVE_SPAN: &str = "troupe.remote.receive";
/// A `traceparent` longer than this is oversized (version `00` has 55 characters; later
/// versions may append fields).
pub const MAX_TRACEPARENT: usize = 256;
/// A `tracestate` longer than this is oversized (the W3C limit: 512 characters).
pub const MAX_TRACESTATE: usize = 512;

/// Rule 5: why a received trace context was ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadTraceContext {
    /// Longer than its limit ([`MAX_TRACEPARENT`], [`MAX_TRACESTATE`]).
    Oversized {
        /// `traceparent` or `tracestate`.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Not in the W3C format; says which part is wrong.
    Malformed {
        /// `traceparent` or `tracestate`.
        field: &'static str,
        /// What is wrong.
        why: &'static str,
    },
}

impl fmt::Display for BadTraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadTraceContext::Oversized { field, len, max } => {
                write!(f, "{field} of {len} bytes is over the {max}-byte limit; ignored (the message is delivered)")
            }
            BadTraceContext::Malformed { field, why } => {
                write!(f, "{field} is not W3C trace context: {why}; ignored (the message is delivered)")
            }
        }
    }
}

impl std::error::Error for BadTraceContext {}

fn malformed(why: &'static str) -> BadTraceContext {
    BadTraceContext::Malformed { field: "traceparent", why }
}

/// Lowercase hex digits to bytes; `None` on anything else.
fn hex<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Rule 5: parses a W3C `traceparent` (`VV-<32 hex trace id>-<16 hex parent id>-<2 hex
/// flags>`, lowercase) into a remote span context. Version `ff`, an all-zero trace or parent
/// id, and a version-`00` value that is not exactly 55 characters are malformed; a later
/// version is read by its first 55 characters when a `-` or nothing follows them.
pub fn parse_traceparent(v: &[u8]) -> Result<SpanContext, BadTraceContext> {
    if v.len() > MAX_TRACEPARENT {
        return Err(BadTraceContext::Oversized { field: "traceparent", len: v.len(), max: MAX_TRACEPARENT });
    }
    if v.len() < 55 {
        return Err(malformed("shorter than the 55 characters of version 00"));
    }
    let version = hex::<1>(&v[0..2]).ok_or(malformed("the version is not two lowercase hex digits"))?[0];
    if version == 0xff {
        return Err(malformed("version ff is forbidden"));
    }
    if version == 0 && v.len() != 55 {
        return Err(malformed("version 00 is exactly 55 characters"));
    }
    if v.len() > 55 && v[55] != b'-' {
        return Err(malformed("a later version's extra fields must follow a '-'"));
    }
    if v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
        return Err(malformed("the fields are not separated by '-' at 2, 35 and 52"));
    }
    let trace = hex::<16>(&v[3..35]).ok_or(malformed("the trace id is not 32 lowercase hex digits"))?;
    let span = hex::<8>(&v[36..52]).ok_or(malformed("the parent id is not 16 lowercase hex digits"))?;
    let flags = hex::<1>(&v[53..55]).ok_or(malformed("the flags are not two lowercase hex digits"))?[0];
    if trace == [0; 16] {
        return Err(malformed("the trace id is all zeros"));
    }
    if span == [0; 8] {
        return Err(malformed("the parent id is all zeros"));
    }
    // Only the sampled flag is defined; other bits are not carried over (W3C: for version 00
    // they must be zero, and a receiver ignores what it does not know).
    let flags = TraceFlags::new(flags & TraceFlags::SAMPLED.to_u8());
    Ok(SpanContext::new(TraceId::from_bytes(trace), SpanId::from_bytes(span), flags, true, TraceState::NONE))
}

/// Formats `sc` as a version-`00` `traceparent` (55 characters).
#[must_use]
pub fn format_traceparent(sc: &SpanContext) -> String {
    format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8())
}

/// Rule 5: parses a `tracestate` (at most [`MAX_TRACESTATE`] bytes, the W3C list syntax).
pub fn parse_tracestate(v: &[u8]) -> Result<TraceState, BadTraceContext> {
    if v.len() > MAX_TRACESTATE {
        return Err(BadTraceContext::Oversized { field: "tracestate", len: v.len(), max: MAX_TRACESTATE });
    }
    let bad = BadTraceContext::Malformed { field: "tracestate", why: "not a comma-separated list of key=value" };
    let s = std::str::from_utf8(v).map_err(|_| bad.clone())?;
    s.parse::<TraceState>().map_err(|_| bad)
}

/// Rules 3 and 5: the remote context a frame's header extensions carry: `Ok(None)` without a
/// `traceparent`; an error (the context is then ignored) when it or the `tracestate` is
/// malformed or oversized.
pub fn extract(ext: &HeaderExt<'_>) -> Result<Option<Context>, BadTraceContext> {
    let Some(tp) = ext.traceparent else { return Ok(None) };
    let sc = parse_traceparent(tp)?;
    let state = match ext.tracestate {
        Some(ts) => parse_tracestate(ts)?,
        None => TraceState::NONE,
    };
    let sc = SpanContext::new(sc.trace_id(), sc.span_id(), sc.trace_flags(), true, state);
    Ok(Some(Context::new().with_remote_span_context(sc)))
}

/// Rule 1: the trace context to send, owned (taken before a lane's lock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outgoing {
    traceparent: String,
    tracestate: Option<String>,
}

impl Outgoing {
    fn of(sc: &SpanContext) -> Option<Outgoing> {
        if !sc.is_valid() {
            return None;
        }
        let state = sc.trace_state().header();
        let tracestate = (!state.is_empty() && state.len() <= MAX_TRACESTATE).then_some(state);
        Some(Outgoing { traceparent: format_traceparent(sc), tracestate })
    }

    /// Rule 1: the context of the current `tracing` span, else of the OpenTelemetry API.
    pub(crate) fn current() -> Option<Outgoing> {
        let cx = tracing::Span::current().context();
        Outgoing::of(cx.span().span_context()).or_else(|| Outgoing::of(Context::current().span().span_context()))
    }

    /// Rule 2: `peer`'s current session takes trace context.
    pub(crate) fn takes(peer: &Peer) -> bool {
        peer.trace_context.load(Ordering::Relaxed) && peer.is_up()
    }

    /// Rule 2: the current context when `peer`'s session takes it.
    pub(crate) fn for_peer(peer: &Peer) -> Option<Outgoing> {
        if Outgoing::takes(peer) {
            Outgoing::current()
        } else {
            None
        }
    }

    /// The header extensions carrying it.
    pub(crate) fn ext(&self) -> HeaderExt<'_> {
        HeaderExt {
            traceparent: Some(self.traceparent.as_bytes()),
            tracestate: self.tracestate.as_deref().map(str::as_bytes),
        }
    }
}

/// What a receive span is for (rule 3).
pub(crate) enum Received<'a> {
    /// A data frame to this target.
    Data(&'a Target),
    /// The reply with this number.
    Reply(u64),
}

/// Rules 3 and 5: the span to handle a received frame in, entered; `None` when the frame
/// carries no valid context (a bad one is counted and logged here).
pub(crate) fn receive(
    node: &Arc<NodeInner>,
    peer: &Peer,
    what: Received<'_>,
    tag: u64,
    ext: &HeaderExt<'_>,
) -> Option<tracing::span::EnteredSpan> {
    if ext.is_empty() {
        return None;
    }
    let cx = match extract(ext) {
        Ok(cx) => cx?,
        Err(e) => {
            node.shared.stats.trace_context_dropped.fetch_add(1, Ordering::Relaxed);
            crate::warn_limited!(peer = %Esc(&peer.addr), "trace context from the peer dropped: {e}");
            return None;
        }
    };
    let (kind, actor) = match what {
        Received::Data(Target::Id(id)) => ("data", format!("id:{id}")),
        Received::Data(Target::Name(n)) => ("data", format!("name:{}", Esc(n))),
        Received::Reply(id) => ("reply", format!("reply:{id}")),
    };
    let span = tracing::info_span!(
        "troupe.remote.receive",
        from = %Esc(&peer.addr),
        actor = %actor,
        tag = %crate::types::tag_name_of(tag),
        kind = kind,
        otel.kind = "consumer",
    );
    // Without an OpenTelemetry layer there is no parent to set; the span is still useful to
    // plain `tracing` subscribers.
    let _ = span.set_parent(cx);
    Some(span.entered())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &[u8] = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_round_trips() {
        let sc = parse_traceparent(TP).unwrap();
        assert_eq!(sc.trace_id(), TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap());
        assert_eq!(sc.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
        assert!(sc.is_sampled() && sc.is_remote());
        assert_eq!(format_traceparent(&sc).as_bytes(), TP);
        let unsampled = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert!(!parse_traceparent(unsampled).unwrap().is_sampled());
    }

    #[test]
    fn rule_5_malformed_traceparents_name_what_is_wrong() {
        let cases: [(&[u8], &str); 11] = [
            (b"", "shorter"),
            (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0", "shorter"),
            (b"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "trace id"),
            (b"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "all zeros"),
            (b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "all zeros"),
            (b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "ff"),
            (b"0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version"),
            (b"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "separated"),
            (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "exactly 55"),
            (b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", "'-'"),
            (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba9\xff2b7-01", "parent id"),
        ];
        for (v, needle) in cases {
            let e = parse_traceparent(v).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("ignored"), "{:?}: {e}", String::from_utf8_lossy(v));
        }
        let long = [b'0'; MAX_TRACEPARENT + 1];
        assert!(matches!(parse_traceparent(&long), Err(BadTraceContext::Oversized { len: 257, .. })));
        // A later version with more fields is read by its first 55 characters.
        let later = b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-whatever";
        assert_eq!(parse_traceparent(later).unwrap().trace_id(), parse_traceparent(TP).unwrap().trace_id());
    }

    #[test]
    fn extract_reads_traceparent_and_tracestate_and_refuses_bad_ones() {
        let ext = HeaderExt { traceparent: Some(TP), tracestate: Some(b"vendor=abc,other=1") };
        let cx = extract(&ext).unwrap().unwrap();
        let sc = cx.span().span_context().clone();
        assert_eq!(sc.trace_state().get("vendor"), Some("abc"));
        assert_eq!(Outgoing::of(&sc).unwrap().ext(), ext, "what was received is what would be sent on");
        assert!(extract(&HeaderExt::default()).unwrap().is_none());
        let long = vec![b'a'; MAX_TRACESTATE + 1];
        let bad_state = HeaderExt { traceparent: Some(TP), tracestate: Some(&long) };
        assert!(matches!(extract(&bad_state), Err(BadTraceContext::Oversized { field: "tracestate", .. })));
        let bad_state = HeaderExt { traceparent: Some(TP), tracestate: Some(b"not a list") };
        assert!(extract(&bad_state).is_err());
    }

    #[test]
    fn rule_1_nothing_is_sent_without_a_valid_context() {
        assert_eq!(Outgoing::of(&SpanContext::empty_context()), None);
        assert_eq!(Outgoing::current(), None, "no span, no OpenTelemetry context");
    }
}
