//! Fuzz target: the frame decoder and every frame kind's body parser must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    troupe_remote::fuzzing::frame_decoder(data);
});
