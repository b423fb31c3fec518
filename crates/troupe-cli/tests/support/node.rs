//! `troupe node --config FILE` as a child process whose stdout lines arrive on a channel, and a
//! bounded wait for a line: what the node CLI tests (`cli_cluster`, `cli_observe`) share.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use super::lab::troupe;

/// How long a node has to print an expected line.
pub(crate) const LINE_WAIT: Duration = Duration::from_secs(60);

/// Starts `troupe node --config path` (stdin piped, stderr discarded); its stdout lines.
pub(crate) fn spawn(path: &Path) -> (Child, Receiver<String>) {
    let mut child = troupe()
        .args(["node", "--config"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// The first line matching `pred` within [`LINE_WAIT`]; panics naming `what` otherwise.
pub(crate) fn wait(lines: &Receiver<String>, pred: impl Fn(&str) -> bool, what: &str) -> String {
    let end = Instant::now() + LINE_WAIT;
    loop {
        match lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(l) if pred(&l) => return l,
            Ok(_) => {}
            Err(_) => panic!("{what}: not seen within {LINE_WAIT:?}"),
        }
    }
}
