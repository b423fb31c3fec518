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
//! 4. The watcher runs beside the program it measures, every few milliseconds, so it costs
//!    little: it reads into one buffer kept between polls (no fresh pages for each read) and
//!    looks for `work` in all the new lines at once before splitting them (a chat run at
//!    50,000 clients appends about 15 MB of events a kill, none of them `work`).

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
        // Rule 4: straight into the buffer kept between polls.
        let kept = self.partial.len();
        if f.take((len - self.offset).min(MAX_READ)).read_to_end(&mut self.partial).is_err() {
            self.partial.truncate(kept);
            return false;
        }
        self.offset += (self.partial.len() - kept) as u64;
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
            }
            return false;
        };
        let found = has_work_line(&self.partial[..end]);
        self.partial.drain(..=end);
        found
    }
}

/// Rule 4: whether complete lines `chunk` hold a `work` event; most chunks have no `work` at
/// all, found by one search of the whole chunk before any line is looked at.
fn has_work_line(chunk: &[u8]) -> bool {
    let maybe = match std::str::from_utf8(chunk) {
        Ok(s) => s.contains("work"),
        Err(_) => chunk.windows(4).any(|w| w == b"work"),
    };
    maybe && chunk.split(|&b| b == b'\n').any(is_work_line)
}

fn is_work_line(line: &[u8]) -> bool {
    line.windows(4).any(|w| w == b"work")
        && serde_json::from_slice::<serde_json::Value>(line)
            .is_ok_and(|v| v.get("ev").and_then(|e| e.as_str()) == Some("work"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(f: &std::path::Path, text: &str) {
        std::fs::OpenOptions::new().create(true).append(true).open(f).unwrap().write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn a_work_line_is_found_once_whole_and_only_a_work_event_counts() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("events.jsonl");
        let mut w = WorkWatch::new(f.clone());
        // "work" inside another event's text (a network fault) is not a work line.
        append(&f, "{\"ev\":\"fault_injected\",\"node\":\"network\"}\n{\"ev\":\"fault_detected\"}\n");
        assert!(!w.poll());
        // Rule 3: half a line waits for its end.
        append(&f, "{\"ev\":\"wo");
        assert!(!w.poll());
        append(&f, "rk\",\"rep\":1}\n{\"ev\":\"throughput\"}\n");
        assert!(w.poll());
        assert!(!w.poll(), "nothing new");
        append(&f, &"{\"ev\":\"fault_detected\",\"by\":\"c1\"}\n".repeat(10_000));
        assert!(!w.poll());
    }

    #[test]
    fn a_rewritten_file_is_read_again_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("events.jsonl");
        let mut w = WorkWatch::new(f.clone());
        append(&f, &"{\"ev\":\"throughput\",\"count\":12345}\n".repeat(100));
        assert!(!w.poll());
        std::fs::write(&f, "{\"ev\":\"work\"}\n").unwrap();
        assert!(w.poll());
    }
}
