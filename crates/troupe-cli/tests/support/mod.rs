//! What the end-to-end CLI tests share: `lab`, the harness every `cli_*.rs` runs the binary
//! through, `chat`, the small chat run of the chat tests, and `node`, a `troupe node` child
//! process with its stdout lines. Each test file uses a part.
#![allow(dead_code)]

pub(crate) mod chat;
pub(crate) mod lab;
pub(crate) mod node;
