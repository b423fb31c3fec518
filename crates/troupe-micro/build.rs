//! Build script of troupe-micro: records the versions of the actor libraries it measures
//! (read from the workspace's Cargo.lock) so that every comparison table states them.

use std::path::Path;

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let wanted = ["actix", "actix-rt", "ractor", "kameo", "tokio"];
    let mut found = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            if wanted.contains(&n.as_str()) {
                found.push(format!("{n} {}", v.trim_matches('"')));
            }
        }
    }
    let versions = if found.is_empty() { "unknown (no Cargo.lock)".to_string() } else { found.join(", ") };
    println!("cargo:rustc-env=TROUPE_MICRO_VERSIONS={versions}");
}
