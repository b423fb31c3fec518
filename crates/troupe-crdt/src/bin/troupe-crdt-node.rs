//! `troupe-crdt-node --config FILE`: a cluster node with a CRDT replicator and `GCounter`
//! commands on standard input (`troupe_crdt::cli`). Exit 0 on quit/SIGINT/SIGTERM, 2 on a
//! bad configuration, 1 otherwise.

fn main() {
    let mut args = std::env::args().skip(1);
    let path = match (args.next().as_deref(), args.next()) {
        (Some("--config"), Some(p)) => p,
        _ => {
            eprintln!("usage: troupe-crdt-node --config FILE");
            std::process::exit(2);
        }
    };
    if let Err(e) = troupe_crdt::cli::node_main(std::path::Path::new(&path)) {
        eprintln!("troupe-crdt-node: {}", troupe::error_chain(&e));
        let code = if matches!(e.kind, troupe_remote::ErrorKind::Config(_)) { 2 } else { 1 };
        std::process::exit(code);
    }
}
