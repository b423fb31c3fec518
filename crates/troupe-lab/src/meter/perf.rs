//! perf's power events: the kernel's `power` PMU (RAPL exposed through `perf_event_open`),
//! read directly with the system call, the way `perf stat -a -e power/energy-pkg/` reads it.
//!
//! Rules:
//! 1. The PMU is described under `<root>/power` (root is [`super::PERF_PMU_ROOT`]): `type` (the
//!    PMU's perf type number), `cpumask` (one CPU per package), `format/event` (which bits of
//!    the config the event number goes in, `config:0-7`), and per event `events/<name>`
//!    (`event=0x02`) with `events/<name>.scale` (joules per count). The events read are
//!    `energy-pkg` (required) and `energy-ram` (when listed): package + DRAM, as with the
//!    powercap counters (`energy-cores`, `energy-gpu` and `energy-psys` overlap the package).
//! 2. One counter per (event, CPU of the cpumask), opened system-wide (pid -1). This needs
//!    CAP_PERFMON (root) or `kernel.perf_event_paranoid` <= 0; a refusal is reported with the
//!    system's error, naming the event and CPU.
//! 3. The kernel accumulates each counter in 64 bits from the open: a reading is the sum of
//!    count x scale over the counters, in microjoules since [`PerfEnergy::open`]; no wrap
//!    handling is needed (2^64 counts of 2^-32 J is 4 GJ).
//! 4. A counter that cannot be read any more fails the reading with the event and the cause;
//!    the caller fails the repetition rather than switching source (the meter's rule 5).
//! 5. [`probe`] counts the source as working only when the counters open and their total grew
//!    over the probe's wait.

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};

use super::MeterError;

/// The events read (rule 1): the package, required, and DRAM, when the PMU lists it.
pub const EVENTS: [&str; 2] = ["energy-pkg", "energy-ram"];

/// One event of the `power` PMU as its sysfs files describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventSpec {
    /// `energy-pkg` or `energy-ram`.
    pub name: String,
    /// The `config` value of the `perf_event_attr`.
    pub config: u64,
    /// Joules per count.
    pub scale: f64,
}

/// The `power` PMU: its perf type, the CPUs to open on, and the events (rule 1).
#[derive(Debug, Clone, PartialEq)]
pub struct PmuSpec {
    /// The PMU's `type` number.
    pub pmu_type: u32,
    /// One CPU per package (`cpumask`).
    pub cpus: Vec<u32>,
    /// The events found, `energy-pkg` first.
    pub events: Vec<EventSpec>,
}

fn no_source(why: String) -> MeterError {
    MeterError::NoSource { which: "perf", why }
}

fn read_text(path: &Path) -> Result<String, MeterError> {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .map_err(|e| no_source(format!("{} cannot be read: {e}", path.display())))
}

/// Parses a sysfs CPU list (`0`, `0,64`, `0-3,8`).
///
/// ```
/// use troupe_lab::meter::perf::parse_cpu_list;
/// assert_eq!(parse_cpu_list("0-2,8").unwrap(), vec![0, 1, 2, 8]);
/// assert!(parse_cpu_list("x").is_err());
/// ```
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let num = |s: &str| s.trim().parse::<u32>().map_err(|_| format!("not a CPU list: {text:?}"));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a || b - a > 4096 {
                    return Err(format!("not a CPU list: {text:?}"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(part)?),
        }
    }
    if cpus.is_empty() {
        return Err(format!("an empty CPU list: {text:?}"));
    }
    Ok(cpus)
}

/// The config value of an event's `event=0x..` term, placed at the low bit of the PMU's
/// `format/event` field (`config:0-7`).
///
/// ```
/// use troupe_lab::meter::perf::event_config;
/// assert_eq!(event_config("event=0x02", "config:0-7").unwrap(), 2);
/// assert_eq!(event_config("event=0x3", "config:8-15").unwrap(), 0x300);
/// ```
pub fn event_config(event: &str, format: &str) -> Result<u64, String> {
    let shift = format
        .trim()
        .strip_prefix("config:")
        .and_then(|bits| bits.split('-').next())
        .and_then(|low| low.parse::<u32>().ok())
        .filter(|s| *s < 64)
        .ok_or_else(|| format!("unsupported event format {format:?} (expected config:LOW-HIGH)"))?;
    let mut value = None;
    for term in event.trim().split(',') {
        match term.split_once('=') {
            Some(("event", v)) => {
                let v = v.trim();
                let parsed = match v.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => v.parse::<u64>(),
                };
                value = Some(parsed.map_err(|_| format!("not an event number: {v:?}"))?);
            }
            _ => return Err(format!("unsupported event term {term:?} in {event:?} (only event=N is read)")),
        }
    }
    value.map(|v| v << shift).ok_or_else(|| format!("no event=N term in {event:?}"))
}

/// Reads the `power` PMU's description under `root` (rule 1).
pub fn describe(root: &Path) -> Result<PmuSpec, MeterError> {
    let dir = root.join("power");
    let pkg = dir.join("events").join(EVENTS[0]);
    if !pkg.exists() {
        return Err(no_source(format!("no perf power event ({} is absent)", pkg.display())));
    }
    let pmu_type = read_text(&dir.join("type"))?
        .parse::<u32>()
        .map_err(|_| no_source(format!("{} is not a number", dir.join("type").display())))?;
    let cpus = parse_cpu_list(&read_text(&dir.join("cpumask"))?).map_err(no_source)?;
    let format = read_text(&dir.join("format").join("event"))?;
    let mut events = Vec::new();
    for name in EVENTS {
        let file = dir.join("events").join(name);
        if !file.exists() {
            continue;
        }
        let config = event_config(&read_text(&file)?, &format).map_err(no_source)?;
        let scale_file = dir.join("events").join(format!("{name}.scale"));
        let scale = read_text(&scale_file)?
            .parse::<f64>()
            .ok()
            .filter(|s| *s > 0.0 && s.is_finite())
            .ok_or_else(|| no_source(format!("{} is not a positive number", scale_file.display())))?;
        events.push(EventSpec { name: name.to_string(), config, scale });
    }
    Ok(PmuSpec { pmu_type, cpus, events })
}

/// `struct perf_event_attr` up to its first published size (`PERF_ATTR_SIZE_VER0`, 64 bytes):
/// the kernel accepts this size and zero-fills the rest. Counting mode, enabled at open.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const ATTR_SIZE_VER0: u32 = 64;

/// One open counter.
#[derive(Debug)]
struct Counter {
    event: String,
    cpu: u32,
    scale: f64,
    file: File,
}

fn open_counter(pmu_type: u32, ev: &EventSpec, cpu: u32) -> Result<Counter, MeterError> {
    let attr = PerfEventAttr { kind: pmu_type, size: ATTR_SIZE_VER0, config: ev.config, ..Default::default() };
    // SAFETY: `attr` is a properly initialised `perf_event_attr` prefix whose `size` field says
    // how many bytes the kernel may read (64, the struct's size, checked by a test); the other
    // arguments are plain integers (pid -1 = every process, the CPU, no group, no flags).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return Err(no_source(format!(
            "perf_event_open(power/{}/ on CPU {cpu}) failed: {err} (needs root or kernel.perf_event_paranoid <= 0)",
            ev.name
        )));
    }
    // SAFETY: the system call returned a new file descriptor that nothing else owns; the File
    // takes sole ownership and closes it on drop.
    let file = unsafe { File::from_raw_fd(fd as libc::c_int) };
    Ok(Counter { event: ev.name.clone(), cpu, scale: ev.scale, file })
}

/// The open counters of the `power` PMU (rules 2-4).
#[derive(Debug)]
pub struct PerfEnergy {
    counters: Vec<Counter>,
}

impl PerfEnergy {
    /// Opens every event of `spec` on every CPU of its cpumask (rule 2).
    pub fn open(spec: &PmuSpec) -> Result<PerfEnergy, MeterError> {
        let mut counters = Vec::new();
        for ev in &spec.events {
            for &cpu in &spec.cpus {
                counters.push(open_counter(spec.pmu_type, ev, cpu)?);
            }
        }
        if counters.is_empty() {
            return Err(no_source("the power PMU lists no energy event to open".into()));
        }
        Ok(PerfEnergy { counters })
    }

    /// What is open, as `event@cpu` names.
    pub fn names(&self) -> Vec<String> {
        self.counters.iter().map(|c| format!("{}@cpu{}", c.event, c.cpu)).collect()
    }

    /// Microjoules since [`PerfEnergy::open`], summed over the counters (rules 3-4).
    pub fn read_uj(&mut self) -> Result<f64, MeterError> {
        let mut total = 0.0;
        for c in &mut self.counters {
            let mut buf = [0u8; 8];
            c.file.read_exact(&mut buf).map_err(|e| MeterError::Counter {
                path: PathBuf::from(format!("perf power/{}/ on CPU {}", c.event, c.cpu)),
                cause: e.to_string(),
            })?;
            total += u64::from_ne_bytes(buf) as f64 * c.scale * 1e6;
        }
        Ok(total)
    }
}

/// Rule 5: describes the PMU under `root`, opens its counters, runs `wait`, and keeps them
/// only if they grew.
pub fn probe(root: &Path, wait: impl FnOnce()) -> Result<PerfEnergy, MeterError> {
    let spec = describe(root)?;
    let mut pe = PerfEnergy::open(&spec)?;
    let before = pe.read_uj()?;
    wait();
    let after = pe.read_uj()?;
    if after <= before {
        return Err(no_source(format!("the counters open but read 0 J over the probe ({})", pe.names().join(", "))));
    }
    Ok(pe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attr_prefix_is_the_published_first_size() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>() as u32, ATTR_SIZE_VER0);
    }
}
