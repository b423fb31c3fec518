//! Causal delivery between real nodes on loopback (`SendOptions::causal`, node/causal_wire.rs):
//! node A sends m1 to C and then m2 to B; B, on m2, sends m3 to C. A's frames to C are delayed
//! by the fault injector, so m3 reaches C's socket before m1. Without a causal label C's actor
//! gets m3 first (the delay really reorders); with one, C holds m3 until m1 is delivered.
//! Also: causal with ack is refused with the message handed back; a repeated frame is
//! delivered once.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cfg;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorRef, Ctx};
use troupe_remote::{send_with, FaultConfig, Nested, Node, RemoteMessage, SendOptions};

const T: Duration = Duration::from_secs(20);

#[derive(Serialize, Deserialize, Clone, Debug)]
struct Text(String);
impl RemoteMessage for Text {
    const TAG: &'static str = "test.causal.text.v1";
    fn nested(_: &mut Nested) {}
}

/// Records what it receives.
struct Sink(Arc<Mutex<Vec<String>>>);
impl Actor for Sink {
    type Msg = Text;
    async fn handle(&mut self, Text(t): Text, _: &mut Ctx<Self>) {
        self.0.lock().push(t);
    }
}

/// Sends what it receives on to `to`, with `opts`.
struct Relay {
    to: ActorRef<Text>,
    opts: SendOptions,
}
impl Actor for Relay {
    type Msg = Text;
    async fn handle(&mut self, Text(t): Text, _: &mut Ctx<Self>) {
        let _ = send_with(&self.to, Text(format!("relayed {t}")), &self.opts);
    }
}

async fn wait_len(log: &Arc<Mutex<Vec<String>>>, n: usize) -> Vec<String> {
    let end = Instant::now() + T;
    loop {
        let got = log.lock().clone();
        if got.len() >= n {
            return got;
        }
        assert!(Instant::now() < end, "only {got:?} arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs the scenario with `opts` on every send; what C's sink got, in order.
async fn scenario(opts: SendOptions) -> (Vec<String>, troupe_remote::StatsSnapshot) {
    let (a, b, c) = (
        Node::start(cfg("a")).await.unwrap(),
        Node::start(cfg("b")).await.unwrap(),
        Node::start(cfg("c")).await.unwrap(),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    c.export("sink", &troupe::spawn(Sink(log.clone()))).unwrap();
    let sink_from_b = b.lookup::<Text>(&c.addr(), "sink").await.unwrap();
    b.export("relay", &troupe::spawn(Relay { to: sink_from_b, opts: opts.clone() })).unwrap();
    let sink = a.lookup::<Text>(&c.addr(), "sink").await.unwrap();
    let relay = a.lookup::<Text>(&b.addr(), "relay").await.unwrap();
    // Every data frame A sends to C is held back 400 ms.
    a.set_faults(
        Some(&c.addr()),
        Some("default"),
        FaultConfig { delay_min_us: 400_000, delay_max_us: 400_000, seed: 1, ..Default::default() },
    );
    send_with(&sink, Text("m1".into()), &opts).unwrap();
    send_with(&relay, Text("m2".into()), &opts).unwrap();
    let got = wait_len(&log, 2).await;
    let stats = c.stats();
    for n in [a, b, c] {
        n.shutdown();
    }
    (got, stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_label_the_delay_reorders_and_with_one_the_cause_comes_first() {
    let (plain, _) = scenario(SendOptions::new()).await;
    assert_eq!(plain, vec!["relayed m2", "m1"], "the injected delay must reorder plain sends");
    let (causal, stats) = scenario(SendOptions::new().causal("chat")).await;
    assert_eq!(causal, vec!["m1", "relayed m2"], "m3 depends on m1 and must wait for it");
    assert_eq!(stats.causal_waited, 1, "{stats:?}");
    assert_eq!(stats.causal_delivered, 2, "{stats:?}");
    assert_eq!(stats.causal_held, 0, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn causal_with_ack_is_refused_and_repeats_are_delivered_once() {
    let (a, c) = (Node::start(cfg("a")).await.unwrap(), Node::start(cfg("c")).await.unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    c.export("sink", &troupe::spawn(Sink(log.clone()))).unwrap();
    let sink = a.lookup::<Text>(&c.addr(), "sink").await.unwrap();
    let refused = send_with(&sink, Text("x".into()), &SendOptions::new().causal("l").ack(true));
    assert!(refused.is_err(), "causal and ack do not combine");
    // Every frame sent twice: the second copy of each is dropped by the causal order.
    a.set_faults(Some(&c.addr()), Some("default"), FaultConfig { duplicate: 1.0, seed: 3, ..Default::default() });
    for i in 0..20 {
        send_with(&sink, Text(format!("{i}")), &SendOptions::new().causal("l")).unwrap();
    }
    let got = wait_len(&log, 20).await;
    let want: Vec<String> = (0..20).map(|i| i.to_string()).collect();
    assert_eq!(got, want, "in order, each once");
    // Every second copy arrives and is counted as a duplicate, not delivered.
    let end = Instant::now() + T;
    while c.stats().causal_duplicates < 20 {
        assert!(Instant::now() < end, "{:?}", c.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(log.lock().len(), 20, "no copy delivered");
    assert_eq!(c.stats().causal_delivered, 20);
    a.shutdown();
    c.shutdown();
}
