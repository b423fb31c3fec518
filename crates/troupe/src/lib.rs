//! Troupe: a typed actor runtime with Erlang/OTP supervision on tokio (in construction).
