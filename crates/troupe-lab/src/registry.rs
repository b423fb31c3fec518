//! The workloads a program knows, handed to the lab by whoever assembles it (the `troupe`
//! binary registers the built-in ones; a test or another binary registers its own). The core
//! names no workload: it resolves a name here once per command and from then on holds the
//! `&dyn Workload` (a [`crate::config::Config`] carries the workload it was built for).
//!
//! ```
//! use troupe_lab::registry::Registry;
//! use troupe_lab::testkit::Noop;
//!
//! let reg = Registry::new(vec![&Noop]);
//! assert_eq!(reg.get("noop").unwrap().name(), "noop");
//! let e = reg.get("nop").unwrap_err().to_string();
//! assert!(e.contains("did you mean `noop`?") && e.contains("available: noop"), "{e}");
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::workload::Workload;

/// The registered workloads, in the order `troupe lab` lists them.
#[derive(Clone)]
pub struct Registry {
    all: Vec<&'static dyn Workload>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Registry {
    /// A registry of `all`, in this order. Two workloads with one name, or one role claimed by
    /// two workloads, is a programming error and panics here, where it is made.
    pub fn new(all: Vec<&'static dyn Workload>) -> Registry {
        for (i, w) in all.iter().enumerate() {
            for other in &all[..i] {
                assert!(other.name() != w.name(), "workload {:?} registered twice", w.name());
                for role in w.roles() {
                    assert!(
                        !other.roles().contains(role),
                        "role {role:?} claimed by {:?} and {:?}",
                        other.name(),
                        w.name()
                    );
                }
            }
        }
        Registry { all }
    }

    /// Every workload, in registration order.
    pub fn all(&self) -> &[&'static dyn Workload] {
        &self.all
    }

    /// The names of the registered workloads.
    pub fn names(&self) -> Vec<&'static str> {
        self.all.iter().map(|w| w.name()).collect()
    }

    /// The workload called `name`, or an error listing the ones there are.
    pub fn get(&self, name: &str) -> Result<&'static dyn Workload> {
        self.all.iter().copied().find(|w| w.name() == name).ok_or_else(|| {
            Error::new(ErrorKind::Unsupported(format!(
                "workload {name:?} is not built in the lab{}; available: {}",
                crate::did_you_mean(name, &self.names()),
                self.names().join(", ")
            )))
        })
    }

    /// The workload that has a Troupe program for `role` (`troupe lab exec <role>`).
    pub fn by_role(&self, role: &str) -> Result<&'static dyn Workload> {
        self.all.iter().copied().find(|w| w.roles().contains(&role)).ok_or_else(|| {
            let roles: Vec<&str> = self.all.iter().flat_map(|w| w.roles().iter().copied()).collect();
            Error::new(ErrorKind::Unsupported(format!("no Troupe program {role:?}; programs: {}", roles.join(", "))))
        })
    }
}

impl Registry {
    /// A config builder for the workload called `name`, from its embedded defaults.
    pub fn builder(&self, name: &str) -> Result<crate::config::ConfigBuilder> {
        Ok(crate::config::ConfigBuilder::new(self.get(name)?))
    }
}
