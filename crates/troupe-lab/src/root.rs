//! Finding the project root (the folder holding `peers/` and `Cargo.toml`): `TROUPE_HOME` when
//! set, else the nearest such folder at or above the current directory. Peer programs and the
//! git commit are found from it.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

fn is_root(p: &Path) -> bool {
    p.join("peers").is_dir() && p.join("Cargo.toml").is_file()
}

/// The project root, or [`ErrorKind::NoProjectRoot`].
pub fn project_root() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("TROUPE_HOME") {
        let p = PathBuf::from(home);
        return if is_root(&p) {
            Ok(p)
        } else {
            Err(Error::other(format!(
                "TROUPE_HOME={} has no peers/ folder and Cargo.toml; point it at the project root",
                p.display()
            )))
        };
    }
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    cwd.ancestors().find(|p| is_root(p)).map(Path::to_path_buf).ok_or_else(|| Error::new(ErrorKind::NoProjectRoot))
}
