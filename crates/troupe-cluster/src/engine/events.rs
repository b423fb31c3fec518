//! Cluster events (`ClusterEvent`) as differences between what this node reported last and
//! what its state says now, so every subscriber sees each change once, in a fixed order:
//! membership changes by address, then reachability, then the leader.
//!
//! Each reported change is also a structured `tracing` event (target under
//! `troupe_cluster`; `node` is the member whose view changed): `member status changed`
//! (INFO; `member`, `member_name`, `from`, `to`: status names, `from = "none"` for a member
//! first seen), `member unreachable` (WARN; `member`, `member_name`, `observers`: the
//! members whose detectors judge it so), `member reachable` (INFO), `leader changed` (INFO;
//! `from`, `to`: addresses or `none`).

use std::collections::{BTreeMap, BTreeSet};

use troupe_remote::logging::Esc;

use crate::member::MemberStatus;
use crate::wire::ClusterEvent;

use super::{Engine, Out};

/// What was last reported.
#[derive(Clone, Debug, Default)]
pub(super) struct View {
    members: BTreeMap<String, (u64, String, MemberStatus)>,
    unreachable: BTreeSet<String>,
    leader: Option<String>,
}

/// The `tracing` event of one membership change seen by `node` (`from` is `None` for a member
/// first seen).
fn trace_status(node: &str, addr: &str, name: &str, from: Option<MemberStatus>, to: MemberStatus) {
    tracing::info!(
        node,
        member = %Esc(addr),
        member_name = %Esc(name),
        from = from.map_or("none", MemberStatus::as_str),
        to = to.as_str(),
        "member status changed"
    );
}

fn status_event(addr: &str, name: &str, status: MemberStatus, previous: MemberStatus) -> Option<ClusterEvent> {
    let (addr, name) = (addr.to_owned(), name.to_owned());
    Some(match status {
        MemberStatus::Joining => ClusterEvent::MemberJoined { addr, name },
        MemberStatus::Up => ClusterEvent::MemberUp { addr, name },
        MemberStatus::Leaving => ClusterEvent::MemberLeft { addr, name },
        MemberStatus::Exiting => ClusterEvent::MemberExited { addr, name },
        MemberStatus::Down => ClusterEvent::MemberDowned { addr, name },
        MemberStatus::Removed => ClusterEvent::MemberRemoved { addr, name, previous },
    })
}

impl Engine {
    pub(super) fn emit_events(&mut self, out: &mut Vec<Out>) {
        if !self.is_member() || self.events_gen == self.cgen {
            return;
        }
        self.events_gen = self.cgen;
        let mut now = View::default();
        for m in self.gossip.members.values() {
            now.members.insert(m.id.addr.clone(), (m.id.uid, m.id.name.clone(), m.status));
        }
        now.unreachable = self.gossip.unreachable();
        now.leader = self.gossip.leader();
        let me = self.me.addr.as_str();
        for (addr, (uid, name, status)) in &now.members {
            match self.view.members.get(addr) {
                Some((u, _, s)) if u == uid && s == status => {}
                Some((u, old_name, s)) if u != uid => {
                    if *s != MemberStatus::Removed {
                        trace_status(me, addr, old_name, Some(*s), MemberStatus::Removed);
                        out.extend(status_event(addr, old_name, MemberStatus::Removed, *s).map(Out::Event));
                    }
                    trace_status(me, addr, name, None, *status);
                    out.extend(status_event(addr, name, *status, *s).map(Out::Event));
                }
                Some((_, _, s)) => {
                    trace_status(me, addr, name, Some(*s), *status);
                    out.extend(status_event(addr, name, *status, *s).map(Out::Event));
                }
                None if *status == MemberStatus::Removed => {}
                None => {
                    trace_status(me, addr, name, None, *status);
                    out.extend(status_event(addr, name, *status, *status).map(Out::Event));
                }
            }
        }
        let name_of = |a: &str| now.members.get(a).map(|(_, n, _)| n.clone()).unwrap_or_default();
        for a in now.unreachable.difference(&self.view.unreachable) {
            let observers = self.gossip.observers_of(a).join(",");
            tracing::warn!(node = me, member = %Esc(a), observers = %Esc(&observers), member_name = %Esc(&name_of(a)), "member unreachable");
            out.push(Out::Event(ClusterEvent::Unreachable { addr: a.clone(), name: name_of(a) }));
        }
        for a in self.view.unreachable.difference(&now.unreachable) {
            // A member that went away is not "reachable again".
            if now.members.get(a).is_some_and(|(_, _, s)| s.is_live()) {
                tracing::info!(node = me, member = %Esc(a), member_name = %Esc(&name_of(a)), "member reachable");
                out.push(Out::Event(ClusterEvent::Reachable { addr: a.clone(), name: name_of(a) }));
            }
        }
        if now.leader != self.view.leader {
            tracing::info!(
                node = me,
                from = %Esc(self.view.leader.as_deref().unwrap_or("none")),
                to = %Esc(now.leader.as_deref().unwrap_or("none")),
                "leader changed"
            );
            out.push(Out::Event(ClusterEvent::LeaderChanged { leader: now.leader.clone() }));
        }
        self.view = now;
    }
}
