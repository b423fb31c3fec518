//! `[observe]` for `troupe node` (feature `observe`): the node's operator endpoint
//! ([`troupe_observe`]) with this node's readiness and the counters published at each scrape.
//!
//! Rules (tests below and in crates/troupe-cli/tests/cli_observe.rs):
//! 1. The section has one key, `listen` (`host:port`); an unknown key, a missing or non-string
//!    `listen`, or an address that is not `host:port` is refused naming `[observe]`, before
//!    anything is bound (exit 2 from `troupe node`).
//! 2. `/health/ready` is ready when the node listens and, with a `[cluster]`, this node is a
//!    member whose status is `up`; otherwise 503 says which of the two is missing.
//! 3. Each `/metrics` scrape first publishes the node's counters (and the cluster's, with a
//!    `[cluster]`) through the `metrics` facade, so the text is as fresh as the scrape.

use troupe_observe::Endpoint;
use troupe_remote::Node;

use crate::daemon::Cluster;
use crate::member::MemberStatus;
use crate::status::Status;

/// Rule 1: the `listen` address of an `[observe]` table.
pub fn listen_of(table: &toml::Table) -> Result<String, String> {
    for key in table.keys() {
        if key != "listen" {
            return Err(format!("[observe] has an unknown key {key:?}; the only key is listen = \"host:port\""));
        }
    }
    let listen = match table.get("listen") {
        Some(toml::Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("[observe] listen must be a string \"host:port\", not {other}")),
        None => return Err("[observe] needs listen = \"host:port\" (e.g. \"127.0.0.1:9464\")".to_owned()),
    };
    troupe_observe::check_listen(&listen).map_err(|e| e.to_string())?;
    Ok(listen)
}

/// Rule 2 as the cluster `status` of `addr`'s node shows it (`None`: no cluster, ready once
/// listening): ready when a row of this address is `up`, else why not. [`start`] decides with
/// [`Cluster::is_up`], which also checks the incarnation, and words a refusal with this.
pub fn readiness(addr: &str, status: Option<&Status>) -> Result<(), String> {
    let Some(s) = status else { return Ok(()) };
    let mine = || s.members.iter().filter(|m| m.addr == addr);
    if mine().any(|m| m.status == MemberStatus::Up) {
        return Ok(());
    }
    match mine().next() {
        Some(m) => Err(format!("this node is a cluster member with status {}, not up", m.status.as_str())),
        None => Err(format!("this node is not a cluster member yet (phase {})", s.phase)),
    }
}

/// Rule 2 for a running cluster: [`Cluster::is_up`] decides; [`readiness`] says why not.
fn cluster_ready(addr: &str, c: &Cluster) -> Result<(), String> {
    if c.is_up() {
        return Ok(());
    }
    // Only an earlier incarnation's row of this address can be `up` here.
    readiness(addr, Some(&c.status())).and(Err("this node's own incarnation is not up yet".to_owned()))
}

/// Starts the endpoint on `listen` for `node` (and its `cluster`).
pub async fn start(listen: &str, node: &Node, cluster: Option<Cluster>) -> Result<Endpoint, troupe_observe::Error> {
    let addr = node.addr();
    let ready_cluster = cluster.clone();
    let publish_node = node.clone();
    let endpoint = Endpoint::builder(listen)
        .ready(move || ready_cluster.as_ref().map_or(Ok(()), |c| cluster_ready(&addr, c)))
        .refresh(move || publish(&publish_node, cluster.as_ref()))
        .start()
        .await?;
    // The recorder is installed by now: the series get their help texts.
    troupe_remote::metrics::describe();
    crate::metrics::describe();
    Ok(endpoint)
}

/// Rule 3.
fn publish(node: &Node, cluster: Option<&Cluster>) {
    troupe_remote::metrics::publish(node);
    if let Some(c) = cluster {
        crate::metrics::publish(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::MemberRow;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn rule_1_the_section_is_checked_before_anything_is_bound() {
        assert_eq!(listen_of(&table("listen = \"127.0.0.1:9464\"")).unwrap(), "127.0.0.1:9464");
        for (text, says) in [
            ("", "needs listen"),
            ("listen = 9464", "must be a string"),
            ("listen = \"9464\"", "not host:port"),
            ("listen = \"127.0.0.1:1\"\nport = 3", "unknown key \"port\""),
        ] {
            let e = listen_of(&table(text)).unwrap_err();
            assert!(e.contains("[observe]") && e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn rule_2_ready_only_as_an_up_member() {
        let row =
            |status| MemberRow { addr: "a:1".into(), name: "a".into(), uid: 1, status, up_number: 0, reachable: true };
        let status = |members| Status {
            node: "a".into(),
            cluster: "c".into(),
            phase: "joining".into(),
            leader: None,
            converged: false,
            members,
        };
        assert_eq!(readiness("a:1", None), Ok(()));
        assert!(readiness("a:1", Some(&status(vec![]))).unwrap_err().contains("not a cluster member yet"));
        assert!(readiness("a:1", Some(&status(vec![row(MemberStatus::Joining)]))).unwrap_err().contains("joining"));
        assert_eq!(readiness("a:1", Some(&status(vec![row(MemberStatus::Up)]))), Ok(()));
        assert!(readiness("a:1", Some(&status(vec![row(MemberStatus::Leaving)]))).is_err());
    }
}
