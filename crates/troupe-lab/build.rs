//! Build script of troupe-lab: embeds the git commit the lab (and so the `troupe` binary) was
//! built from, and whether tracked files had changes then, so a binary run outside the checkout
//! still records its commit in every manifest (`machine::BUILD_COMMIT`).
//!
//! Hand-written rather than `vergen-gitcl`/`built`: it is two `git` calls, and those crates add
//! a dependency tree to every build of the workspace for the same two values.
//!
//! Rerun rules: when HEAD moves (its file, the branch's ref, packed refs), when the index
//! changes (`git add`, commit), and when anything under `crates/` changes, so the dirty flag
//! follows edits of the Rust sources it was built from.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed={}", here.join("../../crates").display());
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        // Not a git checkout (a source tarball): nothing to embed; the lab says "unknown".
        return;
    };
    for (flag, file) in [("--git-dir", "HEAD"), ("--git-dir", "index"), ("--git-common-dir", "packed-refs")] {
        if let Some(dir) = git(&["rev-parse", flag]) {
            println!("cargo:rerun-if-changed={}", here.join(dir).join(file).display());
        }
    }
    if let (Some(dir), Some(head)) = (git(&["rev-parse", "--git-common-dir"]), git(&["symbolic-ref", "-q", "HEAD"])) {
        let r: PathBuf = here.join(dir).join(head);
        println!("cargo:rerun-if-changed={}", r.display());
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=TROUPE_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=TROUPE_BUILD_DIRTY={dirty}");
}
