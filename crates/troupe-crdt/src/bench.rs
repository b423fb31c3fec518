//! Bench (filled in later).
