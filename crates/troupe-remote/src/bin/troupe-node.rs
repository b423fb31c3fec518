//! `troupe-node --config FILE`: one Troupe node as an OS process (what `troupe node` runs).
//! Exit codes, as `troupe node`'s (the table in the `troupe` binary's `main.rs`): 0 on a clean
//! stop (`quit`, SIGINT, SIGTERM), 2 for bad usage or an invalid configuration, 4 for a config
//! file that cannot be read or an address that cannot be bound, 1 for any other error.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = match args.as_slice() {
        [_, flag, path] if flag == "--config" => path.clone(),
        _ => {
            eprintln!("usage: troupe-node --config FILE");
            std::process::exit(2);
        }
    };
    if let Err(e) = troupe_remote::cli::node_main(std::path::Path::new(&path)) {
        eprintln!("troupe-node: {e}");
        std::process::exit(match e.kind {
            troupe_remote::ErrorKind::Config(_) => 2,
            troupe_remote::ErrorKind::Io(_) => 4,
            _ => 1,
        });
    }
}
