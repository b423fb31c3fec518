//! `troupe node --config FILE`: runs one Troupe node (crate `troupe-remote`) until stdin says
//! `quit` or closes. The config file is described in docs/distribution.md.
//! `troupe node --dev-certs DIR --names a,b`: development TLS certificates for nodes.

use std::path::Path;

use crate::code;

pub(crate) fn main(config: &Path) -> i32 {
    match troupe_remote::cli::node_main(config) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("troupe node: {e}");
            match &e.kind {
                troupe_remote::ErrorKind::Config(_) => code::USAGE,
                troupe_remote::ErrorKind::Io(_) => code::FILES,
                _ => code::FAILED,
            }
        }
    }
}

/// Writes development certificates (`troupe_remote::dev_certs`) and prints each node's `[tls]`.
pub(crate) fn dev_certs(dir: &Path, names: &[String], hosts: &[String]) -> i32 {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    match troupe_remote::dev_certs(dir, &names, &hosts) {
        Ok(certs) => {
            println!("# a development CA (ca.crt, ca.key) and one certificate per node in {}", dir.display());
            for (name, tls) in names.iter().zip(&certs) {
                println!("\n# node {name}: add to its config\n{}", troupe_remote::toml_section(tls));
            }
            0
        }
        Err(e) => {
            eprintln!("troupe node: {e}");
            code::FILES
        }
    }
}
