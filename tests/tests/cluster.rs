//! Gator on a Redis Cluster the test starts: 3 masters on loopback.

use gator_tests::RedisCluster;

#[test]
fn the_harness_starts_a_cluster_whose_queues_spread_over_its_masters() {
    let cluster = RedisCluster::start(3, 0);
    assert_eq!(cluster.masters().len(), 3);
    let homes: std::collections::BTreeSet<u16> = ["default", "high", "mail", "a", "b", "c"]
        .iter()
        .map(|q| cluster.master_of(&format!("gator:{{{q}}}:queue")))
        .collect();
    assert!(homes.len() >= 2, "six queues all on one master: {homes:?}");
    assert_eq!(cluster.cli(&["SET", "gator:{x}:k", "v"]), "OK");
    assert_eq!(cluster.cli(&["GET", "gator:{x}:k"]), "v");
}
