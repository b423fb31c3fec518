//! `troupe-remote-bench [remote-pingpong|remote-latency|contention|detection]...`: runs the
//! distribution benchmarks and prints one JSON line per result (what `troupe lab micro --only`
//! prints once the CLI wires them). Needs `troupe-node` beside it (build both with
//! `cargo build --release -p troupe-remote --bins`).

use troupe_remote::bench::{self, Launcher};

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let names = if names.is_empty() {
        vec!["remote-pingpong".into(), "remote-latency".into(), "detection".into(), "contention".into()]
    } else {
        names
    };
    let launcher = match Launcher::troupe_node() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for name in names {
        let rows = match name.as_str() {
            "remote-pingpong" => bench::remote_pingpong(&launcher, &Default::default()),
            "remote-latency" => bench::remote_latency(&launcher, &Default::default()),
            "contention" => bench::contention(&launcher, &Default::default()),
            "detection" => bench::detection(&launcher, &Default::default()),
            other => {
                eprintln!("unknown benchmark {other:?}; known: remote-pingpong remote-latency contention detection");
                std::process::exit(2);
            }
        };
        match rows {
            Ok(rows) => {
                for r in rows {
                    println!("{}", r.to_json());
                }
            }
            Err(e) => {
                eprintln!("{name}: {e}");
                std::process::exit(1);
            }
        }
    }
}
