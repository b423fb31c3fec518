//! A node in another OS process for the benchmarks: writes its configuration, starts it with
//! a [`Launcher`], reads its stdout protocol (`listening on`, events, command answers) with
//! bounded waits, sends it commands, signals it, and kills it when dropped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::Launcher;
use crate::error::{Error, ErrorKind};

/// A node running as a child process.
pub struct ChildNode {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    config: std::path::PathBuf,
    /// Its listen address.
    pub addr: String,
}

impl ChildNode {
    /// Starts a node with the TOML configuration `toml` (which must name it and set the secret).
    pub fn start(launcher: &Launcher, toml: &str) -> Result<ChildNode, Error> {
        let config =
            std::env::temp_dir().join(format!("troupe-bench-{}-{}.toml", std::process::id(), rand::random::<u32>()));
        std::fs::write(&config, toml).map_err(|e| Error::io(format!("cannot write {}", config.display()), e))?;
        let mut child = Command::new(&launcher.program)
            .args(&launcher.args)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::io(format!("cannot start {}", launcher.program.display()), e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::from(ErrorKind::Other("the child node has no stdout pipe".into())))?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut c = ChildNode { child, stdin, lines: rx, config, addr: String::new() };
        let l = c.wait_line(|l| l.starts_with("listening on "), Duration::from_secs(30))?;
        c.addr = l["listening on ".len()..].to_owned();
        Ok(c)
    }

    /// Waits (bounded) for a stdout line matching `pred`.
    pub fn wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> Result<String, Error> {
        let end = Instant::now() + limit;
        loop {
            match self.lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
                Ok(l) if pred(&l) => return Ok(l),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ErrorKind::Timeout("the child node did not print the expected line".into()).into())
                }
                Err(RecvTimeoutError::Disconnected) => return Err(ErrorKind::Closed.into()),
            }
        }
    }

    /// Sends a command line (see [`crate::cli`]).
    pub fn cmd(&mut self, line: &str) -> Result<(), Error> {
        let s = self.stdin.as_mut().ok_or(ErrorKind::Closed)?;
        writeln!(s, "{line}").map_err(|e| Error::io("cannot write to the child node's stdin", e))?;
        s.flush().map_err(|e| Error::io("cannot write to the child node's stdin", e))
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, sent directly (no helper process in between).
    pub fn sigkill(&mut self) -> Result<(), Error> {
        self.child.kill().map_err(|e| Error::io("cannot kill the child node", e))
    }

    /// Sends signal `sig` (e.g. `SIGKILL` = 9, `SIGSTOP` = 19, `SIGCONT` = 18) with kill(1).
    pub fn signal(&self, sig: &str) -> Result<(), Error> {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .map_err(|e| Error::io("cannot run kill", e))?
            .success();
        if ok {
            Ok(())
        } else {
            Err(ErrorKind::Other(format!("kill -{sig} {} failed", self.pid())).into())
        }
    }
}

impl Drop for ChildNode {
    fn drop(&mut self) {
        let _ = self.signal("CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}
