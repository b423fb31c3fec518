//! Hand-written scenarios: the divergences issue 17 reported, and the corners of each rule.

use std::collections::HashMap;

use super::scenario::{Child, Nested, Outcome, Scenario, Step};

/// The edge cases, each named after what it pins.
pub fn edge_cases() -> Vec<Scenario> {
    let c = |id: &str, restart: &'static str, shutdown: &'static str| Child {
        id: id.into(),
        restart,
        shutdown,
        nested: None,
    };
    let f = |pairs: &[(&str, &[usize])]| {
        pairs.iter().map(|(id, n)| (id.to_string(), n.iter().map(|n| (*n, Outcome::Fail)).collect())).collect()
    };
    let ig = |pairs: &[(&str, &[usize])]| -> HashMap<String, Vec<(usize, Outcome)>> {
        pairs.iter().map(|(id, n)| (id.to_string(), n.iter().map(|n| (*n, Outcome::Ignore)).collect())).collect()
    };
    let s = |name: &str, strategy, intensity, children, fails, steps| Scenario {
        name: name.into(),
        strategy,
        intensity,
        period: 5,
        auto: "never",
        simple: None,
        children,
        fails,
        steps,
    };
    use Step::*;
    let period = |mut sc: Scenario, period: u64| {
        sc.period = period;
        sc
    };
    let auto = |mut sc: Scenario, auto: &'static str| {
        sc.auto = auto;
        sc
    };
    vec![
        auto(
            s(
                "any_significant_exit_shuts_down",
                "one_for_one",
                3,
                vec![c("a", "permanent", "5000"), c("t", "transient*", "5000")],
                f(&[]),
                vec![Crash("t".into(), "boom"), Crash("t".into(), "normal"), Stop],
            ),
            "any_significant",
        ),
        auto(
            s(
                "all_significant_exits_shut_down_after_the_last",
                "one_for_all",
                3,
                vec![c("t", "transient*", "5000"), c("u", "temporary*", "5000")],
                f(&[]),
                vec![
                    Crash("t".into(), "shutdown"),
                    StartChild(c("v", "temporary*", "brutal")),
                    Terminate("v".into()),
                    StartChild(c("w", "temporary*", "brutal")),
                    Crash("u".into(), "boom"),
                    Crash("w".into(), "killed"),
                    Stop,
                ],
            ),
            "all_significant",
        ),
        s(
            "one_for_all_restart_failure_restarts_the_whole_group",
            "one_for_all",
            10,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "brutal"), c("c", "permanent", "infinity")],
            f(&[("b", &[2])]),
            vec![Crash("a".into(), "boom"), Stop],
        ),
        // Rule 9: a call queued while the one_for_all restart runs is answered before the retry
        // that the failed start queues (OTP's `try_again_restart` cast goes behind it).
        s(
            "a_call_queued_during_a_failed_restart_is_answered_before_the_retry",
            "one_for_all",
            10,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "brutal"), c("c", "permanent", "infinity")],
            f(&[("b", &[2])]),
            vec![CrashWhich("a".into(), "boom"), Stop],
        ),
        s(
            "rest_for_one_a_call_queued_during_a_failed_restart",
            "rest_for_one",
            10,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "brutal"), c("c", "permanent", "infinity")],
            f(&[("c", &[2])]),
            vec![CrashWhich("b".into(), "killed"), Stop],
        ),
        s(
            "one_for_one_a_call_queued_during_a_failed_restart",
            "one_for_one",
            10,
            vec![c("a", "permanent", "5000"), c("b", "transient", "brutal")],
            f(&[("b", &[2])]),
            vec![CrashWhich("b".into(), "boom"), Stop],
        ),
        // Rule 4: whole seconds of the monotonic clock, not of the supervisor's start. Restarts
        // at x.7 s and (x+2).3 s (seconds x and x+2) do not count together; at x.3 s and
        // (x+1).7 s (seconds x and x+1) they do, and intensity 1 is exceeded.
        period(
            s(
                "whole_seconds_of_the_clock_a_pair_two_seconds_apart_on_the_clock",
                "one_for_one",
                1,
                vec![c("a", "permanent", "5000")],
                f(&[]),
                vec![Tick, At(700), Crash("a".into(), "boom"), At(2300), Crash("a".into(), "boom"), Stop],
            ),
            1,
        ),
        period(
            s(
                "whole_seconds_of_the_clock_a_pair_in_adjacent_seconds",
                "one_for_one",
                1,
                vec![c("a", "permanent", "5000")],
                f(&[]),
                vec![Tick, At(300), Crash("a".into(), "boom"), At(1700), Crash("a".into(), "boom"), Stop],
            ),
            1,
        ),
        s(
            "rest_for_one_restart_failure",
            "rest_for_one",
            10,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "5000"), c("c", "transient", "5000")],
            f(&[("c", &[2, 3])]),
            vec![Crash("b".into(), "killed"), Crash("a".into(), "boom"), Stop],
        ),
        s(
            "retries_exceed_the_intensity",
            "one_for_one",
            2,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "5000")],
            f(&[("b", &[2, 3, 4, 5])]),
            vec![Crash("b".into(), "boom"), Stop],
        ),
        s(
            "transient_shutdown_term_is_not_restarted",
            "one_for_all",
            5,
            vec![c("a", "transient", "5000"), c("b", "permanent", "5000")],
            f(&[]),
            vec![Crash("a".into(), "shutdown_term"), Crash("b".into(), "shutdown_term"), Stop],
        ),
        s(
            "already_started_and_already_present",
            "one_for_one",
            5,
            vec![c("a", "permanent", "5000")],
            f(&[]),
            vec![
                StartChild(c("a", "temporary", "5000")),
                Terminate("a".into()),
                StartChild(c("a", "permanent", "5000")),
                Restart("a".into()),
                Restart("a".into()),
                Delete("a".into()),
                Delete("a".into()),
                StartChild(c("a", "temporary", "brutal")),
                Crash("a".into(), "boom"),
                Terminate("a".into()),
                Stop,
            ],
        ),
        s(
            "temporary_siblings_are_dropped_by_a_group_restart",
            "rest_for_one",
            5,
            vec![c("a", "permanent", "5000"), c("b", "temporary", "5000"), c("c", "permanent", "brutal")],
            f(&[]),
            vec![StartChild(c("d", "temporary", "infinity")), Crash("a".into(), "normal"), Stop],
        ),
        s(
            "a_failing_start_fails_the_supervisor",
            "one_for_one",
            1,
            vec![c("a", "permanent", "5000"), c("b", "permanent", "5000"), c("c", "permanent", "5000")],
            f(&[("b", &[1])]),
            vec![Stop],
        ),
        s(
            "ignore_at_start_in_start_child_and_in_restarts",
            "one_for_all",
            10,
            vec![c("a", "permanent", "5000"), c("b", "transient", "5000"), c("c", "temporary", "5000")],
            ig(&[("a", &[1]), ("b", &[2]), ("c", &[1]), ("d", &[1, 2])]),
            vec![
                Restart("a".into()),
                StartChild(c("d", "permanent", "5000")),
                Restart("d".into()),
                StartChild(c("e", "temporary", "5000")),
                Crash("a".into(), "boom"),
                Crash("b".into(), "boom"),
                Stop,
            ],
        ),
        s(
            "a_child_supervisor_that_gives_up_escalates",
            "one_for_one",
            3,
            vec![
                c("a", "permanent", "5000"),
                Child {
                    id: "s".into(),
                    restart: "permanent",
                    shutdown: "infinity",
                    nested: Some(Nested {
                        strategy: "one_for_all",
                        intensity: 1,
                        children: vec![c("x", "permanent", "5000"), c("y", "transient", "brutal")],
                    }),
                },
                c("b", "permanent", "5000"),
            ],
            f(&[("y", &[3])]),
            vec![
                Crash("x".into(), "boom"),
                Crash("y".into(), "boom"),
                Crash("x".into(), "killed"),
                Terminate("s".into()),
                Restart("s".into()),
                Stop,
            ],
        ),
        s(
            "intensity_zero",
            "one_for_one",
            0,
            vec![c("a", "permanent", "5000"), c("b", "transient", "brutal")],
            f(&[]),
            vec![Crash("b".into(), "normal"), Crash("a".into(), "shutdown"), Stop],
        ),
    ]
}
