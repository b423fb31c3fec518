//! Criterion benches for the hot paths: send to an idle and to a busy actor, ask round trip,
//! spawn of an idle actor. Run with `cargo bench -p troupe`.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use troupe::{Actor, Ctx, ReplyTo};

struct Sink(u64);

enum Msg {
    Add(u64),
    Get(ReplyTo<u64>),
}

impl Actor for Sink {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        match m {
            Msg::Add(n) => self.0 += n,
            Msg::Get(r) => r.send(self.0),
        }
    }
}

struct Idle;

impl Actor for Idle {
    type Msg = ();
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
}

fn hot_paths(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let sink = rt.block_on(async { troupe::spawn(Sink(0)) });

    c.bench_function("send (1000 messages, then drained by one ask)", |b| {
        b.to_async(&rt).iter(|| async {
            for i in 0..1000 {
                sink.send(Msg::Add(i)).ok();
            }
            sink.ask(Msg::Get, Duration::from_secs(10)).await.unwrap()
        })
    });

    c.bench_function("ask round trip", |b| {
        b.to_async(&rt).iter(|| async { sink.ask(Msg::Get, Duration::from_secs(10)).await.unwrap() })
    });

    c.bench_function("spawn an idle actor and stop it", |b| {
        b.to_async(&rt).iter(|| async {
            let r = troupe::spawn(Idle);
            r.kill();
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = hot_paths
}
criterion_main!(benches);
