//! Supervisor and child specifications, with OTP's defaults, validated when built.

use std::time::Duration;

use super::child::ChildSpec;
use super::SupervisorError;

/// Which children restart when one must (OTP's restart strategies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Only the child that exited is restarted.
    OneForOne,
    /// All children are terminated (in reverse start order) and restarted (in start order).
    OneForAll,
    /// The exited child and every child started after it are terminated and restarted.
    RestForOne,
}

impl Strategy {
    /// Its OTP name, as reports carry it (`one_for_one`, `one_for_all`, `rest_for_one`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::OneForOne => "one_for_one",
            Strategy::OneForAll => "one_for_all",
            Strategy::RestForOne => "rest_for_one",
        }
    }
}

/// When a child is restarted (OTP's restart types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always restarted.
    Permanent,
    /// Restarted only after an abnormal exit (not `Normal`, not `Shutdown`).
    Transient,
    /// Never restarted; its spec is removed when it exits.
    Temporary,
}

impl Restart {
    /// Its OTP name, as reports carry it (`permanent`, `transient`, `temporary`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Restart::Permanent => "permanent",
            Restart::Transient => "transient",
            Restart::Temporary => "temporary",
        }
    }
}

/// How a child is stopped when its supervisor terminates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// Killed at once.
    Brutal,
    /// Asked to stop (its `stopped` hook runs), killed if still alive after this long.
    Timeout(Duration),
    /// Asked to stop, waited for without limit (the default for child supervisors).
    Infinity,
}

/// Optional restart backoff (Akka's `restartWithBackoff`): the n-th consecutive restart of a
/// child waits `min * 2^(n-1)`, capped at `max`, stretched by up to `jitter` (0.0..=1.0) at
/// random. A child that ran longer than `max` before exiting starts again from `min`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub min: Duration,
    /// The largest delay.
    pub max: Duration,
    /// Random stretch, a fraction of the delay, 0.0..=1.0.
    pub jitter: f64,
}

/// How restarts are counted against the intensity over the period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IntensityWindow {
    /// OTP's rule, the default: restart times are kept in whole seconds of a monotonic clock
    /// shared by the whole process ([`super::clock_second`]; OTP's
    /// `erlang:monotonic_time(second)`, not counted from the supervisor's start), and a
    /// restart still counts while `now_s - then_s <= period_s`. So a restart counts for at least
    /// `period` and less than `period + 1 s`. `period` must be a whole number of seconds.
    #[default]
    WholeSeconds,
    /// An exact sliding window: a restart counts while it is at most `period` old (any
    /// `period` above zero).
    Exact,
}

/// When significant children shut their supervisor down (OTP's `auto_shutdown`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoShutdown {
    /// Never (the default); no child may be significant.
    #[default]
    Never,
    /// When any significant child exits and is not restarted.
    AnySignificant,
    /// When every significant child has exited and none is restarted.
    AllSignificant,
}

/// Whether a child is a worker or a supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildKind {
    /// Any actor.
    Worker,
    /// A supervisor (default shutdown `Infinity`).
    Supervisor,
}

/// A supervisor's specification. Defaults are OTP's: intensity 1 restart per 5 s period counted
/// in whole seconds ([`IntensityWindow::WholeSeconds`]), no backoff, no limit on dynamic children.
///
/// ```
/// use std::time::Duration;
/// use troupe::supervisor::{SupervisorSpec, Strategy};
/// let spec = SupervisorSpec::new(Strategy::OneForOne).intensity(3, Duration::ZERO);
/// let err = spec.validate().unwrap_err();
/// assert!(err.to_string().contains("period"));
/// ```
#[derive(Clone)]
#[must_use]
pub struct SupervisorSpec {
    pub(crate) strategy: Strategy,
    pub(crate) intensity: u32,
    pub(crate) period: Duration,
    pub(crate) window: IntensityWindow,
    pub(crate) backoff: Option<Backoff>,
    pub(crate) max_children: Option<usize>,
    pub(crate) auto_shutdown: AutoShutdown,
    /// A `simple_one_for_one` supervisor (`simple.rs`): children leave for good when they are
    /// not restarted, and all stop at once.
    pub(crate) simple: bool,
    /// A top-level supervisor's name: its path is `/name` (`reports.rs` rule 5).
    pub(crate) name: Option<String>,
    pub(crate) children: Vec<ChildSpec>,
}

impl SupervisorSpec {
    /// A spec with `strategy` and OTP's defaults.
    pub fn new(strategy: Strategy) -> Self {
        Self {
            strategy,
            intensity: 1,
            period: Duration::from_secs(5),
            window: IntensityWindow::WholeSeconds,
            backoff: None,
            max_children: None,
            auto_shutdown: AutoShutdown::Never,
            simple: false,
            name: None,
            children: Vec::new(),
        }
    }

    /// Names a top-level supervisor: its path, the `supervisor` label of its children's
    /// metrics and the `supervisor` field of its reports, is `/name` (`/` when unnamed, shared
    /// by every unnamed top-level supervisor). A child supervisor's path is its supervisor's
    /// path and its child id (`/app/pool`), whatever its own spec's name. The name must not be
    /// empty nor contain `/`.
    ///
    /// ```
    /// use troupe::supervisor::{SupervisorSpec, Strategy};
    /// let spec = SupervisorSpec::new(Strategy::OneForOne).name("app");
    /// assert!(spec.validate().is_ok());
    /// let err = SupervisorSpec::new(Strategy::OneForOne).name("a/b").validate().unwrap_err();
    /// assert!(err.to_string().contains("name"));
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// More than `intensity` restarts within `period` make the supervisor give up: it
    /// terminates its children and exits with `Shutdown`.
    pub fn intensity(mut self, intensity: u32, period: Duration) -> Self {
        self.intensity = intensity;
        self.period = period;
        self
    }

    /// How restarts are counted over the period (default: OTP's whole seconds).
    pub fn window(mut self, window: IntensityWindow) -> Self {
        self.window = window;
        self
    }

    /// Delays restarts with exponential backoff.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// Lets significant children shut the supervisor down (default `Never`).
    pub fn auto_shutdown(mut self, auto_shutdown: AutoShutdown) -> Self {
        self.auto_shutdown = auto_shutdown;
        self
    }

    /// Caps the number of children (static and dynamic).
    pub fn max_children(mut self, max: usize) -> Self {
        self.max_children = Some(max);
        self
    }

    /// Adds a child; children start in the order added and stop in reverse.
    pub fn child(mut self, child: impl Into<ChildSpec>) -> Self {
        self.children.push(child.into());
        self
    }

    /// OTP: a significant child needs an auto-shutdown other than `Never`.
    pub(crate) fn check_significant(&self, c: &ChildSpec) -> Result<(), SupervisorError> {
        if c.significant && self.auto_shutdown == AutoShutdown::Never {
            return Err(SupervisorError::InvalidSpec {
                field: format!("child {:?} significant", c.id),
                problem: "needs a supervisor with auto_shutdown AnySignificant or AllSignificant (it is Never)".into(),
            });
        }
        Ok(())
    }

    /// Checks every rule and names the first field that breaks one.
    pub fn validate(&self) -> Result<(), SupervisorError> {
        let bad = |field: &str, problem: String| Err(SupervisorError::InvalidSpec { field: field.to_owned(), problem });
        if let Some(name) = &self.name {
            if name.is_empty() || name.contains('/') {
                return bad(
                    "name",
                    format!("must be non-empty and contain no '/' (it is one step of a supervisor path), got {name:?}"),
                );
            }
        }
        if self.period.is_zero() {
            return bad("period", "must be greater than zero (restarts are counted over it)".into());
        }
        if self.window == IntensityWindow::WholeSeconds && self.period.subsec_nanos() != 0 {
            return bad(
                "period",
                format!(
                    "must be a whole number of seconds with IntensityWindow::WholeSeconds (OTP's rule, the \
                     default), got {:?}; use .window(IntensityWindow::Exact) for a sub-second period",
                    self.period
                ),
            );
        }
        if let Some(b) = &self.backoff {
            if b.min.is_zero() {
                return bad("backoff.min", "must be greater than zero".into());
            }
            if b.min > b.max {
                return bad("backoff.max", format!("must be at least backoff.min ({:?}), got {:?}", b.min, b.max));
            }
            if !(0.0..=1.0).contains(&b.jitter) {
                return bad("backoff.jitter", format!("must be within 0.0..=1.0, got {}", b.jitter));
            }
        }
        if self.max_children == Some(0) {
            return bad("max_children", "must be at least 1".into());
        }
        if let Some(max) = self.max_children {
            if self.children.len() > max {
                return bad("children", format!("{} static children exceed max_children {max}", self.children.len()));
            }
        }
        for (i, c) in self.children.iter().enumerate() {
            c.validate()?;
            self.check_significant(c)?;
            if self.children[..i].iter().any(|o| o.id == c.id) {
                return Err(SupervisorError::DuplicateId(c.id.clone()));
            }
        }
        Ok(())
    }
}
