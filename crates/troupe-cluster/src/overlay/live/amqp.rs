//! The publish-subscribe overlay through an AMQP broker (RabbitMQ, with the `lapin` client):
//! nodes hold no connection to each other, only one to the broker, and the broker routes.
//! The same [`super::Overlay`] API as every other overlay.
//!
//! Rules:
//! 1. At start a node connects to `amqp_url`, declares the topic exchange [`EXCHANGE`] (not
//!    durable), its own exclusive, auto-deleted queue, binds it to its node key and starts
//!    consuming, all within [`CONNECT_TIMEOUT`]; failing that, the start fails with the URL
//!    (password hidden) and how to start a broker.
//! 2. Keys: a node's is `node.` + its address in hex, a topic's `topic.` + the topic in hex (so
//!    no name can hold AMQP wildcards). A key longer than 255 bytes (a topic or address over
//!    123 bytes) is refused: the message is dropped with a warning.
//! 3. `send` publishes on the destination's node key, `broadcast` on the topic's key;
//!    `subscribe` binds the topic's key to this node's queue first (once per topic). The
//!    payload is JSON: the origin's address and the [`Body`].
//! 4. A message is delivered as the broker hands it over (`hops` is 1: through the broker);
//!    a payload that does not decode is dropped with a warning.
//! 5. A lost broker ends deliveries; the node logs it and keeps answering status requests
//!    (its `connected` list is the node layer's, empty of overlay peers).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer, ExchangeKind};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use troupe_remote::Node;

use super::driver::Input;
use super::wire::{Body, Delivery, OverlayStatus};
use crate::error::{Error, ErrorKind};

/// The exchange every AMQP overlay node uses (rule 1).
pub const EXCHANGE: &str = "troupe.overlay";
/// Bound on connecting to the broker, declarations included (rule 1).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `url` with the password replaced by `***`.
///
/// ```
/// use troupe_cluster::overlay::live::amqp::redact;
/// assert_eq!(redact("amqp://guest:pw@127.0.0.1:5672/%2f"), "amqp://guest:***@127.0.0.1:5672/%2f");
/// assert_eq!(redact("amqp://127.0.0.1:5672"), "amqp://127.0.0.1:5672");
/// ```
#[must_use]
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let host_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..host_end].rfind('@') else { return url.to_owned() };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Rule 2.
fn key(prefix: &str, name: &str) -> Option<ShortString> {
    let k = format!("{prefix}.{}", hex(name));
    (k.len() <= 255).then(|| k.into())
}

#[derive(Serialize, Deserialize)]
struct AmqpMsg {
    origin: String,
    body: Body,
}

/// A node's link to the broker (rule 1).
pub(crate) struct Link {
    conn: Connection,
    channel: Channel,
    queue: ShortString,
    consumer: Consumer,
}

/// Rule 1.
pub(crate) async fn connect(url: &str, me: &str) -> Result<Link, Error> {
    let text = |why: &str| {
        format!(
            "cannot reach the AMQP broker at {} ([overlay] amqp_url){why}; start one with \
             `bash scripts/rabbitmq.sh start DIR` and use the URL it prints",
            redact(url)
        )
    };
    let fail = |why: String| Error::from(ErrorKind::Node(text(&format!(": {why}"))));
    let me_key = key("node", me).ok_or_else(|| fail("this node's address is too long for a routing key".into()))?;
    let opened = tokio::time::timeout(CONNECT_TIMEOUT, async {
        let props = ConnectionProperties::default().with_connection_name("troupe overlay".into());
        let conn = Connection::connect(url, props).await?;
        let channel = conn.create_channel().await?;
        let ex = ExchangeDeclareOptions { durable: false, ..Default::default() };
        channel.exchange_declare(EXCHANGE.into(), ExchangeKind::Topic, ex, FieldTable::default()).await?;
        let qo = QueueDeclareOptions { exclusive: true, auto_delete: true, ..Default::default() };
        let queue = channel.queue_declare("".into(), qo, FieldTable::default()).await?.name().clone();
        let bind = QueueBindOptions::default();
        channel.queue_bind(queue.clone(), EXCHANGE.into(), me_key, bind, FieldTable::default()).await?;
        let co = BasicConsumeOptions { no_ack: true, exclusive: true, ..Default::default() };
        let consumer = channel.basic_consume(queue.clone(), "troupe-overlay".into(), co, FieldTable::default()).await?;
        Ok::<_, lapin::Error>(Link { conn, channel, queue, consumer })
    })
    .await;
    match opened {
        Ok(Ok(link)) => Ok(link),
        Ok(Err(e)) => Err(Error::node(text(""), e)),
        Err(_) => Err(ErrorKind::Timeout(text(&format!(": no answer within {} s", CONNECT_TIMEOUT.as_secs()))).into()),
    }
}

struct State {
    node: Node,
    me: String,
    inboxes: HashMap<String, mpsc::UnboundedSender<Delivery>>,
    topics: HashMap<String, Vec<mpsc::UnboundedSender<Delivery>>>,
    bound: HashSet<String>,
    delivered: u64,
}

impl State {
    async fn publish(&self, channel: &Channel, k: Option<ShortString>, body: Body) {
        let Some(k) = k else {
            tracing::warn!("overlay (amqp): a name is too long for a routing key; message dropped");
            return;
        };
        let Ok(payload) = serde_json::to_vec(&AmqpMsg { origin: self.me.clone(), body }) else { return };
        let opts = BasicPublishOptions::default();
        if let Err(e) = channel.basic_publish(EXCHANGE.into(), k, opts, &payload, BasicProperties::default()).await {
            tracing::warn!("overlay (amqp): publish failed: {e}");
        }
    }

    /// Rule 4.
    fn deliver(&mut self, data: &[u8]) {
        let Ok(m) = serde_json::from_slice::<AmqpMsg>(data) else {
            tracing::warn!("overlay (amqp): an undecodable message was dropped");
            return;
        };
        let (targets, topic, bytes) = match m.body {
            Body::Unicast { actor, bytes, .. } => {
                (self.inboxes.get(&actor).cloned().into_iter().collect(), None, bytes)
            }
            Body::Broadcast { topic, bytes } => {
                let subs = self.topics.entry(topic.clone()).or_default();
                subs.retain(|s| !s.is_closed());
                (subs.clone(), Some(topic), bytes)
            }
        };
        let targets: Vec<mpsc::UnboundedSender<Delivery>> = targets;
        if targets.is_empty() {
            return;
        }
        self.delivered += 1;
        for t in targets {
            let _ = t.send(Delivery { origin: m.origin.clone(), topic: topic.clone(), bytes: bytes.clone(), hops: 1 });
        }
    }

    fn status(&self) -> OverlayStatus {
        let mut connected: Vec<String> = self.node.peers().into_iter().map(|p| p.addr).collect();
        connected.sort();
        OverlayStatus {
            kind: "amqp".into(),
            me: self.me.clone(),
            connected,
            delivered: self.delivered,
            ..OverlayStatus::default()
        }
    }
}

/// Runs the overlay until `Stop` (rules 2 to 5).
pub(crate) async fn run(node: Node, link: Link, mut rx: mpsc::UnboundedReceiver<Input>) {
    let Link { conn, channel, queue, mut consumer } = link;
    let mut st = State {
        me: node.addr(),
        node,
        inboxes: HashMap::new(),
        topics: HashMap::new(),
        bound: HashSet::new(),
        delivered: 0,
    };
    let mut lost = false;
    let mut ack = None;
    loop {
        tokio::select! {
            input = rx.recv() => match input {
                None => break,
                Some(Input::Stop(a)) => {
                    ack = a;
                    break;
                }
                Some(Input::Send { to, actor, bytes }) => {
                    st.publish(&channel, key("node", &to), Body::Unicast { to, actor, bytes }).await;
                }
                Some(Input::Broadcast { topic, bytes }) => {
                    st.publish(&channel, key("topic", &topic), Body::Broadcast { topic, bytes }).await;
                }
                Some(Input::Subscribe { topic, tx, ack }) => {
                    let mut result = Ok(());
                    if st.bound.insert(topic.clone()) {
                        let Some(k) = key("topic", &topic) else {
                            tracing::warn!("overlay (amqp): topic {topic:?} is too long for a routing key");
                            st.bound.remove(&topic);
                            if let Some(ack) = ack {
                                let _ = ack.send(Err("the topic is too long for an AMQP routing key".into()));
                            }
                            continue;
                        };
                        let b = QueueBindOptions::default();
                        if let Err(e) = channel.queue_bind(queue.clone(), EXCHANGE.into(), k, b, FieldTable::default()).await {
                            tracing::warn!("overlay (amqp): cannot subscribe to {topic:?}: {e}");
                            st.bound.remove(&topic);
                            result = Err(format!("the broker did not bind it: {e}"));
                        }
                    }
                    st.topics.entry(topic).or_default().push(tx);
                    if let Some(ack) = ack {
                        let _ = ack.send(result);
                    }
                }
                Some(Input::Register { actor, tx }) => {
                    st.inboxes.insert(actor, tx);
                }
                Some(Input::Status(reply)) => {
                    let _ = reply.send(st.status());
                }
                Some(Input::Wire(_) | Input::ProbeDone { .. }) => {}
            },
            d = consumer.next(), if !lost => match d {
                Some(Ok(delivery)) => st.deliver(&delivery.data),
                Some(Err(e)) => {
                    tracing::warn!("overlay (amqp): the broker connection failed: {e}");
                    lost = true;
                }
                None => {
                    tracing::warn!("overlay (amqp): the broker ended this node's consumer");
                    lost = true;
                }
            },
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), conn.close(200, "bye".into())).await;
    if let Some(a) = ack {
        let _ = a.send(());
    }
}
