//! docs/getting-started.md, compiled and run: this crate's documentation is the guide, so
//! `cargo test -p example-getting-started --doc` runs every step of it as a doc test (what a
//! new user follows is what the tests run).
#![doc = include_str!("../../../docs/getting-started.md")]
