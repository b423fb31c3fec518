//! Stopping children (rules 6, 7 and 13 of `server.rs`): one child by its `Shutdown`, several in
//! reverse start order, or, for a `simple_one_for_one` supervisor, all at once.

use tokio::time::Instant;

use super::Supervisor;
use crate::any_ref::AnyRef;
use crate::supervisor::spec::Shutdown;
use crate::{Ctx, ExitReason};

impl Supervisor {
    /// Rule 6.
    pub(super) async fn stop_child(&self, ctx: &mut Ctx<Self>, child: &str, actor: AnyRef, shutdown: Shutdown) {
        ctx.unlink(&actor);
        match shutdown {
            Shutdown::Brutal => actor.kill(),
            Shutdown::Timeout(t) => {
                actor.stop(ExitReason::Shutdown);
                if tokio::time::timeout(t, actor.terminated()).await.is_ok() {
                    return;
                }
                self.not_stopped_in_time(ctx, child, &actor, t);
                actor.kill();
            }
            Shutdown::Infinity => actor.stop(ExitReason::Shutdown),
        }
        actor.terminated().await;
    }

    /// Rule 13: every child asked to stop (or killed) at once, then waited for together; those
    /// still alive at their shutdown timeout are killed.
    pub(super) async fn stop_all_at_once(&mut self, ctx: &mut Ctx<Self>) {
        let kids: Vec<(AnyRef, Shutdown, String)> = self
            .children
            .iter_mut()
            .filter_map(|c| c.actor.take().map(|a| (a, c.spec.shutdown, c.spec.id.clone())))
            .collect();
        for (a, shutdown, _) in &kids {
            ctx.unlink(a);
            match shutdown {
                Shutdown::Brutal => a.kill(),
                _ => a.stop(ExitReason::Shutdown),
            }
        }
        let start = Instant::now();
        for (a, shutdown, child) in kids {
            if let Shutdown::Timeout(t) = shutdown {
                if tokio::time::timeout_at(start + t, a.terminated()).await.is_err() {
                    self.not_stopped_in_time(ctx, &child, &a, t);
                    a.kill();
                }
            }
            a.terminated().await;
        }
    }

    /// Stops the children at `indices` (given in start order) in reverse order.
    pub(super) async fn stop_children(&mut self, ctx: &mut Ctx<Self>, indices: &[usize]) {
        for &i in indices.iter().rev() {
            if let Some(a) = self.children[i].actor.take() {
                let c = &self.children[i].spec;
                self.stop_child(ctx, &c.id, a, c.shutdown).await;
            }
        }
    }

    /// `reports.rs` rule 2.
    fn not_stopped_in_time(&self, ctx: &Ctx<Self>, child: &str, actor: &AnyRef, t: std::time::Duration) {
        tracing::warn!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(), child,
            actor = %actor.id(), timeout_ms = t.as_millis() as u64, "child did not stop in time; killing it");
    }
}
