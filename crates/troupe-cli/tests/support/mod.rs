//! What the end-to-end CLI tests share: `lab`, the harness every `cli_*.rs` runs the binary
//! through, and `chat`, the small chat run of the chat tests. Each test file uses a part.
#![allow(dead_code)]

pub(crate) mod chat;
pub(crate) mod lab;
