//! Large frames (`node/lane.rs` rules 4-5, `frame.rs` rule 5): messages of 64 KiB and more
//! travel as segments of their own and are read into place; small ones around them are
//! batched. Mixed sizes from several senders on one connection arrive whole, each sender's in
//! order, with write-through on and off, with acknowledged delivery (the frame shared with the
//! retransmission map), with a reply handle inside (sized without being taken) and as
//! `SharedBlob`s (kept as slices of the frames they arrive in, `blob.rs` rules 1-3).

mod common;

use std::time::Duration;

use common::cfg;
use troupe::{Actor, Ctx, ReplyTo};
use troupe_remote::{send_with, Blob, Node, NodeConfig, SendOptions, SharedBlob};

const T: Duration = Duration::from_secs(20);
const SENDERS: u64 = 3;
const PER: u64 = 36;
/// Sizes cycled through by every sender: around and well above the 64 KiB threshold.
const SIZES: [usize; 6] = [10, 70_000, 10, 10, 1 << 20, 65_535];

fn body(sender: u64, seq: u64) -> Vec<u8> {
    let n = SIZES[(seq as usize + sender as usize) % SIZES.len()];
    (0..n).map(|i| (i as u64 ^ sender.wrapping_mul(31) ^ seq) as u8).collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
enum Msg {
    Item {
        sender: u64,
        seq: u64,
        body: Blob,
    },
    /// The body as shared bytes (`SharedBlob`: kept as a slice of a large frame on arrival).
    Shared {
        sender: u64,
        seq: u64,
        body: SharedBlob,
    },
    /// A large body with a reply handle in the same message.
    Asked {
        sender: u64,
        seq: u64,
        body: Blob,
        reply: ReplyTo<u64>,
    },
    /// Answered once `all` items have arrived (at once if they have).
    Report {
        all: u64,
        reply: ReplyTo<Tally>,
    },
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Tally(u64, u64);

impl troupe_remote::RemoteMessage for Tally {
    const TAG: &'static str = "test.large.tally.v1";
}

impl troupe_remote::RemoteMessage for Msg {
    const TAG: &'static str = "test.large.v1";
    fn nested(n: &mut troupe_remote::Nested) {
        n.add::<u64>();
        n.add::<Tally>();
    }
}

struct Check {
    last: Vec<u64>,
    seen: u64,
    errors: u64,
    waiting: Option<(u64, ReplyTo<Tally>)>,
}

impl Check {
    fn item(&mut self, sender: u64, seq: u64, got: &[u8]) {
        if seq != self.last[sender as usize] + 1 || got != body(sender, seq) {
            self.errors += 1;
        }
        self.last[sender as usize] = seq;
        self.seen += 1;
        self.answer();
    }

    fn answer(&mut self) {
        if self.waiting.as_ref().is_some_and(|(all, _)| self.seen >= *all) {
            if let Some((_, reply)) = self.waiting.take() {
                reply.send(Tally(self.seen, self.errors));
            }
        }
    }
}

impl Actor for Check {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        match m {
            Msg::Item { sender, seq, body } => self.item(sender, seq, &body.0),
            Msg::Shared { sender, seq, body } => self.item(sender, seq, body.as_ref()),
            Msg::Asked { sender, seq, body, reply } => {
                self.item(sender, seq, &body.0);
                reply.send(body.0.len() as u64);
            }
            Msg::Report { all, reply } => {
                self.waiting = Some((all, reply));
                self.answer();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_and_small_frames_share_a_connection_whole_and_in_order() {
    for (write_through, ack) in [(true, false), (false, false), (true, true)] {
        let a = Node::start(NodeConfig { write_through, ..cfg("a") }).await.unwrap();
        let b = Node::start(cfg("b")).await.unwrap();
        b.export("check", &troupe::spawn(Check { last: vec![0; SENDERS as usize], seen: 0, errors: 0, waiting: None }))
            .unwrap();
        let r = a.lookup::<Msg>(&b.addr(), "check").await.unwrap();
        let mut tasks = Vec::new();
        for s in 0..SENDERS {
            let r = r.clone();
            tasks.push(tokio::spawn(async move {
                let opts = SendOptions::new().ack(ack);
                let mut answers = Vec::new();
                for seq in 1..=PER {
                    let body = Blob(body(s, seq));
                    if seq % 9 == 0 && !ack {
                        let n = body.0.len() as u64;
                        // Sent in place (an ask's future would send when first polled).
                        let (tx, rx) = tokio::sync::oneshot::channel();
                        let reply = ReplyTo::from_fn(move |len: u64| {
                            let _ = tx.send(len);
                        });
                        send_with(&r, Msg::Asked { sender: s, seq, body, reply }, &opts).unwrap();
                        answers.push((n, rx));
                    } else {
                        let msg = if seq % 2 == 0 {
                            Msg::Shared { sender: s, seq, body: SharedBlob::from(body.0) }
                        } else {
                            Msg::Item { sender: s, seq, body }
                        };
                        send_with(&r, msg, &opts).unwrap();
                    }
                    if seq % 4 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                for (n, ans) in answers {
                    let got = tokio::time::timeout(T, ans).await.expect("answered in time").expect("answered");
                    assert_eq!(got, n, "the reply handle inside a large message answered");
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        // The report may overtake items still being read: the actor answers once all are in.
        let case = format!("write_through = {write_through}, ack = {ack}");
        let all = SENDERS * PER;
        let Tally(seen, errors) = match r.ask(|reply| Msg::Report { all, reply }, T).await {
            Ok(t) => t,
            Err(e) => panic!("{case}: messages lost: not all {all} arrived within {T:?} ({e:?})"),
        };
        assert_eq!(seen, SENDERS * PER, "{case}: messages lost");
        assert_eq!(errors, 0, "{case}: a body arrived changed or out of order");
        a.shutdown();
        b.shutdown();
    }
}
