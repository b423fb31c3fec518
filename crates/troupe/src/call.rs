//! [`ActorRef::call`]: request/reply with the default timeout of the caller's system
//! ([`crate::System::with_ask_timeout`], [`crate::DEFAULT_ASK_TIMEOUT`] unless set), as OTP's
//! `gen_server:call/2` waits 5 s; [`ActorRef::ask`] takes an explicit one.
//!
//! Rule: the timeout is read when `call` is first polled, from the system current there
//! (`system.rs` rule 1: inside an actor of a system, in [`crate::System::run`] or
//! [`crate::System::enter`]); outside any system it is [`crate::DEFAULT_ASK_TIMEOUT`].

use crate::error::AskError;
use crate::{ActorRef, ReplyTo};

impl<M: Send + 'static> ActorRef<M> {
    /// [`ActorRef::ask`] with the caller's system's default timeout (5 s,
    /// [`crate::DEFAULT_ASK_TIMEOUT`], unless [`crate::System::with_ask_timeout`] changed it):
    /// fails with [`AskError::Timeout`] when no reply comes within it.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::{Actor, AskError, Ctx, ReplyTo, System};
    ///
    /// /// Keeps every request and never answers.
    /// struct Silent(Vec<ReplyTo<()>>);
    /// impl Actor for Silent {
    ///     type Msg = ReplyTo<()>;
    ///     async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
    ///         self.0.push(r);
    ///     }
    /// }
    ///
    /// let sys = System::new().with_ask_timeout(Duration::from_millis(50));
    /// let s = sys.spawn(Silent(Vec::new()));
    /// let answer = sys.run(async { s.call(|r| r).await }).await;
    /// assert_eq!(answer, Err(AskError::Timeout(Duration::from_millis(50))));
    /// // An explicit timeout is still `ask`'s.
    /// assert_eq!(s.ask(|r| r, Duration::from_millis(10)).await, Err(AskError::Timeout(Duration::from_millis(10))));
    /// # }
    /// ```
    pub async fn call<R: Send + 'static>(&self, make: impl FnOnce(ReplyTo<R>) -> M) -> Result<R, AskError> {
        let timeout = crate::system::current_ask_timeout();
        self.ask(make, timeout).await
    }
}
