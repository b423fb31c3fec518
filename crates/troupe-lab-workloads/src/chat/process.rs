//! What the chat system under test's processes share (`sub.rs` the orchestrator's program,
//! `nodes.rs` the server and client groups, `orchestrator.rs` the distributed set-up): the
//! environment handed to node processes, the set-up bound, signals, the window, the tally.

use std::time::Duration;

use serde_json::json;

use super::config::ChatConfig;
use super::system::now_us;
use troupe_lab::error::Result;
use troupe_lab::events::writer::Emitter;

/// Environment variables handing the orchestrator's node to the node processes.
pub(super) const ENV_NODE: &str = "TROUPE_CHAT_NODE";

pub(super) const ENV_SECRET: &str = "TROUPE_CHAT_SECRET";

pub(super) const ENV_GROUP: &str = "TROUPE_CHAT_GROUP";

/// The server nodes' addresses, comma separated, handed to the client groups.
pub(super) const ENV_MEMBERS: &str = "TROUPE_CHAT_MEMBERS";

/// The longest a set-up step may take (starting 50,000 clients on a loaded 2-core machine
/// takes seconds; this bounds a wedged one).
pub(super) const SETUP_LIMIT: Duration = Duration::from_secs(90);

pub(super) use crate::common::Tally;

pub(super) fn env(name: &str) -> Result<String> {
    troupe_lab::nodes::env(name, "chat")
}

pub(super) use troupe_lab::nodes::interrupted;

/// Emits the window event and returns its start (rule 2).
pub(super) fn open_window(cfg: &ChatConfig, em: &Emitter) -> i64 {
    let start_us = now_us() + (cfg.warmup_s * 1_000_000) as i64;
    em.emit("ready", json!({"what": "window", "count": cfg.duration_s, "start_us": start_us}));
    start_us
}

/// Collects the injector's tally: its last action is due before the window ends, so it has
/// finished or is finishing (bounded); an interrupted run stops it.
pub(super) async fn finish_injector(injector: tokio::task::JoinHandle<(u64, u64)>, tally: &mut Tally) {
    if tally.interrupted {
        injector.abort();
    }
    match tokio::time::timeout(Duration::from_secs(10), injector).await {
        Ok(Ok((done, skipped))) => (tally.injected, tally.skipped) = (done, skipped),
        _ if tally.interrupted => {}
        _ => {
            eprintln!("troupe chat: the injector did not finish its schedule");
            tally.errors += 1;
        }
    }
}
