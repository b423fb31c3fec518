//! `troupe-crdt-bench [--nodes N] [--updates N] [--warmup N] [--node-bin PATH]`: issue 14's
//! CRDT replication figure (`troupe_crdt::bench`), one JSON object a line on standard output.
//! Run it from a release build: `cargo run --release -p troupe-crdt --bin troupe-crdt-bench`
//! (it starts the `troupe-crdt-node` next to itself). Exit 1 when the run fails.

fn main() {
    let mut cfg = troupe_crdt::bench::ReplicationConfig::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        let num = |v: &str| v.parse::<usize>().unwrap_or_else(|_| usage(&a));
        match a.as_str() {
            "--nodes" => cfg.nodes = num(&v).max(1),
            "--updates" => cfg.updates = num(&v).max(1),
            "--warmup" => cfg.warmup = num(&v),
            "--node-bin" => cfg.node_bin = v.into(),
            _ => usage(&a),
        }
    }
    for r in troupe_crdt::bench::sizes() {
        println!("{r}");
    }
    match troupe_crdt::bench::replication(&cfg) {
        Ok(r) => println!("{r}"),
        Err(e) => {
            eprintln!("troupe-crdt-bench: {e}");
            std::process::exit(1);
        }
    }
}

fn usage(arg: &str) -> ! {
    eprintln!("troupe-crdt-bench: bad argument {arg:?}; usage: troupe-crdt-bench [--nodes N] [--updates N] [--warmup N] [--node-bin PATH]");
    std::process::exit(2);
}
