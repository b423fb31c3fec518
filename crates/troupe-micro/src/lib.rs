//! Micro-benchmarks (workloads.md §6) on Troupe and the Rust peers actix, ractor and kameo (in construction).
