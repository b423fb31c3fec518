//! CLI (filled in later).
