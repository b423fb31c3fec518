//! A private RabbitMQ for tests (`scripts/rabbitmq.sh start DIR` into a temp dir, stopped by
//! a guard, also on failure), shared by `troupe-lab`'s and `troupe-cli`'s broker tests through
//! `#[path]`. Without RabbitMQ installed, [`Broker::start`] prints a loud SKIPPED line and
//! returns `None`, unless `TROUPE_TEST_REQUIRE_RABBITMQ=1`, when it fails the test.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Written past the test harness's capture, so a skip is seen in a plain `cargo test`.
pub(crate) fn loud(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// The script that starts and stops a private broker.
pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/rabbitmq.sh")
}

/// Whether RabbitMQ is installed here.
pub(crate) fn rabbitmq_installed() -> bool {
    Path::new("/usr/lib/rabbitmq/bin/rabbitmq-server").exists()
        || Command::new("sh").args(["-c", "command -v rabbitmq-server"]).output().is_ok_and(|o| o.status.success())
}

/// A private broker; stopped (with its epmd) when dropped.
pub(crate) struct Broker {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) url: String,
}

impl Broker {
    /// `None` when RabbitMQ is missing and not required (the caller skips).
    pub(crate) fn start() -> Option<Broker> {
        if !rabbitmq_installed() {
            let msg = "RabbitMQ is not installed (run `bash scripts/install-rabbitmq.sh`)";
            assert!(std::env::var("TROUPE_TEST_REQUIRE_RABBITMQ").as_deref() != Ok("1"), "{msg}");
            loud(&format!("SKIPPED ********** {msg}; the broker test did not run **********"));
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        // The script bounds its own wait (60 s) and cleans up after a failed start.
        let out = Command::new("bash").arg(script()).arg("start").arg(dir.path()).output().unwrap();
        assert!(out.status.success(), "rabbitmq.sh start failed: {}", String::from_utf8_lossy(&out.stderr));
        let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(url.starts_with("amqp://guest:guest@127.0.0.1:"), "{url}");
        Some(Broker { dir, url })
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let out = Command::new("bash").arg(script()).arg("stop").arg(self.dir.path()).output();
        if !out.as_ref().is_ok_and(|o| o.status.success()) {
            loud(&format!("rabbitmq.sh stop failed: {out:?}"));
        }
    }
}
