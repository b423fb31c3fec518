//! [`Status`]: the membership table as one node sees it, what `troupe cluster status` and
//! `troupe cluster members` print.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use troupe_remote::{Nested, RemoteMessage};

use crate::gossip::Gossip;
use crate::member::MemberStatus;

/// One member as a node sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRow {
    /// Its address.
    pub addr: String,
    /// Its node name.
    pub name: String,
    /// Its incarnation.
    pub uid: u64,
    /// Its status.
    pub status: MemberStatus,
    /// Its age rank (1 oldest; 0 not yet up).
    pub up_number: u64,
    /// Whether every observer currently hears its heartbeats.
    pub reachable: bool,
}

/// A node's view of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The node that answered.
    pub node: String,
    /// The cluster's name.
    pub cluster: String,
    /// `joining` (not a member yet), `member`, or `stopped: REASON`.
    pub phase: String,
    /// The leader as this node sees it.
    pub leader: Option<String>,
    /// Whether the state has converged (every reachable live member has seen it).
    pub converged: bool,
    /// Members, removed ones left out, sorted by address.
    pub members: Vec<MemberRow>,
}

impl RemoteMessage for Status {
    const TAG: &'static str = "troupe.cluster.status.v1";
    fn nested(_: &mut Nested) {}
}

impl Status {
    pub(crate) fn of(node: &str, cluster: &str, phase: String, g: &Gossip) -> Self {
        let unreachable = g.unreachable();
        let members = g
            .members
            .values()
            .filter(|m| m.status != MemberStatus::Removed)
            .map(|m| MemberRow {
                addr: m.id.addr.clone(),
                name: m.id.name.clone(),
                uid: m.id.uid,
                status: m.status,
                up_number: m.up_number,
                reachable: !unreachable.contains(&m.id.addr),
            })
            .collect();
        Self {
            node: node.to_owned(),
            cluster: cluster.to_owned(),
            phase,
            leader: g.leader(),
            converged: g.converged(),
            members,
        }
    }

    /// Members with this status.
    #[must_use]
    pub fn count(&self, status: MemberStatus) -> usize {
        self.members.iter().filter(|m| m.status == status).count()
    }

    /// The table `troupe cluster members` prints: one line a member.
    #[must_use]
    pub fn members_table(&self) -> String {
        let mut s = format!("{:<28} {:<16} {:<8} {:>3} {}\n", "ADDRESS", "NAME", "STATUS", "AGE", "REACHABLE");
        for m in &self.members {
            let age = if m.up_number == 0 { "-".to_owned() } else { m.up_number.to_string() };
            let _ = writeln!(
                s,
                "{:<28} {:<16} {:<8} {:>3} {}",
                m.addr,
                m.name,
                m.status.as_str(),
                age,
                if m.reachable { "yes" } else { "NO" }
            );
        }
        s
    }

    /// What `troupe cluster status` prints: a header, then the members table.
    #[must_use]
    pub fn report(&self) -> String {
        let up = self.count(MemberStatus::Up);
        let unreachable = self.members.iter().filter(|m| !m.reachable).count();
        format!(
            "cluster {} as seen by {} ({})\nleader: {}   converged: {}   members: {} ({} up, {} unreachable)\n\n{}",
            self.cluster,
            self.node,
            self.phase,
            self.leader.as_deref().unwrap_or("none"),
            if self.converged { "yes" } else { "no" },
            self.members.len(),
            up,
            unreachable,
            self.members_table()
        )
    }
}
