//! What the chat CLI tests share: a small chat run (3 chats x 3 clients, kills every second,
//! a 3 s window, three client processes of at most 4 clients when distributed).

/// `--set` arguments of the small run.
pub(crate) const SMALL: &[&str] = &[
    "--set",
    "chats_per_sup=3",
    "--set",
    "clients_per_server=3",
    "--set",
    "test_duration_secs=3",
    "--set",
    "warmup_s=1",
    "--set",
    "fault_pause_ms=1000",
    "--set",
    "msg_type=kill",
    "--set",
    "clients_per_process=4",
];
