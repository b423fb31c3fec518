//! `troupe-node --config FILE`: one Troupe node as an OS process (what `troupe node` runs).
//! Exit codes: 0 on a clean stop, 2 for bad usage, 1 for any other error.

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
        std::process::exit(1);
    }
}
