//! A crate outside the workspace depends on `troupe` and `troupe-remote` by path, as a user's
//! crate would, and runs (issue 31's "done when"): it derives `RemoteMessage` for a request
//! with an `Option<String>` reply, starts two nodes, asks across them and shuts everything down
//! with one call (`tests/outside_crate/src/main.rs`).
//!
//! The crate is copied to a temporary directory (so no workspace above it claims it), gets
//! this checkout's `Cargo.lock` (the same dependency versions, resolved offline) and builds into
//! its own target directory under this workspace's (`target/outside-crate`), kept between runs.
//! What it proves that the workspace's own tests cannot: the public API is enough (nothing
//! `pub(crate)` or feature-gated is needed), the derive works from another crate, and the
//! runtime crates build with their default features alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

#[test]
fn a_crate_outside_the_workspace_derives_asks_across_two_nodes_and_shuts_down_in_one_call() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..").canonicalize().unwrap();
    let template = manifest.join("tests/outside_crate");
    let dir = tempfile_dir();
    copy_dir(&template.join("src"), &dir.join("src"));
    let toml = std::fs::read_to_string(template.join("Cargo.toml.in")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), toml.replace("@ROOT@", root.to_str().unwrap())).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    // The workspace's target folder (CARGO_TARGET_DIR when set), a sub-folder of its own: a
    // separate build lock, and dependencies kept between runs.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let target = if target.is_absolute() { target } else { root.join(target) };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = dir.join("out.log");
    let log = std::fs::File::create(&out).unwrap();
    let mut child = Command::new(cargo)
        .args(["run", "--quiet", "--offline"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target.join("outside-crate"))
        .env_remove("RUSTFLAGS")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("cargo runs");
    // Bounded: a cold build of the dependencies takes a few minutes on 2 cores. A thread waits
    // for cargo's exit and reports it; past the bound the test kills cargo by its pid.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(Duration::from_secs(1500)) {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("the outside crate did not build and run within 25 minutes:\n{}", tail(&out));
        }
    };
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(status.success(), "the outside crate failed ({status}):\n{}", tail(&out));
    assert_eq!(text.lines().last(), Some("ok"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("troupe-outside-crate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}
