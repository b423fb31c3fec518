//! Why an actor stopped ([`ExitReason`]) and the two signals that carry it to others: the
//! [`ExitSignal`] a link delivers and the [`Down`] a monitor delivers.
//!
//! Rules (Erlang/OTP's, which Troupe follows):
//! 1. `Normal` does not propagate over links to actors that do not trap exits; every other reason
//!    does, and the linked actor exits with the same reason.
//! 2. A transient child is restarted only when its reason is abnormal: anything but `Normal`,
//!    `Shutdown` and `ShutdownWith(_)` (OTP's `{shutdown, Term}`) ([`ExitReason::is_abnormal`]).
//!    `ShutdownWith` otherwise behaves as every reason but `Normal` does: it propagates over
//!    links to actors that do not trap exits.
//! 3. Monitoring or linking an actor that is already dead yields `NoProc`.

use std::fmt;

use crate::{ActorId, MonitorId};

/// Why an actor stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ExitReason {
    /// It finished its work: a graceful stop or `Ctx::stop(Normal)`.
    Normal,
    /// Its supervisor shut it down, or a supervisor gave up after too many restarts.
    Shutdown,
    /// A shutdown with a term saying why (OTP's `{shutdown, Term}`): not abnormal, so a
    /// transient child that exits this way is not restarted.
    ShutdownWith(String),
    /// It was killed brutally; none of its code ran after the kill.
    Killed,
    /// A handler panicked; the panic message.
    Panicked(String),
    /// It stopped with an error of its own (`started` failed, or `Ctx::stop(Error(..))`).
    Error(String),
    /// The actor it was linked to or monitored did not exist.
    NoProc,
    /// The node it lived on became unreachable.
    NoConnection,
    /// A [`crate::TryActor`]'s handler returned `Err(e)`: the error's type and message, seen by
    /// links, monitors and supervisors as a crash (abnormal, so a transient child restarts).
    /// Boxed, so that every exit reason stays the size of one `String`.
    Failed(Box<Failure>),
}

/// What [`ExitReason::Failed`] keeps of a handler's error.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    /// The error's type name (`std::any::type_name`), e.g. `std::io::error::Error`.
    pub error: String,
    /// The error's `Display` text.
    pub message: String,
}

impl ExitReason {
    /// True for every reason except `Normal`, `Shutdown` and `ShutdownWith` (OTP's rule for
    /// transient children).
    ///
    /// ```
    /// use troupe::ExitReason;
    /// assert!(!ExitReason::Normal.is_abnormal());
    /// assert!(!ExitReason::Shutdown.is_abnormal());
    /// assert!(!ExitReason::ShutdownWith("reconfigured".into()).is_abnormal());
    /// assert!(ExitReason::Killed.is_abnormal());
    /// ```
    #[must_use]
    pub fn is_abnormal(&self) -> bool {
        !matches!(self, ExitReason::Normal | ExitReason::Shutdown | ExitReason::ShutdownWith(_))
    }

    /// The reason for a handler that returned `Err(error)`: [`ExitReason::Failed`] with `E`'s
    /// type name and `error`'s message.
    ///
    /// ```
    /// use troupe::ExitReason;
    /// let e = std::io::Error::other("disk full");
    /// let reason = ExitReason::failed(&e);
    /// assert!(reason.failed_with::<std::io::Error>());
    /// assert_eq!(reason.to_string(), "failed: disk full (std::io::error::Error)");
    /// ```
    #[must_use]
    pub fn failed<E: fmt::Display + ?Sized>(error: &E) -> Self {
        ExitReason::Failed(Box::new(Failure {
            error: std::any::type_name::<E>().to_owned(),
            message: error.to_string(),
        }))
    }

    /// True when this is [`ExitReason::Failed`] with an error of type `E`.
    #[must_use]
    pub fn failed_with<E: ?Sized>(&self) -> bool {
        matches!(self, ExitReason::Failed(f) if f.error == std::any::type_name::<E>())
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str("normal"),
            ExitReason::Shutdown => f.write_str("shutdown"),
            ExitReason::ShutdownWith(term) => write!(f, "shutdown: {term}"),
            ExitReason::Killed => f.write_str("killed"),
            ExitReason::Panicked(m) => write!(f, "panicked: {m}"),
            ExitReason::Error(m) => write!(f, "error: {m}"),
            ExitReason::NoProc => f.write_str("noproc"),
            ExitReason::NoConnection => f.write_str("noconnection"),
            ExitReason::Failed(e) => write!(f, "failed: {} ({})", e.message, e.error),
        }
    }
}

/// Delivered over a link to an actor that traps exits ([`crate::Actor::on_exit`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitSignal {
    /// The linked actor that exited.
    pub from: ActorId,
    /// Why it exited.
    pub reason: ExitReason,
}

/// Delivered to a monitoring actor when the monitored one stops ([`crate::Actor::on_down`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// The monitor that fired.
    pub id: MonitorId,
    /// The actor that stopped.
    pub actor: ActorId,
    /// Why it stopped; `NoProc` when it was already dead when the monitor was set.
    pub reason: ExitReason,
}

#[cfg(test)]
mod tests {
    /// Exit reasons travel in signals and sit in every activation's state: one `String` and a
    /// tag wide (a variant with more inside must box it, as `Failed` does).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_exit_reason_is_one_string_and_a_tag_wide() {
        assert_eq!(std::mem::size_of::<super::ExitReason>(), 32);
    }
}
