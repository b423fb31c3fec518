//! The differential test's parts: the scenario language and generator, the hand-written edge
//! cases, and the Troupe runner. The test itself is `tests/supervision_otp_diff.rs`.
#![allow(unreachable_pub, dead_code)]

pub mod edge_cases;
pub mod scenario;
pub mod troupe_runner;
