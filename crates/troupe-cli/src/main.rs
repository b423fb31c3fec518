//! The `troupe` binary: parses the command line, calls the crates, maps errors to exit codes.
//!
//! Exit codes, one table for every subcommand (also in `troupe --help`, docs/lab-reference.md and
//! docs/distribution.md):
//!
//! | code | meaning                                                                          |
//! |------|----------------------------------------------------------------------------------|
//! | 0    | success; `troupe node` stopped by `quit`, SIGINT or SIGTERM                      |
//! | 1    | a run failed (the SUB crashed, hung, or wrote malformed or incomplete events), a |
//! |      | sweep finished with failed runs, or another runtime error                        |
//! | 2    | usage or configuration error, nothing was started: bad flags, an invalid node    |
//! |      | config, a `--dev-certs` name that is not a plain file name or is given twice     |
//! | 3    | a peer runtime's toolchain is missing (the message names the install script)     |
//! | 4    | a file or folder problem: a missing or unreadable config file, an unwritable     |
//! |      | `--out` or `--dev-certs` folder, not a run folder, no project root, a listen      |
//! |      | address that cannot be bound, a `--dev-certs` file that exists (no `--force`) or  |
//! |      | is a symbolic link                                                               |
//! | 5    | a run completed `degraded`: its statistics count failures it did not recover     |
//! |      | from (see its summary.json)                                                      |
//! | 6    | `troupe lab conform`: a rule of the behaviour contract FAILs for some runtime    |
//! | 130  | `troupe lab` interrupted by Ctrl-C (the run folder is kept, marked `interrupted`) |

mod cluster;
mod cluster_micro;
mod lab;
mod micro;
mod node;
mod progress;
mod remote_micro;
mod shared;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3 headers).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// mimalloc's default purge delay (ms), read back to check the index above.
const MI_DEFAULT_PURGE_DELAY: std::os::raw::c_long = 10;
/// The purge delay this binary runs with (ms).
const PURGE_DELAY_MS: std::os::raw::c_long = 1000;

/// Transparent huge pages are off for the `troupe` process and the processes it starts (the
/// setting is inherited). mimalloc's arena is eligible for them, so with the kernel's THP on
/// (`always`, or `madvise` as on the project's VM) a fault in a sparsely used 2 MiB range
/// mapped and zeroed a whole huge page. Measured on the 2-core VM, chat at 50,000 clients (one
/// chat killed every 5 s, distributed, 3 runs each, docs/results/chat-50k-2026-12-07/,
/// sets `9-thp-off` and `11-thp-off-again`): 4.5 KB resident per client instead of 7.3-7.4 KB,
/// and a fifth less CPU per run, as the actors woken by a kill no longer fault in huge pages;
/// the latencies moved within their spread. `MIMALLOC_ALLOW_THP` in the environment still wins
/// (`MIMALLOC_ALLOW_THP=1` keeps THP as the kernel has it).
fn disable_thp() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `PR_SET_THP_DISABLE` takes integers only and changes only this process's (and its
    // children's) huge page policy; a kernel without it returns an error, which is ignored.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// mimalloc returns freed pages to the OS 10 ms after they empty by default, so a process
/// that frees and allocates large buffers at a steady rate (8 MiB messages: the `latency` and
/// `kv` workloads) maps and zero-fills fresh pages for every one. The `troupe` binary keeps them
/// for a second instead (jemalloc's default is 10 s): measured on the 2-core VM, 128 pairs of
/// 512 KiB messages, p99 96-116 ms against 175-344 ms and 1.1-1.35 GB/s against 0.6-0.8 GB/s,
/// three runs each. `MIMALLOC_PURGE_DELAY` in the environment still wins; the memory
/// benchmark's after-stop reading forces a purge (`mi_collect`), so it is unaffected.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: reading and setting a mimalloc option has no preconditions and is thread-safe;
    // the read-back guards against an option index that does not match the linked mimalloc.
    unsafe {
        if libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) == MI_DEFAULT_PURGE_DELAY {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
}

use clap::{Parser, Subcommand};

/// Exit codes.
pub(crate) mod code {
    pub(crate) const FAILED: i32 = 1;
    pub(crate) const USAGE: i32 = 2;
    pub(crate) const TOOLCHAIN: i32 = 3;
    pub(crate) const FILES: i32 = 4;
    /// A run completed with a full set of events, but its statistics count failures the
    /// runtime did not recover from (the manifest's and `summary.json`'s `degraded`).
    pub(crate) const DEGRADED: i32 = 5;
    /// `troupe lab conform`: some rule of the workload's behaviour contract FAILs for some
    /// runtime (a run that failed or could not start fails every rule of its runtime).
    pub(crate) const NONCONFORMING: i32 = 6;
    pub(crate) const INTERRUPTED: i32 = 130;
}

#[derive(Parser)]
#[command(
    name = "troupe",
    version,
    about = "Troupe: typed actors with OTP supervision, and a reliability lab",
    after_help = "Exit codes: 0 ok; 1 a run failed; 2 usage or config error; 3 toolchain \
                  missing; 4 file or folder problem; 5 a run completed degraded (faults \
                  not carried out, clients never recovered, errors: see its summary.json); 6 \
                  `lab conform` found a rule that FAILs; 130 interrupted."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect a running cluster: `troupe cluster status --node ADDR` (docs/cluster.md).
    Cluster(cluster::ClusterArgs),
    /// The reliability lab: run workloads on Troupe and peer runtimes, sweep, report.
    Lab(lab::LabArgs),
    /// Run a Troupe node (docs/distribution.md describes the config file; a `[cluster]` section,
    /// docs/cluster.md, makes it join a cluster), or make development
    /// TLS certificates for nodes with `--dev-certs DIR --names a,b`.
    Node {
        /// The node's TOML config: name, listen address, secret, peers, channels, faults, tls.
        #[arg(long, required_unless_present = "dev_certs", conflicts_with = "dev_certs")]
        config: Option<std::path::PathBuf>,
        /// Write a fresh development CA and a certificate per `--names` node into DIR, print each
        /// node's `[tls]` section, and exit.
        #[arg(long, value_name = "DIR")]
        dev_certs: Option<std::path::PathBuf>,
        /// With `--dev-certs`: the nodes to make certificates for.
        #[arg(long, value_delimiter = ',', default_value = "node", requires = "dev_certs")]
        names: Vec<String>,
        /// With `--dev-certs`: the IP addresses and DNS names the certificates are valid for.
        #[arg(long, value_delimiter = ',', default_value = "127.0.0.1,localhost", requires = "dev_certs")]
        hosts: Vec<String>,
        /// With `--dev-certs`: replace certificates and keys already in DIR (without it they are
        /// kept and nothing is written). Symbolic links are refused either way.
        #[arg(long, requires = "dev_certs")]
        force: bool,
    },
}

fn main() {
    tune_allocator();
    disable_thp();
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Cluster(args) => cluster::main(args),
        Command::Lab(args) => lab::main(args),
        Command::Node { config: Some(config), .. } => node::main(&config),
        Command::Node { dev_certs: Some(dir), names, hosts, force, .. } => node::dev_certs(&dir, &names, &hosts, force),
        Command::Node { .. } => code::USAGE,
    };
    std::process::exit(code);
}
