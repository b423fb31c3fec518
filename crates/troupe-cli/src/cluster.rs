//! `troupe cluster status|members --node ADDR`: asks a running cluster node for its view of
//! the membership table (crate `troupe-cluster`) and prints it, as a table or `--json`.
//! The secret comes from `--secret`, else `TROUPE_SECRET`, else the `secret` of `--config`.
//! Exit codes: 2 no secret or a bad config, 4 an unreadable config file, 1 no answer.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::code;

/// `troupe cluster ...`
#[derive(Args)]
pub(crate) struct ClusterArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// The leader, convergence and the members table as the node sees them.
    Status(Target),
    /// Just the members table.
    Members(Target),
}

#[derive(Args)]
struct Target {
    /// The node to ask (host:port).
    #[arg(long)]
    node: String,
    /// The cluster's secret (default: $TROUPE_SECRET, or the `secret` of --config).
    #[arg(long)]
    secret: Option<String>,
    /// A node configuration to take the secret from.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
}

fn secret(t: &Target) -> Result<String, i32> {
    if let Some(s) = t.secret.clone().or_else(|| std::env::var("TROUPE_SECRET").ok()).filter(|s| !s.is_empty()) {
        return Ok(s);
    }
    let Some(path) = &t.config else {
        eprintln!("troupe cluster: no secret: pass --secret, set TROUPE_SECRET, or point --config at a node's config");
        return Err(code::USAGE);
    };
    match troupe_remote::NodeConfig::from_file(path) {
        Ok(c) => Ok(c.secret),
        Err(e) => {
            eprintln!("troupe cluster: {}", troupe::error_chain(&e));
            Err(if matches!(e.kind, troupe_remote::ErrorKind::Io(_)) { code::FILES } else { code::USAGE })
        }
    }
}

pub(crate) fn main(args: ClusterArgs) -> i32 {
    let (t, members_only) = match &args.what {
        What::Status(t) => (t, false),
        What::Members(t) => (t, true),
    };
    let secret = match secret(t) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match troupe_cluster::cli::status_main(&t.node, &secret, Duration::from_secs(t.timeout.max(1))) {
        Ok(s) if t.json && members_only => {
            println!("{}", serde_json::to_string_pretty(&s.members).unwrap_or_default());
            0
        }
        Ok(s) if t.json => {
            println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            0
        }
        Ok(s) => {
            print!("{}", if members_only { s.members_table() } else { s.report() });
            0
        }
        Err(e) => {
            eprintln!("troupe cluster: {}", troupe::error_chain(&e));
            code::FAILED
        }
    }
}
