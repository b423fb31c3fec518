//! The `troupe` binary: parses the command line, calls the crates, maps errors to exit codes.
//!
//! Exit codes (documented in `troupe --help` and docs/lab.md):
//! - 0: success.
//! - 1: a run failed (the SUB crashed, hung, or wrote malformed or incomplete events), or a
//!   sweep finished with failed runs, or another runtime error.
//! - 2: usage or configuration error (nothing was started).
//! - 3: a peer runtime's toolchain is missing (the message names the install script).
//! - 4: a file or folder problem: unwritable `--out`, not a run folder, no project root.
//! - 130: interrupted by Ctrl-C (the run folder is kept and marked `interrupted`).

mod compare;
mod lab;
mod node;
mod progress;
mod remote_micro;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// Exit codes.
pub(crate) mod code {
    pub(crate) const FAILED: i32 = 1;
    pub(crate) const USAGE: i32 = 2;
    pub(crate) const TOOLCHAIN: i32 = 3;
    pub(crate) const FILES: i32 = 4;
    pub(crate) const INTERRUPTED: i32 = 130;
}

#[derive(Parser)]
#[command(
    name = "troupe",
    version,
    about = "Troupe: typed actors with OTP supervision, and a reliability lab",
    after_help = "Exit codes: 0 ok; 1 a run failed; 2 usage or config error; 3 toolchain \
                  missing; 4 file or folder problem; 130 interrupted."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The reliability lab: run workloads on Troupe and peer runtimes, sweep, report.
    Lab(lab::LabArgs),
    /// Run a Troupe node (docs/distribution.md describes the config file).
    Node {
        /// The node's TOML config: name, listen address, secret, peers, channels, faults.
        #[arg(long)]
        config: std::path::PathBuf,
    },
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Lab(args) => lab::main(args),
        Command::Node { config } => node::main(&config),
    };
    std::process::exit(code);
}
