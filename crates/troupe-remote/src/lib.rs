//! Troupe distribution: nodes, the wire format, authenticated sessions, location-transparent
//! remote refs, remote monitors and links, channels with parallelism and affinity,
//! acknowledged delivery, global names, and built-in fault injection.
//!
//! - [`Node`]: start one with a [`NodeConfig`], [`Node::connect`] to peers, [`Node::export`]
//!   actors by name, forge refs to remote actors ([`Node::remote_ref`]) or look them up with a
//!   type check ([`Node::lookup`]). A remote `ActorRef<M>` is the same type as a local one;
//!   local sends never serialise.
//! - Messages that cross nodes implement [`RemoteMessage`] (serde plus a stable tag), usually
//!   with `#[derive(RemoteMessage)]`; `ActorRef` and `ReplyTo` inside them travel too, so
//!   `ask` works across nodes, and std types (`Option`, `Vec`, `Result`, numbers, strings,
//!   tuples) are replies as they are.
//! - Wire: see [`frame`] and [`handshake`]; codec: [`codec`] (bincode, chosen by measurement).
//! - Faults: [`Node::set_faults`], [`Node::partition`], [`Node::heal`].
//! - Optional mutual TLS under the handshake: [`TlsConfig`] (`[tls]` in a node's TOML).
//! - Feature `otel`: W3C trace context across remote sends, asks and replies, and a
//!   `troupe.remote.receive` span parented on it (`otel` module).
//! - Observing: structured `tracing` events (targets under `troupe_remote`; fields, not
//!   formatted strings; every peer-supplied value escaped, `logging` rule 3) and, with the
//!   feature `metrics`, the node's counters published through the `metrics` facade at scrape
//!   time (`metrics` module). The events:
//!   - `node up` (INFO): `peer_name`, `peer_addr`, `incarnation`, `channels` (comma-separated
//!     channel names), `connections` (how many this node dialled);
//!   - `node down` (INFO, WARN when `cause` is a failure): `peer_name`, `peer_addr`,
//!     `incarnation`, `cause` (`peer_closed`, `local`, `restarted`, and the failures, at
//!     WARN: `heartbeat_timeout`, the peer declared down, `io_error`, `limit`), `reason`
//!     (words);
//!   - `connect failed` (INFO): `peer_addr`, `error`; `connection accepted` (DEBUG): `from`,
//!     `peer_name`, `peer_addr`, `incarnation`, `channel`, `lane`;
//!   - `closing connection from ADDR: ...` (WARN, rate-limited, `logging` rule 2): `from`,
//!     `reason` (`handshake_timeout`, `handshake`, `auth`, `tls`, `peer_table_full`,
//!     `connection_budget`, `malformed`, `oversized`), `error` where there is one, `peer_addr`
//!     and `peer_name` once known; `closing the session: a budget was exceeded` (WARN,
//!     rate-limited): `peer_addr`, `reason = "limit"`, `error`.
//!
//! ```
//! # #[tokio::main] async fn main() {
//! use std::time::Duration;
//! use serde::{Deserialize, Serialize};
//! use troupe::{Actor, Ctx, ReplyTo};
//! use troupe_remote::{Node, NodeConfig, RemoteMessage};
//!
//! #[derive(Serialize, Deserialize, RemoteMessage)]
//! #[remote(tag = "doc.hello")] // the tag is doc.hello.v1
//! struct Hello(String, ReplyTo<String>);
//! struct Greeter;
//! impl Actor for Greeter {
//!     type Msg = Hello;
//!     async fn handle(&mut self, Hello(name, reply): Hello, _: &mut Ctx<Self>) {
//!         reply.send(format!("hello, {name}"));
//!     }
//! }
//!
//! let a = Node::start(NodeConfig::new("a", "s3cret")).await.unwrap();
//! let b = Node::start(NodeConfig::new("b", "s3cret")).await.unwrap();
//! b.export("greeter", &troupe::spawn(Greeter)).unwrap();
//! let greeter = a.lookup::<Hello>(&b.addr(), "greeter").await.unwrap();
//! let answer = greeter.ask(|r| Hello("Joe".into(), r), Duration::from_secs(5)).await.unwrap();
//! assert_eq!(answer, "hello, Joe");
//! # a.shutdown(); b.shutdown();
//! # }
//! ```

// `#[derive(RemoteMessage)]` names `::troupe_remote`; this lets the crate derive it too.
extern crate self as troupe_remote;

#[cfg(feature = "bench")]
pub mod bench;
mod blob;
pub mod causal;
#[cfg(feature = "cli")]
pub mod cli;
pub mod codec;
mod config;
mod error;
mod fault;
pub mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod handshake;
pub mod logging;
#[cfg(feature = "metrics")]
pub mod metrics;
mod node;
#[cfg(feature = "otel")]
pub mod otel;
pub mod proto;
pub mod services;
mod tls;
mod types;

pub use blob::{Blob, SharedBlob};
pub use codec::tag_hash;
pub use config::{
    ChannelConfig, NodeConfig, ENV_ADVERTISE, ENV_LISTEN, ENV_NODE_NAME, ENV_SECRET, ENV_SECRET_FILE, ENV_VARS,
};
pub use error::{Error, ErrorKind};
pub use fault::FaultConfig;
pub use node::refs::{send_with, SendOptions};
pub use node::relay::{Route, Router, MAX_HOPS, MAX_TUNNELS_PER_PEER};
pub use node::{Node, NodeEvent, PeerInfo, StatsSnapshot};
#[cfg(feature = "tls-dev-certs")]
pub use tls::{dev_certs, dev_certs_with};
pub use tls::{toml_section, TlsConfig};
pub use troupe_macros::RemoteMessage;
pub use types::{register, tag_of, Nested, RemoteField, RemoteMessage};
