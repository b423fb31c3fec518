//! Progress on stderr. The sweep and comparison bar ([`Bar`], indicatif): position counts planned
//! seconds of run time, advanced by a ticker while a run is in progress, so the ETA is in real
//! time, not in runs. One run's progress ([`RunProgress`]): a bar with elapsed time and ETA on a
//! terminal, and a plain line every tenth of the run (1 to 10 s apart) otherwise, so a log or CI
//! shows the run is alive.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use troupe_lab::run::RunOutcome;
use troupe_lab::sweep::{Point, SweepObserver};

fn planned_secs(p: &Point) -> u64 {
    (p.config.int("warmup_s") + p.config.int("duration_s")) as u64 + 2
}

/// Draws the sweep's progress on stderr.
pub(crate) struct Bar {
    bar: ProgressBar,
    total_points: usize,
    index: usize,
    base: Arc<AtomicU64>,
    running: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
    pending_secs: u64,
}

impl Bar {
    pub(crate) fn new(points: &[Point]) -> Bar {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {percent}% ETA {eta_precise}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Bar {
            bar,
            total_points: points.len(),
            index: 0,
            base: Arc::new(AtomicU64::new(0)),
            running: Arc::new(AtomicBool::new(false)),
            ticker: None,
            pending_secs: points.iter().map(planned_secs).sum(),
        }
    }

    fn stop_ticker(&mut self) {
        self.running.store(false, Ordering::SeqCst);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }

    /// A line above the bar; plain stderr when the bar is hidden (not a terminal).
    fn line(&self, text: String) {
        if self.bar.is_hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    pub(crate) fn finish(mut self) {
        self.stop_ticker();
        self.bar.finish_and_clear();
    }
}

impl SweepObserver for Bar {
    fn planned(&mut self, total: usize, done: usize) {
        self.total_points = total;
        self.index = done;
        self.bar.set_length(self.pending_secs.max(1));
        if done > 0 {
            self.line(format!("resuming: {done} of {total} runs already complete"));
        }
    }

    fn started(&mut self, point: &Point) {
        self.index += 1;
        self.bar.set_message(format!("run {}/{}: {}", self.index, self.total_points, point.name));
        self.stop_ticker();
        let planned = planned_secs(point);
        let (bar, base, running) = (self.bar.clone(), Arc::clone(&self.base), Arc::clone(&self.running));
        running.store(true, Ordering::SeqCst);
        let t0 = Instant::now();
        self.ticker = Some(std::thread::spawn(move || {
            while running.load(Ordering::SeqCst) {
                let e = t0.elapsed().as_secs().min(planned);
                bar.set_position(base.load(Ordering::SeqCst) + e);
                std::thread::park_timeout(Duration::from_millis(500));
            }
        }));
    }

    fn finished(&mut self, point: &Point, outcome: &RunOutcome) {
        self.stop_ticker();
        let b = self.base.fetch_add(planned_secs(point), Ordering::SeqCst) + planned_secs(point);
        self.bar.set_position(b);
        let what = match (&outcome.stats, outcome.manifest.status) {
            (Some(s), troupe_lab::manifest::Status::Ok) => format!("ok  {}", s.headline()),
            (Some(s), troupe_lab::manifest::Status::Degraded) => {
                let r = outcome.manifest.reason.as_deref().unwrap_or_default();
                format!("DEGRADED  {} ({})", s.headline(), r.strip_prefix("degraded: ").unwrap_or(r))
            }
            _ => format!("FAILED: {}", outcome.manifest.reason.clone().unwrap_or_default()),
        };
        self.line(format!("[{}/{}] {}: {what}", self.index, self.total_points, point.name));
    }

    fn note(&mut self, text: &str) {
        self.line(text.to_string());
    }
}

/// One run's progress: started before the run, finished after it.
pub(crate) struct RunProgress {
    bar: ProgressBar,
    running: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl RunProgress {
    /// Starts showing progress of `what`, planned to take `planned` (the workload's expected
    /// duration: set-up, warm-up and window).
    pub(crate) fn start(what: &str, planned: Duration) -> RunProgress {
        let secs = planned.as_secs().max(1);
        let bar = ProgressBar::new(secs);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} s ETA {eta_precise}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(what.to_owned());
        let running = Arc::new(AtomicBool::new(true));
        let (b, r, what) = (bar.clone(), Arc::clone(&running), what.to_owned());
        let every = line_interval(planned);
        let ticker = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let t0 = Instant::now();
                let mut next_line = every;
                while r.load(Ordering::SeqCst) {
                    let e = t0.elapsed();
                    b.set_position(e.as_secs().min(secs));
                    if b.is_hidden() && e >= next_line {
                        eprintln!("{}", progress_line(&what, e, planned));
                        next_line += every;
                    }
                    std::thread::park_timeout(Duration::from_millis(200));
                }
            })
            .ok();
        RunProgress { bar, running, ticker }
    }

    /// Stops the ticker and clears the bar.
    pub(crate) fn finish(mut self) {
        self.running.store(false, Ordering::SeqCst);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

/// A tenth of the planned run, kept within 1..=10 s.
fn line_interval(planned: Duration) -> Duration {
    (planned / 10).clamp(Duration::from_secs(1), Duration::from_secs(10))
}

/// The plain progress line: elapsed, planned, and what is left (or how far past the plan).
fn progress_line(what: &str, elapsed: Duration, planned: Duration) -> String {
    let (e, p) = (elapsed.as_secs(), planned.as_secs());
    if e <= p {
        format!("troupe lab: {what}: {e} s of about {p} s, about {} s left", p - e)
    } else {
        format!("troupe lab: {what}: {e} s, past the planned {p} s (finishing)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_say_elapsed_and_left_at_a_tenth_of_the_run() {
        assert_eq!(line_interval(Duration::from_secs(62)), Duration::from_millis(6200));
        assert_eq!(line_interval(Duration::from_secs(4)), Duration::from_secs(1));
        assert_eq!(line_interval(Duration::from_secs(600)), Duration::from_secs(10));
        let planned = Duration::from_secs(62);
        assert_eq!(
            progress_line("scp on troupe", Duration::from_secs(20), planned),
            "troupe lab: scp on troupe: 20 s of about 62 s, about 42 s left"
        );
        assert!(progress_line("x", Duration::from_secs(70), planned).contains("past the planned 62 s"));
    }
}
