//! Test helpers shared by the tests of `troupe-remote`, `troupe-cluster` and `troupe-crdt` (a
//! dev-dependency only, never published): [`recorder`], an in-test `metrics` recorder that
//! keeps what a scrape-time `publish` handed it, and [`capture`], a capturing `tracing` layer
//! with a bounded wait for an event, and [`wait::until`], a bounded wait for a condition.

pub mod capture;
pub mod recorder;
pub mod wait;
