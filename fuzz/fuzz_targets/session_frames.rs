//! Fuzz target: control, data and reply frame bodies after the handshake, dispatched by a real
//! node (with its built-in services) as if an authenticated peer sent them, must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    troupe_remote::fuzzing::session_frames(data);
});
