//! `troupe node --config FILE`: runs one Troupe node (crate `troupe-remote`) until stdin says
//! `quit` or closes. The config file is described in docs/distribution.md.

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
