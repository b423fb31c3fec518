//! RAPL through the kernel's powercap counters: the package domains (`intel-rapl:N`, named
//! `package-N`; AMD's driver uses the same layout) and their DRAM subdomains
//! (`intel-rapl:N:M`, named `dram`), read as `energy_uj`, with wrap-around handled through
//! each domain's `max_energy_range_uj`.
//!
//! Rules:
//! 1. Only package and DRAM domains count (`psys`, `core`, `uncore` and the MMIO interface are
//!    left out: they overlap the package).
//! 2. A reading is cumulative since [`Powercap::open`]: the sum over domains of each domain's
//!    increments. An increment is `now - before` when the counter grew, and
//!    `max_energy_range_uj - before + now` when it went down (the counter wrapped once; a
//!    sampling interval shorter than the wrap period, minutes even at full power, sees at most
//!    one wrap).
//! 3. A counter that cannot be read any more (the file vanished, permission denied, not a
//!    number) fails the reading with the file and the cause; the caller fails the repetition
//!    rather than switching source.
//! 4. [`probe`] counts the source as working only when every domain opens and the total grew
//!    over the probe's wait: a counter that opens but reads 0 J does not count.

use std::path::{Path, PathBuf};

use super::MeterError;

/// The kernel's powercap folder.
pub const DEFAULT_ROOT: &str = "/sys/class/powercap";

/// One package or DRAM domain.
#[derive(Debug, Clone)]
pub struct Domain {
    /// The domain's folder.
    pub dir: PathBuf,
    /// Its `name` (`package-0`, `dram`).
    pub name: String,
    /// Its `max_energy_range_uj`: the counter's value range.
    pub max_range_uj: u64,
    last_uj: u64,
}

/// The powercap counters of a machine (rules 1-3).
#[derive(Debug, Clone)]
pub struct Powercap {
    domains: Vec<Domain>,
    total_uj: f64,
}

fn read_u64(path: &Path) -> Result<u64, MeterError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| MeterError::Counter { path: path.to_path_buf(), cause: e.to_string() })?;
    text.trim().parse::<u64>().map_err(|_| MeterError::Counter {
        path: path.to_path_buf(),
        cause: format!("not a number: {:?}", text.trim()),
    })
}

fn wanted(dir: &Path) -> Option<String> {
    let file = dir.file_name()?.to_str()?;
    let rest = file.strip_prefix("intel-rapl:")?;
    let name = std::fs::read_to_string(dir.join("name")).ok()?.trim().to_string();
    let top = !rest.contains(':');
    (top && name.starts_with("package") || !top && name == "dram").then_some(name)
}

/// The increment of a counter that went from `before` to `now` (rule 2).
pub fn increment(before: u64, now: u64, max_range_uj: u64) -> u64 {
    if now >= before {
        now - before
    } else {
        max_range_uj.saturating_sub(before) + now
    }
}

impl Powercap {
    /// Opens every package and DRAM domain under `root` (rule 1) and reads each once.
    ///
    /// ```no_run
    /// let mut pc = troupe_lab::meter::rapl::Powercap::open("/sys/class/powercap".as_ref())?;
    /// let joules = pc.read_uj()? / 1e6;
    /// # Ok::<(), troupe_lab::meter::MeterError>(())
    /// ```
    pub fn open(root: &Path) -> Result<Powercap, MeterError> {
        let entries = std::fs::read_dir(root).map_err(|e| MeterError::NoSource {
            which: "rapl",
            why: format!("{} cannot be listed: {e}", root.display()),
        })?;
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        let mut domains = Vec::new();
        for dir in dirs {
            let Some(name) = wanted(&dir) else { continue };
            let max_range_uj = read_u64(&dir.join("max_energy_range_uj"))?;
            let last_uj = read_u64(&dir.join("energy_uj"))?;
            domains.push(Domain { dir, name, max_range_uj, last_uj });
        }
        if domains.is_empty() {
            return Err(MeterError::NoSource {
                which: "rapl",
                why: format!("no package or DRAM domain under {}", root.display()),
            });
        }
        Ok(Powercap { domains, total_uj: 0.0 })
    }

    /// The domains found.
    pub fn domains(&self) -> &[Domain] {
        &self.domains
    }

    /// Microjoules since [`Powercap::open`], summed over domains (rules 2-3).
    pub fn read_uj(&mut self) -> Result<f64, MeterError> {
        let mut now = Vec::with_capacity(self.domains.len());
        for d in &self.domains {
            now.push(read_u64(&d.dir.join("energy_uj"))?);
        }
        for (d, v) in self.domains.iter_mut().zip(now) {
            self.total_uj += increment(d.last_uj, v, d.max_range_uj) as f64;
            d.last_uj = v;
        }
        Ok(self.total_uj)
    }
}

/// Rule 4: opens the counters under `root`, runs `wait` (the caller sleeps; tests bump a fake
/// counter), reads again, and keeps the counters only if they grew.
pub fn probe(root: &Path, wait: impl FnOnce()) -> Result<Powercap, MeterError> {
    let mut pc = Powercap::open(root)?;
    wait();
    let uj = pc.read_uj()?;
    if uj <= 0.0 {
        let names: Vec<String> = pc.domains.iter().map(|d| d.dir.display().to_string()).collect();
        return Err(MeterError::NoSource {
            which: "rapl",
            why: format!("the counters open but read 0 J over the probe ({})", names.join(", ")),
        });
    }
    Ok(Powercap { total_uj: 0.0, ..pc })
}
