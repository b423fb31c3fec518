//! Logs that cannot freeze a node, flood its disk, or be forged by a peer.
//!
//! Rules:
//! 1. No runtime worker ever blocks on the log sink: [`NonBlockingStderr`] hands each formatted
//!    line to a dedicated writer thread through a bounded queue; when the queue is full (stderr
//!    is a pipe nobody reads, a slow terminal) the line is dropped and counted
//!    ([`lines_dropped`]), never waited for.
//! 2. A warning that input from the network can trigger goes through [`warn_limited!`](crate::warn_limited): at most
//!    [`BURST`] lines per call site per second; the rest are counted ([`lines_suppressed`]) and
//!    the next line that gets out says how many were suppressed.
//! 3. Every peer-supplied string (node names, listen addresses, channel names, reasons) is
//!    logged and printed through [`Esc`], which escapes control characters and the Unicode
//!    line separators and direction controls ([`unsafe_char`]), so a peer can neither start a
//!    forged log or stdout line nor make a line display in another order than it reads.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Rule 2: lines per call site per second.
pub const BURST: u32 = 10;

static SUPPRESSED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Warning lines suppressed by the rate limit (rule 2), process-wide.
#[must_use]
pub fn lines_suppressed() -> u64 {
    SUPPRESSED.load(Ordering::Relaxed)
}

/// Log lines dropped because the sink did not keep up (rule 1), process-wide.
#[must_use]
pub fn lines_dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Rule 3: whether `c` may not appear unescaped in a log line: a control character (C0, DEL,
/// C1, which includes NEL), a line or paragraph separator (U+2028, U+2029), or a direction
/// control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which can make a line read
/// differently than it displays (issue 36: U+2028 and U+202E passed into `event` lines).
#[must_use]
pub fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200e}' | '\u{200f}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Rule 3: a peer-supplied string, displayed with [`unsafe_char`]s escaped (`\n`, `\u{1b}`,
/// `\u{2028}`, `\u{202e}`).
pub struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if unsafe_char(c) {
                write!(f, "{}", c.escape_default())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Rule 3 as an owned string.
#[must_use]
pub fn esc(s: &str) -> String {
    Esc(s).to_string()
}

/// One call site's rate limit (rule 2).
#[derive(Debug)]
pub struct Throttle {
    state: Mutex<Option<(Instant, u32, u64)>>,
}

impl Throttle {
    /// A fresh limit.
    #[must_use]
    pub const fn new() -> Self {
        Self { state: Mutex::new(None) }
    }

    /// `Some(n)` when a line may go out (`n` lines were suppressed before it), `None` when this
    /// one is suppressed (and counted).
    pub fn admit(&self) -> Option<u64> {
        let now = Instant::now();
        let mut g = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (start, n, suppressed) = g.get_or_insert((now, 0, 0));
        if now.duration_since(*start) >= Duration::from_secs(1) {
            *start = now;
            *n = 0;
        }
        if *n >= BURST {
            *suppressed += 1;
            SUPPRESSED.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *n += 1;
        Some(std::mem::take(suppressed))
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new()
    }
}

/// `tracing::warn!` limited to [`BURST`] lines per second at this call site (rule 2).
#[macro_export]
#[doc(hidden)]
macro_rules! warn_limited {
    ($($arg:tt)*) => {{
        static THROTTLE: $crate::logging::Throttle = $crate::logging::Throttle::new();
        match THROTTLE.admit() {
            Some(0) => ::tracing::warn!($($arg)*),
            Some(n) => ::tracing::warn!(suppressed_before = n, $($arg)*),
            None => {}
        }
    }};
}

/// Rule 1: a `tracing-subscriber` writer that never blocks its caller.
#[derive(Clone, Debug)]
pub struct NonBlockingStderr {
    tx: SyncSender<Vec<u8>>,
    /// Lines queued and lines written, for [`NonBlockingStderr::drain`].
    counts: std::sync::Arc<(AtomicU64, AtomicU64)>,
}

impl NonBlockingStderr {
    /// A writer with room for `lines` queued lines. Its thread writes them to stderr.
    #[must_use]
    pub fn new(lines: usize) -> Self {
        let (tx, rx) = sync_channel::<Vec<u8>>(lines);
        let counts = std::sync::Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let written = counts.clone();
        let _ = std::thread::Builder::new().name("troupe-log".into()).spawn(move || {
            let err = std::io::stderr();
            for line in rx {
                let mut e = err.lock();
                let _ = e.write_all(&line);
                let _ = e.flush();
                written.1.fetch_add(1, Ordering::Release);
            }
        });
        Self { tx, counts }
    }

    /// At exit: gives the lines queued so far at most `limit` to reach stderr (polling), so a
    /// stderr nobody reads delays an exit by `limit` at most.
    pub fn drain(&self, limit: Duration) {
        let end = Instant::now() + limit;
        let queued = self.counts.0.load(Ordering::Acquire);
        while self.counts.1.load(Ordering::Acquire) < queued && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Write for NonBlockingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.tx.try_send(buf.to_vec()) {
            Ok(()) => {
                self.counts.0.fetch_add(1, Ordering::Release);
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(feature = "cli")]
impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for NonBlockingStderr {
    type Writer = NonBlockingStderr;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esc_escapes_control_characters_only() {
        assert_eq!(esc("node-1 ünïcode"), "node-1 ünïcode");
        assert_eq!(esc("a\nWARN forged\r\x1b[31m"), "a\\nWARN forged\\r\\u{1b}[31m");
    }

    /// Regression (issue 36): U+2028 and U+202E passed unescaped into `event` lines.
    #[test]
    fn rule_3_esc_escapes_unicode_line_separators_and_direction_controls() {
        assert_eq!(esc("a\u{2028}b\u{2029}c"), "a\\u{2028}b\\u{2029}c");
        assert_eq!(esc("x\u{202e}exe.txt\u{2066}\u{200f}"), "x\\u{202e}exe.txt\\u{2066}\\u{200f}");
        assert_eq!(esc("\u{85}"), "\\u{85}");
        assert_eq!(esc("عربى עברית"), "عربى עברית", "right-to-left text itself is fine");
    }

    #[test]
    fn throttle_admits_a_burst_then_counts() {
        let t = Throttle::new();
        for _ in 0..BURST {
            assert_eq!(t.admit(), Some(0));
        }
        let before = lines_suppressed();
        assert_eq!(t.admit(), None);
        assert_eq!(t.admit(), None);
        assert!(lines_suppressed() >= before + 2);
    }
}
