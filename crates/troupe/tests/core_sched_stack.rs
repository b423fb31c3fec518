//! Scheduling, rule 3 (`sched.rs`): the activations an actor wakes in one handler, past the
//! one in the run-next slot, go on its carrier's stack and run in that carrier, newest first,
//! so a tree of spawning actors unfolds depth first; a full stack sends its oldest half to a
//! carrier of its own (where another worker can take it). That an actor taking another message
//! first sends what it stacked on (rule 4) is tested in `core_sched.rs`.
//!
//! Each test builds its own runtime, so what it checks does not depend on the test harness.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx, ExitReason};

const T: Duration = Duration::from_secs(20);

/// `sched::SPILL`: a carrier's stack holds fewer than this many activations.
const SPILL: usize = 8;

fn two_workers() -> Runtime {
    Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// The index an actor was given and the tokio task it handled its message in.
type Seen = mpsc::Sender<(usize, Option<tokio::task::Id>)>;

struct Leaf {
    index: usize,
    seen: Seen,
}

impl Actor for Leaf {
    type Msg = ();
    async fn handle(&mut self, (): (), ctx: &mut Ctx<Self>) {
        let _ = self.seen.send((self.index, tokio::task::try_id()));
        ctx.stop(ExitReason::Normal);
    }
}

/// On a message, reports its own task (as index `usize::MAX`), then wakes every leaf in turn.
struct Fan {
    leaves: Vec<ActorRef<()>>,
    seen: Seen,
}

impl Actor for Fan {
    type Msg = ();
    async fn handle(&mut self, (): (), _: &mut Ctx<Self>) {
        let _ = self.seen.send((usize::MAX, tokio::task::try_id()));
        for leaf in self.leaves.drain(..) {
            leaf.send(()).unwrap();
        }
    }
}

/// Spawns `n` idle leaves and a fan over them, wakes the fan, and returns the fan's task and
/// what each leaf saw, in the order they ran.
fn fan_out(n: usize) -> (Option<tokio::task::Id>, Vec<(usize, Option<tokio::task::Id>)>) {
    let rt = two_workers();
    let (tx, rx) = mpsc::channel();
    rt.block_on(async {
        let leaves = (0..n).map(|index| troupe::spawn(Leaf { index, seen: tx.clone() })).collect();
        troupe::spawn(Fan { leaves, seen: tx.clone() }).send(()).unwrap();
    });
    let (fan_index, fan_task) = rx.recv_timeout(T).expect("the fan ran");
    assert_eq!(fan_index, usize::MAX);
    let leaves = (0..n).map(|_| rx.recv_timeout(T).expect("every leaf ran")).collect();
    (fan_task, leaves)
}

#[test]
fn rule_3_actors_woken_in_one_handler_run_in_the_wakers_carrier_newest_first() {
    for _ in 0..20 {
        let (fan, leaves) = fan_out(SPILL - 2);
        assert!(fan.is_some(), "the fan ran in a tokio task");
        let order: Vec<usize> = leaves.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, vec![5, 4, 3, 2, 1, 0], "the slot's (the newest) first, then the stack, newest first");
        assert!(
            leaves.iter().all(|(_, task)| *task == fan),
            "every leaf ran in the fan's carrier, no task of its own: {leaves:?} (fan {fan:?})"
        );
    }
}

#[test]
fn rule_3_a_full_stack_sends_its_oldest_half_to_a_carrier_of_its_own() {
    let n = 4 * SPILL;
    let (fan, leaves) = fan_out(n);
    let mut order: Vec<usize> = leaves.iter().map(|(i, _)| *i).collect();
    order.sort_unstable();
    assert_eq!(order, (0..n).collect::<Vec<_>>(), "every leaf ran once");
    let elsewhere: Vec<usize> = leaves.iter().filter(|(_, t)| *t != fan).map(|(i, _)| *i).collect();
    let here = n - elsewhere.len();
    // The slot's leaf and what the stack held at the end: more than half a stack, at most a
    // full one.
    assert!(here > SPILL / 2 && here <= SPILL, "the fan's carrier ran the last few only ({here} of {n})");
    assert!(elsewhere.contains(&0), "the oldest went on in another carrier: {elsewhere:?}");
}

/// A node of a tree `width` wide and `depth` deep: spawns and wakes its children, sums their
/// leaves, reports to its parent, and stops. `live` counts the nodes spawned and not yet
/// stopped; `peak` the most at once.
struct Node {
    depth: u32,
    width: usize,
    parent: Option<ActorRef<Tree>>,
    done: Option<oneshot::Sender<u64>>,
    pending: usize,
    sum: u64,
    live: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

enum Tree {
    Grow,
    Sum(u64),
}

impl Node {
    fn new(depth: u32, width: usize, live: &Arc<AtomicUsize>, peak: &Arc<AtomicUsize>) -> Self {
        let now = live.fetch_add(1, Ordering::Relaxed) + 1;
        peak.fetch_max(now, Ordering::Relaxed);
        Node { depth, width, parent: None, done: None, pending: 0, sum: 0, live: live.clone(), peak: peak.clone() }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Actor for Node {
    type Msg = Tree;
    async fn handle(&mut self, msg: Tree, ctx: &mut Ctx<Self>) {
        match msg {
            Tree::Grow if self.depth == 0 => self.sum = 1,
            Tree::Grow => {
                self.pending = self.width;
                for _ in 0..self.width {
                    let mut child = Node::new(self.depth - 1, self.width, &self.live, &self.peak);
                    child.parent = Some(ctx.myself());
                    troupe::spawn(child).send(Tree::Grow).unwrap();
                }
                return;
            }
            Tree::Sum(s) => {
                self.sum += s;
                self.pending -= 1;
                if self.pending > 0 {
                    return;
                }
            }
        }
        match (&self.parent, self.done.take()) {
            (Some(p), _) => drop(p.send(Tree::Sum(self.sum))),
            (None, Some(done)) => drop(done.send(self.sum)),
            (None, None) => {}
        }
        ctx.stop(ExitReason::Normal);
    }
}

#[test]
fn rule_3_a_tree_of_spawning_actors_unfolds_depth_first() {
    // 4^7 = 16,384 leaves, 21,845 nodes. Breadth first (each woken child in a task of its own,
    // run in spawn order) has a whole level alive at once, about 16,000 nodes.
    let (width, depth): (usize, u32) = (4, 7);
    let nodes = (0..=depth).map(|d| width.pow(d)).sum::<usize>();
    let rt = two_workers();
    let (live, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let sum = rt.block_on(async {
        let (tx, rx) = oneshot::channel();
        let mut root = Node::new(depth, width, &live, &peak);
        root.done = Some(tx);
        troupe::spawn(root).send(Tree::Grow).unwrap();
        tokio::time::timeout(T * 3, rx).await.expect("the tree summed up").unwrap()
    });
    assert_eq!(sum, width.pow(depth) as u64, "every leaf counted once");
    let peak = peak.load(Ordering::Relaxed);
    assert!(peak < nodes / 8, "at most {} nodes alive at once, not a level of the tree: {peak} of {nodes}", nodes / 8);
}
