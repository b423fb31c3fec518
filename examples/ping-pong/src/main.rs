//! Two actors bounce a counter until it reaches a limit, then the first one reports the time.
//!
//! Run with `cargo run --release -p example-ping-pong -- 1000000`.

use std::time::{Duration, Instant};

use troupe::{Actor, ActorRef, Ctx, ReplyTo};

/// The messages both players accept.
enum Ball {
    /// Serve `rounds` exchanges to `partner`; answer `done` when they are over.
    Serve { partner: ActorRef<Ball>, rounds: u64, done: ReplyTo<u64> },
    /// The ball, with the number of exchanges left and who to send it back to.
    Hit { left: u64, from: ActorRef<Ball> },
}

#[derive(Default)]
struct Player {
    done: Option<ReplyTo<u64>>,
    hits: u64,
}

impl Actor for Player {
    type Msg = Ball;

    async fn handle(&mut self, msg: Ball, ctx: &mut Ctx<Self>) {
        match msg {
            Ball::Serve { partner, rounds, done } => {
                self.done = Some(done);
                let _ = partner.send(Ball::Hit { left: rounds, from: ctx.myself() });
            }
            Ball::Hit { left, from } => {
                self.hits += 1;
                match (left, self.done.take()) {
                    // The server counts down; when it reaches zero the rally is over.
                    (0, Some(done)) => done.send(self.hits),
                    (_, done @ Some(_)) => {
                        self.done = done;
                        let _ = from.send(Ball::Hit { left: left - 1, from: ctx.myself() });
                    }
                    (_, None) => {
                        let _ = from.send(Ball::Hit { left, from: ctx.myself() });
                    }
                }
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let ping = troupe::spawn(Player::default());
    let pong = troupe::spawn(Player::default());
    let started = Instant::now();
    let hits = ping
        .ask(|done| Ball::Serve { partner: pong.clone(), rounds, done }, Duration::from_secs(600))
        .await
        .expect("the rally finishes");
    let elapsed = started.elapsed();
    let messages = 2 * hits;
    println!("{messages} messages in {elapsed:.2?}: {:.0} msg/s", messages as f64 / elapsed.as_secs_f64());
}
