//! A home for CPU-heavy work: runs a closure on tokio's blocking pool so the actor's await
//! does not hold a worker thread that other actors need.

/// Runs `f` on the blocking pool and returns its result. A panic in `f` resumes in the
/// caller, so in an actor it becomes that actor's `Panicked` exit, as a panic in a handler would.
///
/// ```
/// # #[tokio::main] async fn main() {
/// let primes = troupe::compute(|| (2..10_000u32).filter(|n| (2..*n).take_while(|d| d * d <= *n).all(|d| n % d != 0)).count()).await;
/// assert_eq!(primes, 1229);
/// # }
/// ```
pub async fn compute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("compute task was cancelled: {e}"),
    }
}
