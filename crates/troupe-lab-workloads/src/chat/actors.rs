//! The chat system's actors on the Troupe core (workloads.md §2, seed 000 §4.2): discovery,
//! chats (children of one_for_one supervisors) and clients. The same code runs in one process
//! and across nodes (see `protocol.rs`).
//!
//! Rules:
//! 1. Discovery maps a topic to the chat that registered it last and monitors that chat; on
//!    its `Down` the entry is removed (unless a newer incarnation already replaced it).
//!    1a. A lookup for a topic with no live chat (it is restarting) is answered by the
//!    `lookup` key (docs/chat.md, "Behaviour contract", rule 3): `retry` (the default, as
//!    seed 000 and every peer) answers "not registered" at once and the client retries after
//!    `retry_delay_ms` (rule 3); `park` holds the lookup and answers it the moment the chat
//!    registers again, or "not registered" once `retry_delay_ms` has passed since the first
//!    lookup held for that topic (one timer per topic and holding, never per lookup), whichever
//!    comes first. The client's own bounded fixed-delay retry loop (rule 3) is the same in
//!    both modes.
//! 2. A chat sends its registration to discovery in `started`, before its mailbox is served
//!    (protocol rule 4), so it takes no client before it is findable; a chat started for the
//!    2nd+ time emits `restarted {target, attempt}` and starts with no members.
//! 3. A client resolves, monitors, then joins. Its first join counts it as set up. A `Down` of
//!    the chat it is joined to is a detected failure: `fault_detected {id: null, target, by}`,
//!    then it re-resolves at once; a failed attempt (no chat registered, or the chat found is
//!    already dead) is retried after `retry_delay_ms`, at most `retry_max` times in a row,
//!    then the client gives up (counted as an error). A successful rejoin after a detection
//!    emits `reconnected {target, by, ms}` (ms from the detection).
//! 4. Only connected clients send, one `Post` per `send_interval_ms` tick (throughput test);
//!    every `Broadcast` a client receives adds one to its process's received counter.
//! 5. Events are fire-and-forget through the process's emitter; no actor waits on them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Notify;
use troupe::{Actor, ActorError, ActorId, ActorRef, Ctx, Down, MonitorId};

use super::config::Lookup;
use super::protocol::{ChatMsg, ClientMsg, DiscoveryMsg, FoundChat};
use troupe_lab::events::writer::Emitter;

/// The panic message of the poison fault (a quiet panic hook recognises it).
pub(crate) const POISON: &str = "chat poison message (injected fault)";

/// What every actor of one process shares.
pub(crate) struct Shared {
    pub(crate) emitter: Emitter,
    /// Broadcasts received by this process's clients (rule 4).
    pub(crate) received: AtomicU64,
    /// Clients that joined at least once.
    pub(crate) joined: AtomicU64,
    /// Chats that registered at least once.
    pub(crate) registered: AtomicU64,
    /// Clients that gave up, and other failures.
    pub(crate) errors: AtomicU64,
    /// Faults this process's injector carried out.
    pub(crate) injected: AtomicU64,
    /// Faults it skipped (the chat was not registered at that instant).
    pub(crate) skipped: AtomicU64,
    /// Woken when `joined` or `registered` grows.
    pub(crate) progress: Notify,
    pub(crate) send_interval: Duration,
    pub(crate) clients_send: bool,
    pub(crate) retry_delay: Duration,
    pub(crate) retry_max: u32,
}

impl Shared {
    pub(crate) fn new(emitter: Emitter, cfg: &super::config::ChatConfig) -> Arc<Shared> {
        Arc::new(Shared {
            emitter,
            received: AtomicU64::new(0),
            joined: AtomicU64::new(0),
            registered: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            progress: Notify::new(),
            send_interval: Duration::from_millis(cfg.send_interval_ms),
            clients_send: cfg.clients_send(),
            retry_delay: Duration::from_millis(cfg.retry_delay_ms),
            retry_max: cfg.retry_max,
        })
    }

    /// Waits until `counter` reaches `target` or `limit` passes; whether it did.
    pub(crate) async fn wait_for(&self, counter: &AtomicU64, target: u64, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.progress.notified();
            if counter.load(Ordering::SeqCst) >= target {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return counter.load(Ordering::SeqCst) >= target;
            }
        }
    }
}

/// The topic of chat `index`.
pub(crate) fn topic(index: u64) -> String {
    format!("chat-{index}")
}

/// Lookups held for one topic (`park`, rule 1a): the holding's number and the (attempt,
/// client) of each lookup, in arrival order.
type Held = (u64, Vec<(u32, ActorRef<ClientMsg>)>);

/// Discovery (rule 1).
pub(crate) struct Discovery {
    chats: HashMap<String, (ActorRef<ChatMsg>, MonitorId)>,
    by_monitor: HashMap<MonitorId, String>,
    /// What a lookup for a restarting chat gets (rule 1a).
    lookup: Lookup,
    /// `park`: lookups for a chat that is restarting, answered when it registers again, with
    /// the number of the holding their expiry timer belongs to (rule 1a).
    parked: HashMap<String, Held>,
    /// Numbers the holdings, so a timer of an earlier holding never ends a later one.
    holdings: u64,
    /// How long a parked lookup waits before it is answered "not registered".
    park_limit: Duration,
}

impl Discovery {
    /// A discovery that answers lookups for a restarting chat by `lookup`, holding them at
    /// most `park_limit` in `park` mode.
    pub(crate) fn new(lookup: Lookup, park_limit: Duration) -> Discovery {
        Discovery {
            chats: HashMap::new(),
            by_monitor: HashMap::new(),
            lookup,
            parked: HashMap::new(),
            holdings: 0,
            park_limit,
        }
    }
}

impl Actor for Discovery {
    type Msg = DiscoveryMsg;

    async fn handle(&mut self, msg: DiscoveryMsg, ctx: &mut Ctx<Self>) {
        match msg {
            DiscoveryMsg::Register { topic, chat } => {
                let mid = ctx.monitor(&chat.any());
                let _ = chat.send(ChatMsg::Registered);
                for (attempt, client) in self.parked.remove(&topic).map(|(_, w)| w).unwrap_or_default() {
                    let _ = client.send(ClientMsg::Found { attempt, chat: Some(chat.clone()) });
                }
                if let Some((old, old_mid)) = self.chats.insert(topic.clone(), (chat, mid)) {
                    ctx.demonitor(&old.any(), old_mid);
                    self.by_monitor.remove(&old_mid);
                }
                self.by_monitor.insert(mid, topic);
            }
            DiscoveryMsg::Lookup { topic, attempt, reply } => match self.chats.get(&topic) {
                Some((c, _)) => {
                    let _ = reply.send(ClientMsg::Found { attempt, chat: Some(c.clone()) });
                }
                None if self.lookup == Lookup::Retry => {
                    let _ = reply.send(ClientMsg::Found { attempt, chat: None });
                }
                None => {
                    let (holding, waiting) = self.parked.entry(topic.clone()).or_insert_with(|| {
                        self.holdings += 1;
                        (self.holdings, Vec::new())
                    });
                    if waiting.is_empty() {
                        let _ = ctx.send_after(self.park_limit, DiscoveryMsg::Expire { topic, holding: *holding });
                    }
                    waiting.push((attempt, reply));
                }
            },
            DiscoveryMsg::Expire { topic, holding } => {
                if self.parked.get(&topic).is_some_and(|(h, _)| *h == holding) {
                    for (attempt, client) in self.parked.remove(&topic).map(|(_, w)| w).unwrap_or_default() {
                        let _ = client.send(ClientMsg::Found { attempt, chat: None });
                    }
                }
            }
            DiscoveryMsg::Find { topic, reply } => {
                reply.send(FoundChat(self.chats.get(&topic).map(|(c, _)| c.clone())));
            }
        }
    }

    async fn on_down(&mut self, down: Down, _: &mut Ctx<Self>) {
        if let Some(topic) = self.by_monitor.remove(&down.id) {
            if self.chats.get(&topic).is_some_and(|(_, m)| *m == down.id) {
                self.chats.remove(&topic);
            }
        }
    }
}

/// A chat (rule 2).
pub(crate) struct Chat {
    topic: String,
    discovery: ActorRef<DiscoveryMsg>,
    shared: Arc<Shared>,
    starts: Arc<AtomicU32>,
    members: Vec<ActorRef<ClientMsg>>,
    member_ids: HashMap<ActorId, usize>,
    incarnation: u32,
}

impl Chat {
    pub(crate) fn new(
        index: u64,
        discovery: ActorRef<DiscoveryMsg>,
        shared: Arc<Shared>,
        starts: Arc<AtomicU32>,
    ) -> Chat {
        Chat {
            topic: topic(index),
            discovery,
            shared,
            starts,
            members: Vec::new(),
            member_ids: HashMap::new(),
            incarnation: 0,
        }
    }
}

impl Actor for Chat {
    type Msg = ChatMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        self.incarnation = self.starts.fetch_add(1, Ordering::SeqCst);
        if self.incarnation > 0 {
            self.shared.emitter.emit("restarted", json!({"target": self.topic, "attempt": self.incarnation}));
        }
        let register = DiscoveryMsg::Register { topic: self.topic.clone(), chat: ctx.myself() };
        self.discovery
            .send(register)
            .map_err(|e| ActorError::new(format!("{}: discovery did not take the registration: {e}", self.topic)))?;
        Ok(())
    }

    async fn handle(&mut self, msg: ChatMsg, _: &mut Ctx<Self>) {
        match msg {
            ChatMsg::Registered => {
                if self.incarnation == 0 {
                    self.shared.registered.fetch_add(1, Ordering::SeqCst);
                    self.shared.progress.notify_waiters();
                }
            }
            ChatMsg::Join { client, attempt } => {
                if !self.member_ids.contains_key(&client.id()) {
                    self.member_ids.insert(client.id(), self.members.len());
                    self.members.push(client.clone());
                }
                let _ = client.send(ClientMsg::Joined { attempt });
            }
            ChatMsg::Post { from, text } => {
                for m in &self.members {
                    let _ = m.send(ClientMsg::Broadcast { from, text: text.clone() });
                }
            }
            ChatMsg::Poison => std::panic::panic_any(POISON),
            ChatMsg::Stress { cpu_ms, ram_mb } => stress(cpu_ms, ram_mb),
        }
    }
}

/// The stress faults: spin for `cpu_ms`, then allocate and touch `ram_mb` MiB and free it.
fn stress(cpu_ms: u64, ram_mb: u64) {
    if cpu_ms > 0 {
        let until = Instant::now() + Duration::from_millis(cpu_ms);
        let mut x = 0u64;
        while Instant::now() < until {
            for i in 0..1000u64 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
        std::hint::black_box(x);
    }
    if ram_mb > 0 {
        let mut v = vec![0u8; (ram_mb as usize) << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
    }
}

/// A client (rules 3-4).
pub(crate) struct Client {
    index: u64,
    name: String,
    topic: String,
    discovery: ActorRef<DiscoveryMsg>,
    shared: Arc<Shared>,
    attempt: u32,
    tries: u32,
    chat: Option<(ActorRef<ChatMsg>, MonitorId)>,
    connected: bool,
    ever_joined: bool,
    lost_at: Option<Instant>,
    gave_up: bool,
    text: String,
    /// `"target":...,"by":...` rendered once: every event of this client carries them.
    members: String,
}

impl Client {
    pub(crate) fn new(index: u64, chat: u64, discovery: ActorRef<DiscoveryMsg>, shared: Arc<Shared>) -> Client {
        Client {
            index,
            name: format!("c{index}"),
            topic: topic(chat),
            discovery,
            shared,
            attempt: 0,
            tries: 0,
            chat: None,
            connected: false,
            ever_joined: false,
            lost_at: None,
            gave_up: false,
            text: format!("hello from c{index}"),
            members: format!("\"target\":\"chat-{chat}\",\"by\":\"c{index}\""),
        }
    }

    fn resolve(&mut self, ctx: &mut Ctx<Self>) {
        self.attempt += 1;
        self.tries += 1;
        let msg = DiscoveryMsg::Lookup { topic: self.topic.clone(), attempt: self.attempt, reply: ctx.myself() };
        if self.discovery.send(msg).is_err() {
            self.retry_later(ctx);
        }
    }

    fn retry_later(&mut self, ctx: &mut Ctx<Self>) {
        if let Some((chat, mid)) = self.chat.take() {
            ctx.demonitor(&chat.any(), mid);
        }
        if self.tries >= self.shared.retry_max {
            if !self.gave_up {
                self.gave_up = true;
                self.shared.errors.fetch_add(1, Ordering::Relaxed);
                self.shared
                    .emitter
                    .emit("gave_up", json!({"target": self.topic, "by": self.name, "tries": self.tries}));
            }
            return;
        }
        let _ = ctx.send_after(self.shared.retry_delay, ClientMsg::Retry { attempt: self.attempt });
    }
}

impl Actor for Client {
    type Msg = ClientMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        if self.shared.clients_send {
            let _ = ctx.interval(self.shared.send_interval, ClientMsg::Tick);
        }
        self.resolve(ctx);
        Ok(())
    }

    async fn handle(&mut self, msg: ClientMsg, ctx: &mut Ctx<Self>) {
        match msg {
            ClientMsg::Found { attempt, chat } if attempt == self.attempt && !self.connected => match chat {
                Some(chat) => {
                    let mid = ctx.monitor(&chat.any());
                    let join = ChatMsg::Join { client: ctx.myself(), attempt };
                    let sent = chat.send(join).is_ok();
                    self.chat = Some((chat, mid));
                    if !sent {
                        self.retry_later(ctx);
                    }
                }
                None => self.retry_later(ctx),
            },
            ClientMsg::Joined { attempt } if attempt == self.attempt && !self.connected && self.chat.is_some() => {
                self.connected = true;
                self.tries = 0;
                if let Some(t) = self.lost_at.take() {
                    let ms = t.elapsed().as_secs_f64() * 1000.0;
                    self.shared.emitter.emit_raw("reconnected", &format!("{},\"ms\":{ms}", self.members));
                }
                if !self.ever_joined {
                    self.ever_joined = true;
                    self.shared.joined.fetch_add(1, Ordering::SeqCst);
                    self.shared.progress.notify_waiters();
                }
            }
            ClientMsg::Broadcast { .. } => {
                self.shared.received.fetch_add(1, Ordering::Relaxed);
            }
            ClientMsg::Tick => {
                if let (true, Some((chat, _))) = (self.connected, &self.chat) {
                    let _ = chat.send(ChatMsg::Post { from: self.index, text: self.text.clone() });
                }
            }
            ClientMsg::Retry { attempt } if attempt == self.attempt && !self.connected && !self.gave_up => {
                self.resolve(ctx);
            }
            // Answers to an attempt given up on, or to a state that moved on (protocol rule 2).
            _ => {}
        }
    }

    async fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) {
        let current = self.chat.as_ref().is_some_and(|(_, mid)| *mid == down.id);
        if !current {
            return;
        }
        self.chat = None;
        if self.connected {
            self.connected = false;
            self.lost_at = Some(Instant::now());
            self.shared.emitter.emit_raw("fault_detected", &format!("\"id\":null,{}", self.members));
            self.tries = 0;
            self.resolve(ctx);
        } else {
            // The chat we found was already dead (discovery had not seen its Down yet).
            self.retry_later(ctx);
        }
    }
}

/// Rule 1a on discovery itself, from the messages it sends back: what a lookup for a topic with
/// no live chat gets in each `lookup` mode. Every wait has a deadline; no assertion can fail
/// because the machine is slow: they rest on the order of the messages one sender sends one
/// actor, and on timers never firing early.
#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    /// Forwards every `Found` it gets to the test, as (attempt, the chat's id).
    struct Probe(mpsc::UnboundedSender<(u32, Option<ActorId>)>);

    impl Actor for Probe {
        type Msg = ClientMsg;
        async fn handle(&mut self, msg: ClientMsg, _: &mut Ctx<Self>) {
            if let ClientMsg::Found { attempt, chat } = msg {
                let _ = self.0.send((attempt, chat.map(|c| c.id())));
            }
        }
    }

    /// A chat that does nothing (discovery only monitors it and acknowledges it).
    struct Idle;

    impl Actor for Idle {
        type Msg = ChatMsg;
        async fn handle(&mut self, _: ChatMsg, _: &mut Ctx<Self>) {}
    }

    const LIMIT: Duration = Duration::from_secs(10);

    /// What the probe saw: (attempt, the found chat's id).
    type Answers = mpsc::UnboundedReceiver<(u32, Option<ActorId>)>;

    fn setup(lookup: Lookup, park_limit: Duration) -> (ActorRef<DiscoveryMsg>, ActorRef<ClientMsg>, Answers) {
        let (tx, rx) = mpsc::unbounded_channel();
        (troupe::spawn(Discovery::new(lookup, park_limit)), troupe::spawn(Probe(tx)), rx)
    }

    fn lookup(d: &ActorRef<DiscoveryMsg>, attempt: u32, reply: &ActorRef<ClientMsg>) {
        d.send(DiscoveryMsg::Lookup { topic: "chat-0".into(), attempt, reply: reply.clone() }).unwrap();
    }

    fn register(d: &ActorRef<DiscoveryMsg>, chat: &ActorRef<ChatMsg>) {
        d.send(DiscoveryMsg::Register { topic: "chat-0".into(), chat: chat.clone() }).unwrap();
    }

    async fn answer(rx: &mut Answers) -> (u32, Option<ActorId>) {
        tokio::time::timeout(LIMIT, rx.recv()).await.expect("discovery answered in time").expect("probe alive")
    }

    /// Waits (bounded) until discovery no longer lists chat-0: it has handled the chat's `Down`.
    async fn forgotten(d: &ActorRef<DiscoveryMsg>) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let found = d.ask(|reply| DiscoveryMsg::Find { topic: "chat-0".into(), reply }, LIMIT).await;
            if matches!(found, Ok(FoundChat(None))) {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "discovery never saw the chat's Down");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn retry_answers_not_registered_at_once_even_when_the_chat_registers_right_after() {
        // A year: were the lookup held, only the registration could answer it.
        let (d, probe, mut rx) = setup(Lookup::Retry, Duration::from_secs(365 * 86_400));
        let chat = troupe::spawn(Idle);
        // One sender, one receiver: discovery handles the lookup before the registration.
        lookup(&d, 1, &probe);
        register(&d, &chat);
        assert_eq!(answer(&mut rx).await, (1, None));
        // Once registered, a lookup finds it.
        lookup(&d, 2, &probe);
        assert_eq!(answer(&mut rx).await, (2, Some(chat.id())));
    }

    #[tokio::test]
    async fn park_answers_a_held_lookup_with_the_chat_the_moment_it_registers() {
        let (d, probe, mut rx) = setup(Lookup::Park, Duration::from_secs(365 * 86_400));
        let first = troupe::spawn(Idle);
        lookup(&d, 1, &probe);
        lookup(&d, 2, &probe);
        register(&d, &first);
        // Both held lookups get the chat, in order, and nothing said "not registered" first.
        assert_eq!(answer(&mut rx).await, (1, Some(first.id())));
        assert_eq!(answer(&mut rx).await, (2, Some(first.id())));
        // The chat dies and restarts: a lookup in between is held for the new incarnation.
        first.kill();
        forgotten(&d).await;
        let second = troupe::spawn(Idle);
        lookup(&d, 3, &probe);
        register(&d, &second);
        assert_eq!(answer(&mut rx).await, (3, Some(second.id())));
    }

    #[tokio::test]
    async fn park_answers_not_registered_once_the_limit_passes_and_an_old_timer_never_cuts_a_new_holding() {
        let limit = Duration::from_millis(400);
        let (d, probe, mut rx) = setup(Lookup::Park, limit);
        // A holding ended by the registration: its timer is still running.
        let chat = troupe::spawn(Idle);
        let first_held = Instant::now();
        lookup(&d, 1, &probe);
        register(&d, &chat);
        assert_eq!(answer(&mut rx).await, (1, Some(chat.id())));
        chat.kill();
        forgotten(&d).await;
        // Half the limit later (a gap, not a wait for anything), a new holding: the first
        // holding's timer fires about half-way through it, and must not answer it; only its own
        // timer may, never before `limit` after it began.
        tokio::time::sleep_until((first_held + limit / 2).into()).await;
        let asked = Instant::now();
        lookup(&d, 2, &probe);
        assert_eq!(answer(&mut rx).await, (2, None));
        assert!(asked.elapsed() >= limit, "answered after {:?}, before the {limit:?} hold", asked.elapsed());
    }
}
