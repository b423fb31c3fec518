//! The ractor versions of the micro-benchmarks at tiny parameters: every benchmark finishes, its
//! correctness check passes (a wrong total would be an error), and its result lines follow the
//! peer-program contract.

mod common;

#[test]
fn every_bench_computes_the_right_totals_and_prints_contract_lines() {
    common::all_benches_well_formed("ractor");
}

#[test]
fn memory_reports_bytes_per_actor_and_spawn_time() {
    common::memory_well_formed("ractor");
}
