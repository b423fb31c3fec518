//! The `troupe` binary: parses the command line, calls the crates, maps errors to exit codes.

fn main() {
    eprintln!("troupe: no subcommands are built yet");
    std::process::exit(2);
}
