//! `troupe node --config FILE`: runs one Troupe node (crate `troupe-remote`; with a `[cluster]`
//! section also a cluster member, crate `troupe-cluster`) until stdin says
//! `quit`, or SIGINT or SIGTERM arrives (exit 0). The config file is described in
//! docs/distribution.md. Exit codes follow the table in `main.rs`: an invalid config is 2, a
//! config file that cannot be read (or a port that cannot be bound) is 4, anything else 1.
//! `troupe node --dev-certs DIR --names a,b [--force]`: development TLS certificates for nodes
//! (a name that is not a plain file name, or one given twice, is 2; an unwritable DIR, a file
//! already there without `--force`, or a symbolic link is 4).

use std::path::Path;

use crate::code;

pub(crate) fn main(config: &Path) -> i32 {
    match troupe_cluster::cli::node_main(config) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("troupe node: {}", troupe::error_chain(&e));
            match &e.kind {
                troupe_remote::ErrorKind::Config(_) => code::USAGE,
                troupe_remote::ErrorKind::Io(_) => code::FILES,
                _ => code::FAILED,
            }
        }
    }
}

/// Writes development certificates (`troupe_remote::dev_certs`) and prints each node's `[tls]`.
pub(crate) fn dev_certs(dir: &Path, names: &[String], hosts: &[String], force: bool) -> i32 {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    match troupe_remote::dev_certs_with(dir, &names, &hosts, force) {
        Ok(certs) => {
            println!("# a development CA (ca.crt, ca.key) and one certificate per node in {}", dir.display());
            for (name, tls) in names.iter().zip(&certs) {
                println!("\n# node {name}: add to its config\n{}", troupe_remote::toml_section(tls));
            }
            0
        }
        Err(e) => {
            eprintln!("troupe node: {}", troupe::error_chain(&e));
            match &e.kind {
                troupe_remote::ErrorKind::Config(_) => code::USAGE,
                _ => code::FILES,
            }
        }
    }
}
