//! The Troupe iot system under test as OS processes (the iot peer contract in docs/iot.md):
//! `troupe lab exec iot` is the orchestrator and collector; it starts `servers` processes
//! `troupe lab exec iot-server` and `device_processes` processes `troupe lab exec iot-devices`,
//! each a `troupe-remote` node on 127.0.0.1 sharing one random secret.
//!
//! Rules:
//! 1. Set-up: the orchestrator picks a free loopback port per server and starts the servers;
//!    each joins the others (`devices::peer_membership`), starts its desk
//!    (`troupe_cluster::devices::DeviceServer`) and says `Ready` to the coordinator once it has
//!    a session with every other server (`ready {what: "servers", count: 1}`). Then the device
//!    processes start; each says `Ready` once every one of its devices had a report summed
//!    (`ready {what: "devices", count: n}`).
//! 2. The window opens `warmup_s` after the last `Ready`: `ready {what: "window", start_us}`
//!    from the orchestrator; every `Ready` is answered with `start_us`, and every process times
//!    the window and its share of the schedule from it.
//! 3. Kills: a device process kills its own devices at their instants (the actor is killed,
//!    `fault_injected`, then after `restart_s` a new incarnation starts, `restarted`); the
//!    orchestrator SIGKILLs server processes (`fault_injected`), and after `restart_s` starts
//!    the server again at the same address (`restarted`). A restarted server says `Ready`
//!    and is answered at once; it does not emit `ready` again.
//! 4. Every process ends at the window's end plus one second (servers) or at the window's end
//!    (device processes), or when the orchestrator is gone (re-parented); the orchestrator waits for
//!    them under a deadline, kills what is left whatever happens, and only then writes its
//!    `run_finished`. A child that exits non-zero or early (other than by a planned kill) fails
//!    the run, named in `run_finished {failed_nodes}`.

use std::time::Duration;

use serde_json::json;

use super::config::IotConfig;
use super::process::{index, Tally};
use crate::SutError;
use troupe_lab::config;
use troupe_lab::error::Result;
use troupe_lab::events::writer::EventWriter;
use troupe_lab::schedule;

/// Runs one role from the environment contract; the process exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = config::from_env(&super::Iot)?;
    let cfg = IotConfig::from_config(&cfg_value);
    let sched_path = std::env::var_os("TROUPE_SCHEDULE").ok_or_else(|| {
        SutError::Environment("TROUPE_SCHEDULE is not set; `troupe lab exec` is started by `troupe lab run`".into())
    })?;
    let actions = schedule::read(std::path::Path::new(&sched_path))?;
    let node_name = match role {
        "iot" => "orchestrator".to_string(),
        "iot-server" => format!("server-{}", index()?),
        _ => format!("devices-{}", index()?),
    };
    let writer = EventWriter::from_env("troupe", &node_name)?;
    let em = writer.emitter();
    em.emit(
        "run_started",
        json!({"workload": "iot", "role": role, "config": cfg_value.to_json(),
               "version": format!("troupe {}", env!("CARGO_PKG_VERSION"))}),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(node_name.clone())
        .build()
        .map_err(|e| SutError::Process(format!("cannot start the tokio runtime: {e}")))?;
    let tally = rt.block_on(async {
        match role {
            "iot" => super::orchestrator::orchestrate(&cfg, actions, &em).await,
            "iot-server" => super::server::run(&cfg, &node_name, &actions, &em).await,
            _ => super::devices::run(&cfg, &node_name, actions, &em).await,
        }
    });
    // Counted errors (refused devices) do not fail a process; an error return does.
    let (tally, failed) = match tally {
        Ok(t) => (t, false),
        Err(e) => {
            eprintln!("troupe iot {node_name}: {e}");
            (Tally { errors: 1, ..Tally::default() }, true)
        }
    };
    let (_, write_errors) = writer.finish(tally.finished_json());
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(if write_errors > 0 || failed { 1 } else { 0 })
}
