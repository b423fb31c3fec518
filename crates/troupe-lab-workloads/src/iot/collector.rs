//! The collector (the iot peer contract, event 4): once a second of the window it asks every
//! server's desk for its counters and emits `throughput {second, count}`, the reports completed
//! cluster-wide during that second.
//!
//! Rules:
//! 1. Polls happen at `start_us + s` seconds for s = 0..=duration_s, all servers at once, each
//!    answer awaited at most 800 ms.
//! 2. A server's count for a second is its total now minus its last known total; a total that
//!    went down means the server restarted, and what it has now was all done since
//!    ([`restart_delta`]). A server that does not answer adds nothing that second and keeps its
//!    last known total (what it did meanwhile is counted when it answers again).

use std::time::Duration;

use serde_json::json;
use troupe::ActorRef;
use troupe_cluster::devices::{DeskMsg, DESK};
use troupe_remote::Node;

use super::process::instant_of;
use troupe_lab::events::writer::Emitter;

/// A server's reports between two polls (rule 2): `now - last`, or `now` when the total went
/// down (the server restarted and counts from zero).
///
/// ```
/// use troupe_lab_workloads::iot::collector::restart_delta;
/// assert_eq!(restart_delta(100, 250), 150);
/// assert_eq!(restart_delta(900, 40), 40); // restarted: its 40 reports are all new
/// ```
pub fn restart_delta(last: u64, now: u64) -> u64 {
    if now >= last {
        now - last
    } else {
        now
    }
}

/// One second's count from the last known totals and this poll (rule 2); updates `last`.
pub fn second_count(last: &mut [Option<u64>], polled: &[Option<u64>]) -> u64 {
    let mut count = 0;
    for (l, p) in last.iter_mut().zip(polled) {
        if let Some(now) = *p {
            count += l.map_or(0, |before| restart_delta(before, now));
            *l = Some(now);
        }
    }
    count
}

async fn poll(desks: &[ActorRef<DeskMsg>]) -> Vec<Option<u64>> {
    let asks = desks.iter().map(|d| {
        let d = d.clone();
        tokio::spawn(async move { d.ask(DeskMsg::Totals, Duration::from_millis(800)).await.ok().map(|t| t.reports) })
    });
    let handles: Vec<_> = asks.collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.ok().flatten());
    }
    out
}

/// Runs the collector over the window (rule 1); returns the seconds' counts.
pub(super) async fn collect(node: Node, servers: Vec<String>, start_us: i64, duration_s: u64, em: Emitter) -> Vec<u64> {
    let desks: Vec<ActorRef<DeskMsg>> = servers.iter().map(|a| node.remote_ref::<DeskMsg>(a, DESK)).collect();
    tokio::time::sleep_until(instant_of(start_us)).await;
    let mut last = poll(&desks).await;
    let mut counts = Vec::with_capacity(duration_s as usize);
    for s in 0..duration_s {
        tokio::time::sleep_until(instant_of(start_us + ((s + 1) * 1_000_000) as i64)).await;
        let now = poll(&desks).await;
        let count = second_count(&mut last, &now);
        em.emit("throughput", json!({"second": s, "count": count}));
        counts.push(count);
    }
    counts
}
