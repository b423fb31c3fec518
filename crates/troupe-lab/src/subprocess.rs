//! What every Troupe-side workload process started by `troupe lab exec` does the same way (the
//! energy, latency and kv workloads' programs call it): read the run's config, start a tokio
//! runtime, announce the run, and turn the outcome into an exit code.
//!
//! Rules:
//! 1. A config that does not parse is one line on stderr, `troupe WORKLOAD: ...` naming what was
//!    wrong, and exit code 2 (bad input), before anything starts.
//! 2. A run's first event is `run_started` with the workload, the config and the version.
//! 3. The exit code is 0 only when the run had no error and every event was written.
//! 4. The program that writes the run's events ([`run_events`]) says its error, if any, in one
//!    line on stderr, `troupe WORKLOAD: ...`, and ends the events with `run_finished {errors}`
//!    (0 or 1) and its own fields.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use crate::config::Spec;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::events::writer::{Emitter, EventWriter};

/// Rule 1: the run's config for `workload`, or the exit code after saying what was wrong.
pub fn config_or_exit(workload: &'static dyn Spec) -> std::result::Result<Config, i32> {
    config::from_env(workload).map_err(|e| {
        let msg = e.to_string();
        let parts: Vec<&str> = msg.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        eprintln!("troupe {}: {}", workload.name(), parts.join(" "));
        2
    })
}

/// A multi-thread tokio runtime (tokio's defaults) for the process.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the tokio runtime: {e}")))
}

/// Runs `fut` to its end on a new runtime, then gives the runtime a second to stop.
pub fn block_on<T>(fut: impl Future<Output = T>) -> Result<T> {
    let rt = runtime()?;
    let out = rt.block_on(fut);
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(out)
}

/// Rule 2.
pub fn run_started(em: &Emitter, workload: &str, cfg: &Config) {
    em.emit(
        "run_started",
        json!({"workload": workload, "config": cfg.to_json(),
               "version": format!("troupe {}", env!("CARGO_PKG_VERSION"))}),
    );
}

/// Rule 3, from the run's errors and the event writer's failed writes.
pub fn exit_code(errors: u64, write_errors: u64) -> i32 {
    i32::from(errors > 0 || write_errors > 0)
}

/// Rules 2-4 for the program that writes the run's events as node `node`: announces the run,
/// runs `body` to its end on a new runtime, says its error on stderr, and finishes the events
/// with `errors` and the fields of `extra` (a JSON object); the exit code.
pub fn run_events<F>(workload: &str, cfg: &Config, node: &str, body: impl FnOnce(Emitter) -> F) -> Result<i32>
where
    F: Future<Output = (std::result::Result<(), String>, serde_json::Value)>,
{
    let writer = EventWriter::from_env("troupe", node)?;
    run_started(&writer.emitter(), workload, cfg);
    let (outcome, extra) = block_on(body(writer.emitter()))?;
    let errors = match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("troupe {workload}: {e}");
            1
        }
    };
    let mut fields = json!({ "errors": errors });
    if let (Some(f), serde_json::Value::Object(extra)) = (fields.as_object_mut(), extra) {
        f.extend(extra);
    }
    let (_, write_errors) = writer.finish(fields);
    Ok(exit_code(errors, write_errors))
}
