//! Watching a run's events file for `work` lines, so the sampler reads the process tree right
//! after each repetition ends (rule 6 of [`super::sampler`]).
//!
//! Rules:
//! 1. [`WorkWatch::poll`] reads what was appended to the file since the last poll (at most
//!    [`MAX_READ`] bytes a poll; the rest waits for the next) and says whether a complete new
//!    line is an event with `"ev": "work"`. A line without the bytes `work` is not parsed.
//! 2. A file that shrank (rewritten) is read again from its start; a file that cannot be read
//!    (not created yet) is a poll that found nothing.
//! 3. An unfinished line waits for its end, up to [`MAX_LINE`] bytes; a longer one is dropped
//!    unread (an events line is far shorter).

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// The most bytes one poll reads (rule 1).
pub const MAX_READ: u64 = 4 << 20;

/// The longest unfinished line kept between polls (rule 3).
pub const MAX_LINE: usize = 1 << 20;

/// Follows one events file (rules 1-3).
///
/// ```
/// use troupe_lab::meter::watch::WorkWatch;
/// let dir = tempfile::tempdir().unwrap();
/// let f = dir.path().join("events.jsonl");
/// let mut w = WorkWatch::new(f.clone());
/// assert!(!w.poll(), "no file yet");
/// std::fs::write(&f, "{\"ev\":\"run_started\"}\n{\"ev\": \"work\", \"rep\": 0}\n").unwrap();
/// assert!(w.poll());
/// assert!(!w.poll(), "nothing new");
/// ```
#[derive(Debug)]
pub struct WorkWatch {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl WorkWatch {
    /// Watches `path` from its start.
    pub fn new(path: PathBuf) -> WorkWatch {
        WorkWatch { path, offset: 0, partial: Vec::new() }
    }

    /// Rules 1-3: whether a `work` line was appended since the last poll.
    pub fn poll(&mut self) -> bool {
        let Ok(mut f) = std::fs::File::open(&self.path) else { return false };
        let Ok(len) = f.metadata().map(|m| m.len()) else { return false };
        if len < self.offset {
            self.offset = 0;
            self.partial.clear();
        }
        if len == self.offset || f.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut buf = Vec::new();
        let Ok(n) = f.take((len - self.offset).min(MAX_READ)).read_to_end(&mut buf) else { return false };
        self.offset += n as u64;
        self.partial.extend_from_slice(&buf);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
            }
            return false;
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        complete.split(|&b| b == b'\n').any(is_work_line)
    }
}

fn is_work_line(line: &[u8]) -> bool {
    line.windows(4).any(|w| w == b"work")
        && serde_json::from_slice::<serde_json::Value>(line)
            .is_ok_and(|v| v.get("ev").and_then(|e| e.as_str()) == Some("work"))
}
