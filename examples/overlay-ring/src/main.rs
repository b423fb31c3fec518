//! A ring of four nodes on loopback in one process, the ring overlay selected by name: a
//! message from n1 to n3 goes round through n2, and a send to a node outside the ring fails
//! with `ErrorKind::NoRoute`.
//!
//! Run with `cargo run -p example-overlay-ring`.

use std::time::Duration;

use example_overlay_ring::{expected_neighbours, start_member, wait_neighbours};

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> Result<(), troupe_cluster::Error> {
    let mut nodes = Vec::new();
    for i in 1..=4 {
        let seed = nodes.first().map(|(n, _): &(troupe_remote::Node, _)| format!("n1@{}", n.addr()));
        nodes.push(start_member(&format!("n{i}"), "ring-example", seed.as_deref()).await?);
    }
    let addrs: Vec<String> = nodes.iter().map(|(n, _)| n.addr()).collect();
    for ((node, overlay), want) in nodes.iter().zip(expected_neighbours(&addrs)) {
        let got = wait_neighbours(overlay, &want, LIMIT).await?;
        println!("{} at {}: neighbours {got:?}", node.name(), node.addr());
    }
    let mut inbox = nodes[2].1.register("inbox");
    nodes[0].1.send(&addrs[2], "inbox", b"hello, n3".to_vec())?;
    match tokio::time::timeout(LIMIT, inbox.recv()).await {
        Ok(Some(d)) => {
            println!("n3 got {:?} from {} after {} hops", String::from_utf8_lossy(&d.bytes), d.origin, d.hops)
        }
        _ => println!("n3 got nothing within {LIMIT:?}"),
    }
    match nodes[0].1.send("127.0.0.1:9", "inbox", b"nobody".to_vec()) {
        Err(e) => println!("send outside the ring: {e}"),
        Ok(()) => println!("send outside the ring was accepted (it should not be)"),
    }
    for (_, overlay) in &nodes {
        overlay.stop_and_wait(LIMIT).await;
    }
    Ok(())
}
