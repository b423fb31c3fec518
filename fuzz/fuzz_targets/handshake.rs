//! Fuzz target: both sides of the handshake, fed arbitrary bytes by the other side, must fail
//! cleanly (never panic, never hang past the deadline).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (first, rest) = data.split_first().map_or((0, data), |(f, r)| (*f, r));
    if first % 2 == 0 {
        troupe_remote::fuzzing::handshake_acceptor(rest);
    } else {
        troupe_remote::fuzzing::handshake_dialler(rest);
    }
});
