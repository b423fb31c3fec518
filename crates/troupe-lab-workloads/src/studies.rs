//! The studies `troupe lab reproduce` knows: one committed file per seed under `studies/`,
//! embedded in the binary so `--list` works from any folder. The format and its checks are
//! the core's ([`troupe_lab::study`]); the files live here because they name this crate's
//! workloads.
//!
//! ```
//! let all = troupe_lab_workloads::studies::all().unwrap();
//! let names: Vec<&str> = all.iter().map(|s| s.study.study.as_str()).collect();
//! assert_eq!(names, ["scp", "chat", "energy", "iot", "partisan"]);
//! ```

use troupe_lab::study::{self, LoadedStudy};
use troupe_lab::{Error, ErrorKind, Result};

/// Every study file: (its name, its text), in the order `--list` shows them.
pub const FILES: &[(&str, &str)] = &[
    ("scp.toml", include_str!("../studies/scp.toml")),
    ("chat.toml", include_str!("../studies/chat.toml")),
    ("energy.toml", include_str!("../studies/energy.toml")),
    ("iot.toml", include_str!("../studies/iot.toml")),
    ("partisan.toml", include_str!("../studies/partisan.toml")),
];

/// Every study, parsed and validated against [`crate::registry`].
pub fn all() -> Result<Vec<LoadedStudy>> {
    let reg = crate::registry();
    FILES.iter().map(|(name, text)| study::load(&reg, text, name)).collect()
}

/// The study called `name`, or an error listing them.
pub fn get(name: &str) -> Result<LoadedStudy> {
    let names: Vec<&str> = FILES.iter().map(|(f, _)| f.trim_end_matches(".toml")).collect();
    match FILES.iter().find(|(f, _)| f.trim_end_matches(".toml") == name) {
        Some((f, text)) => study::load(&crate::registry(), text, f),
        None => Err(Error::new(ErrorKind::Unsupported(format!(
            "no study {name:?}{}; studies: {}",
            troupe_lab::did_you_mean(name, &names),
            names.join(", ")
        )))),
    }
}
