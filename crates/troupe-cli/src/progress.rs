//! The sweep and comparison progress bar (indicatif): position counts planned seconds of run time, advanced
//! by a ticker while a run is in progress, so the ETA is in real time, not in runs.

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
            _ => format!("FAILED: {}", outcome.manifest.reason.clone().unwrap_or_default()),
        };
        self.line(format!("[{}/{}] {}: {what}", self.index, self.total_points, point.name));
    }

    fn note(&mut self, text: &str) {
        self.line(text.to_string());
    }
}
