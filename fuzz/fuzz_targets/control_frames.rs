//! Fuzz target: well-formed control frames (monitors, links, exits, global names, lookups,
//! kills, acks, refusals) and causal frames with structured stamps, built from the input's
//! choices and dispatched by a real node with small budgets as if an authenticated peer sent
//! them, must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    troupe_remote::fuzzing::control_frames(data);
});
