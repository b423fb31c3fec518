//! Partisan's overlays (seed 004 §3): the peer-to-peer overlay's protocols as state machines
//! without I/O, a deterministic simulator to measure them, and [`live`], which runs full
//! mesh, static, client-server and HyParView + Plumtree overlays on real nodes.
//!
//! - [`hyparview`]: active/passive views, join and forward-join, shuffle, healing.
//! - [`plumtree`]: eager/lazy push, `IHave`, `Graft`, `Prune`.
//! - [`live`]: the overlays on real `troupe_remote::Node`s, one application API for all,
//!   and the contract of a user-defined overlay ([`PeerService`], selected by name through an
//!   [`OverlayRegistry`]).
//! - [`sim`]: nodes running both over a seeded network, with crashes, and the replicated
//!   counter experiment of seed 004 §6.3 on full mesh, client-server and HyParView.

pub mod hyparview;
pub mod live;
pub mod plumtree;
#[cfg(feature = "sim")]
pub mod sim;

pub use live::{OverlayRegistry, PeerService};

use serde::{Deserialize, Serialize};

/// The overlays of the `overlay-scale` measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverlayKind {
    /// Every node talks to every other (Distributed Erlang's shape).
    FullMesh,
    /// Clients talk only to the server (node 0), which talks to every client.
    ClientServer,
    /// HyParView membership; nodes talk to their active view.
    Hyparview,
}

impl OverlayKind {
    /// Parses `full_mesh`, `client_server` or `hyparview`, naming the allowed values otherwise.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "full_mesh" => Ok(Self::FullMesh),
            "client_server" => Ok(Self::ClientServer),
            "hyparview" => Ok(Self::Hyparview),
            other => Err(format!("overlay {other:?} does not exist; allowed: full_mesh, client_server, hyparview")),
        }
    }
}
