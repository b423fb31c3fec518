//! Restarting children (rules 3, 4, 5, 8, 9 and 12 of `server.rs`): what a child's exit does,
//! the intensity count, the strategy's group, backoff, retries of failed restarts, and
//! auto-shutdown.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

use super::{Cmd, Supervisor, SupervisorMsg};
use crate::any_ref::AnyRef;
use crate::supervisor::clock::clock_second;
use crate::supervisor::spec::{AutoShutdown, IntensityWindow, Restart, Strategy};
use crate::{Ctx, ExitReason};

impl Supervisor {
    /// Rule 4: counts a restart; false when the intensity is exceeded.
    pub(super) fn count_restart(&mut self) -> bool {
        let now = Instant::now();
        self.restarts.push_back(now);
        let period = self.spec.period;
        let expired = |t: Instant| match self.spec.window {
            IntensityWindow::Exact => now.duration_since(t) > period,
            // Whole seconds of the process-wide clock (OTP's `erlang:monotonic_time(second)`).
            IntensityWindow::WholeSeconds => clock_second(now) - clock_second(t) > period.as_secs() as i64,
        };
        while self.restarts.front().is_some_and(|t| expired(*t)) {
            self.restarts.pop_front();
        }
        self.restarts.len() <= self.spec.intensity as usize
    }

    pub(super) fn give_up(&mut self, ctx: &mut Ctx<Self>, child: &str, reason: &ExitReason) {
        // reports.rs rule 2 (OTP's `reached_max_restart_intensity`): the escalation.
        tracing::error!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(), child,
            strategy = self.strategy_name(), %reason, intensity = self.spec.intensity,
            period_ms = self.spec.period.as_millis() as u64, "restart intensity exceeded");
        ctx.stop(ExitReason::Shutdown);
    }

    pub(super) async fn on_child_exit(&mut self, ctx: &mut Ctx<Self>, i: usize, reason: ExitReason) {
        let strategy = self.strategy_name();
        let c = &mut self.children[i];
        if let Some(a) = c.actor.take() {
            if reason.is_abnormal() {
                // reports.rs rule 2 (OTP's `child_terminated` supervisor report).
                tracing::error!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(),
                    child = %c.spec.id, actor = %a.id(), strategy, %reason, "child terminated");
            }
        }
        let restart = match c.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => reason.is_abnormal(),
            Restart::Temporary => false,
        };
        if !restart {
            tracing::debug!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(),
                child = %c.spec.id, restart = c.spec.restart.as_str(), %reason, "child not restarted");
            let significant = c.spec.significant.then(|| c.spec.id.clone());
            if self.leaves_for_good(i) {
                self.children.remove(i);
            }
            if let Some(child) = significant {
                self.auto_shutdown(ctx, &child);
            }
            return;
        }
        self.restart(ctx, i, &reason).await;
    }

    /// Rule 12, after a significant child exited for good.
    pub(super) fn auto_shutdown(&mut self, ctx: &mut Ctx<Self>, child: &str) {
        let shut = match self.spec.auto_shutdown {
            AutoShutdown::Never => false,
            AutoShutdown::AnySignificant => true,
            AutoShutdown::AllSignificant => {
                !self.children.iter().any(|c| c.spec.significant && (c.actor.is_some() || c.restarting))
            }
        };
        if shut {
            tracing::info!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(), child,
                "significant child exited; auto-shutdown");
            ctx.stop(ExitReason::Shutdown);
        }
    }

    /// OTP's `restart/2` for child `i` (exited, or its restart failed): count it (rule 4), stop
    /// the rest of its strategy's group in reverse order (rule 5), start the group in order.
    pub(super) async fn restart(&mut self, ctx: &mut Ctx<Self>, i: usize, reason: &ExitReason) {
        let id = self.children[i].spec.id.clone();
        if !self.count_restart() {
            return self.give_up(ctx, &id, reason);
        }
        // Rule 5: which children go down with it.
        let affected: Vec<usize> = match self.spec.strategy {
            Strategy::OneForOne => vec![i],
            Strategy::OneForAll => (0..self.children.len()).collect(),
            Strategy::RestForOne => (i..self.children.len()).collect(),
        };
        tracing::debug!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(), child = id.as_str(),
            strategy = self.strategy_name(), %reason, restarts = self.restarts.len(), intensity = self.spec.intensity,
            affected = affected.len(), "restarting children");
        self.cause = Some((id.clone(), reason.clone()));
        let others: Vec<usize> = affected.iter().copied().filter(|&j| j != i).collect();
        self.stop_children(ctx, &others).await;
        for &j in &affected {
            self.children[j].pending = true;
            self.children[j].restarting = false;
        }
        // Temporary siblings stopped by the strategy are removed, not restarted.
        let mut j = 0;
        self.children.retain(|c| {
            let keep = !(others.contains(&j) && c.spec.restart == Restart::Temporary);
            j += 1;
            keep
        });
        match self.backoff_delay(&id) {
            Some(delay) => {
                self.generation += 1;
                let msg = SupervisorMsg(Cmd::DelayedRestart(self.generation));
                let _ = ctx.send_after(delay, msg);
            }
            None => self.start_pending(ctx).await,
        }
    }

    pub(super) fn backoff_delay(&mut self, id: &str) -> Option<Duration> {
        let b = self.spec.backoff?;
        let c = self.children.iter_mut().find(|c| c.spec.id == id)?;
        if c.started_at.elapsed() > b.max {
            c.backoff_n = 0;
        }
        let exp = c.backoff_n.min(30);
        c.backoff_n += 1;
        let base = b.min.saturating_mul(1u32 << exp.min(31)).min(b.max);
        let stretch = if b.jitter > 0.0 { rand::thread_rng().gen_range(0.0..=b.jitter) } else { 0.0 };
        Some(base.mul_f64(1.0 + stretch))
    }

    /// Starts pending children in order (those marked `restarting` wait for their own retry).
    /// On a failure, rule 9: the failed child is marked `restarting`, a retry is queued, and the
    /// children after it stay stopped until then.
    pub(super) async fn start_pending(&mut self, ctx: &mut Ctx<Self>) {
        let me = AnyRef(ctx.cell.clone());
        let mut i = 0;
        while i < self.children.len() {
            if !self.children[i].pending || self.children[i].restarting {
                i += 1;
                continue;
            }
            match self.start_one(i, &me).await {
                Ok(started) => {
                    if let Some(actor) = started {
                        #[cfg(feature = "metrics")]
                        crate::reports::restarted(&self.path, self.children[i].spec.label());
                        let (cause, reason) = match &self.cause {
                            Some((c, r)) => (c.as_str(), Some(r)),
                            None => ("", None),
                        };
                        tracing::info!(target: "troupe", supervisor = &*self.path, supervisor_id = %me.id(),
                            child = %self.children[i].spec.id, %actor, strategy = self.strategy_name(), cause,
                            reason = reason.map(tracing::field::display), "child restarted");
                    }
                    if !self.forget_if_ignored_temporary(i, started) {
                        i += 1;
                    }
                }
                Err(reason) => {
                    let id = self.children[i].spec.id.clone();
                    tracing::warn!(target: "troupe", supervisor = &*self.path, supervisor_id = %me.id(), child = %id,
                        strategy = self.strategy_name(), %reason, "child failed to restart; trying again");
                    self.children[i].restarting = true;
                    let _ = ctx.myself().send(SupervisorMsg(Cmd::TryAgain(id, reason)));
                    return;
                }
            }
        }
    }
}
