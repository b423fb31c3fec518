//! `troupe lab config`: prints the resolved config of a workload (defaults, --config, --set) as
//! TOML.

use std::path::Path;

use troupe_lab::workload::Workload;

use crate::shared::{resolve, say};

/// `troupe lab config WORKLOAD`: each key's resolved value, with what it allows and means as a
/// comment, then the `[net_faults]` section; the exit code.
pub(super) fn config(w: &'static dyn Workload, file: Option<&Path>, sets: &[String]) -> anyhow::Result<i32> {
    let cfg = resolve(w, file, sets)?;
    // Valid TOML: each key's resolved value, with what it allows and means as a comment.
    say!("# {}", w.about());
    if let Some(obj) = cfg.to_json().as_object() {
        for k in w.schema().keys {
            if let Some(v) = obj.get(k.name) {
                say!(
                    "{} = {v}  # {}; {}",
                    k.name,
                    k.kind.allowed(),
                    k.doc.split_whitespace().collect::<Vec<_>>().join(" ")
                );
            }
        }
    }
    for line in troupe_lab::netfaults::config_lines(&cfg) {
        say!("{line}");
    }
    Ok(0)
}
