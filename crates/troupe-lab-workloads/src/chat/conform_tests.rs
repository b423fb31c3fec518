//! Each chat rule on hand-made traces: the base trace (one chat of two clients, one kill at
//! 1,200 ms of a 3 s window, both clients detecting and rejoining) satisfies every rule; each
//! test breaks one rule and checks the FAIL names the offending event.

use troupe_lab::config::Config;
use troupe_lab::conform::{Scenario, Trace, Verdict};
use troupe_lab::events::{parse_line, Event};
use troupe_lab::schedule::FaultAction;

use super::super::config::ChatConfig;
use super::super::schedule::chat_schedule;
use super::rules;

/// The window's start in the base trace.
const S: i64 = 10_000_000;

fn config(sets: &[&str]) -> Config {
    let mut b = crate::registry().builder("chat").unwrap();
    for s in [
        "num_supervisor=1",
        "chats_per_sup=1",
        "clients_per_server=2",
        "test_duration_secs=3",
        "warmup_s=1",
        "fault_pause_ms=1200",
        "fault_phase=aligned",
        "msg_type=kill",
        "deployment=single",
        "send_interval_ms=100",
        "retry_max=3",
    ]
    .iter()
    .chain(sets)
    {
        b.apply_set(s);
    }
    b.build().unwrap()
}

/// One event line.
fn line(ts: i64, node: &str, ev: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(r#"{{"ts_us":{ts},"run":"r","rt":"x","node":"{node}","ev":"{ev}"{sep}{fields}}}"#)
}

/// The base trace: every rule passes or is n/a on it. With the fault at 2,400 ms of the
/// schedule (a 3 s window at a 1,200 ms pause has two), the second is counted skipped.
fn base() -> Vec<String> {
    let n = "chat";
    vec![
        line(S - 1_500_000, n, "ready", r#""what":"chats","count":1"#),
        line(S - 1_000_000, n, "ready", r#""what":"clients","count":2"#),
        line(S - 999_000, n, "ready", &format!(r#""what":"window","count":3,"start_us":{S}"#)),
        // 2 clients x 2 members x 10 posts/s.
        line(S + 1_000_100, n, "throughput", r#""second":0,"count":40"#),
        line(S + 1_200_500, n, "fault_injected", r#""id":"f-0","target":"chat-0","kind":"kill""#),
        line(S + 1_201_000, n, "restarted", r#""target":"chat-0","attempt":1"#),
        line(S + 1_201_200, n, "fault_detected", r#""id":null,"target":"chat-0","by":"c0""#),
        line(S + 1_201_300, n, "fault_detected", r#""id":null,"target":"chat-0","by":"c1""#),
        line(S + 1_201_700, n, "reconnected", r#""target":"chat-0","by":"c0","ms":0.5"#),
        line(S + 1_251_300, n, "reconnected", r#""target":"chat-0","by":"c1","ms":50.0"#),
        line(S + 2_000_100, n, "throughput", r#""second":1,"count":35"#),
        line(S + 3_000_100, n, "throughput", r#""second":2,"count":40"#),
        line(S + 3_001_000, n, "run_finished", r#""dropped_events":0,"errors":0,"skipped_faults":1"#),
    ]
}

fn events(lines: &[String]) -> Vec<Event> {
    let mut evs: Vec<Event> = lines.iter().map(|l| parse_line(l).unwrap()).collect();
    evs.sort_by_key(|e| e.ts_us);
    evs
}

fn judge_with(id: &str, cfg: &Config, lines: &[String]) -> Verdict {
    let sched: Vec<FaultAction> = chat_schedule(&ChatConfig::from_config(cfg));
    let evs = events(lines);
    let sc = Scenario::new("test", &[]);
    let rule = rules().into_iter().find(|r| r.id == id).unwrap();
    (rule.check)(&Trace::new(cfg, &evs, &sched, &sc))
}

fn judge(id: &str, lines: &[String]) -> Verdict {
    judge_with(id, &config(&[]), lines)
}

/// `lines` with the line containing `needle` replaced by `with` (removed when `with` is None).
fn edit(lines: &[String], needle: &str, with: Option<String>) -> Vec<String> {
    let i = lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle}"));
    let mut out = lines.to_vec();
    match with {
        Some(w) => out[i] = w,
        None => {
            out.remove(i);
        }
    }
    out
}

fn with_line(lines: &[String], extra: String) -> Vec<String> {
    let mut out = lines.to_vec();
    out.push(extra);
    out
}

/// Asserts a FAIL whose evidence contains every one of `parts`.
fn assert_fail(v: Verdict, parts: &[&str]) {
    match v {
        Verdict::Fail { evidence } => {
            for p in parts {
                assert!(evidence.contains(p), "evidence {evidence:?} lacks {p:?}");
            }
        }
        other => panic!("expected FAIL with {parts:?}, got {other}"),
    }
}

#[test]
fn the_base_trace_passes_every_rule_or_is_na() {
    let schedule = chat_schedule(&ChatConfig::from_config(&config(&[])));
    assert_eq!(schedule.len(), 2, "{schedule:?}");
    for r in rules() {
        let v = judge(r.id, &base());
        let na = ["chat.2", "chat.3", "chat.4b", "chat.6c"];
        assert_eq!(v.label(), if na.contains(&r.id) { "n/a" } else { "PASS" }, "{}: {v}", r.id);
    }
    assert_eq!(judge("chat.2", &base()), Verdict::na(troupe_lab::conform::NOT_OBSERVABLE));
}

#[test]
fn rule_1_a_client_process_receiving_more_than_its_chats_can_post_fails() {
    // 2 clients x 2 members x 10 posts/s = 40/s, for the 4.5 s since the process's first event
    // plus one send tick: 184 broadcasts at most; the window's 40, 35, 40 are below.
    let over =
        edit(&base(), r#""second":0"#, Some(line(S + 1_000_100, "chat", "throughput", r#""second":0,"count":150"#)));
    assert_fail(
        judge("chat.1", &over),
        &["node chat received 225 broadcasts", "4.500 s", "184 with one send tick", "ev=throughput second=2"],
    );
    // A stalled second followed by the catch-up is within the bound; so is a shortfall.
    let catch_up =
        edit(&base(), r#""second":0"#, Some(line(S + 1_000_100, "chat", "throughput", r#""second":0,"count":100"#)));
    assert_eq!(judge("chat.1", &catch_up), Verdict::Pass);
    let short =
        edit(&base(), r#""second":0"#, Some(line(S + 1_000_100, "chat", "throughput", r#""second":0,"count":20"#)));
    assert_eq!(judge("chat.1", &short), Verdict::Pass);
    assert_eq!(judge_with("chat.1", &config(&["test_type=detection_time"]), &base()).label(), "n/a");
}

#[test]
fn rule_4a_a_detection_never_rejoined_fails_unless_in_the_last_second() {
    let lost = edit(&base(), r#""reconnected","target":"chat-0","by":"c1""#, None);
    assert_fail(judge("chat.4a", &lost), &["[node=chat ts_us=11201300 ev=fault_detected target=chat-0 by=c1]"]);
    // The same detection 0.5 s before the window's end is open at the end, not a failure.
    let late = edit(
        &lost,
        r#""by":"c1""#,
        Some(line(S + 2_500_000, "chat", "fault_detected", r#""target":"chat-0","by":"c1""#)),
    );
    assert_eq!(judge("chat.4a", &late).label(), "PASS");
    let gave_up = with_line(&lost, line(S + 1_400_000, "chat", "gave_up", r#""target":"chat-0","by":"c1","tries":3"#));
    assert_eq!(judge("chat.4a", &gave_up).label(), "PASS");
}

#[test]
fn rule_4b_giving_up_early_or_coming_back_fails() {
    let lost = edit(&base(), r#""reconnected","target":"chat-0","by":"c1""#, None);
    let gave_up =
        |tries: u32| line(S + 1_400_000, "chat", "gave_up", &format!(r#""target":"chat-0","by":"c1","tries":{tries}"#));
    assert_eq!(judge("chat.4b", &with_line(&lost, gave_up(3))), Verdict::Pass);
    assert_fail(
        judge("chat.4b", &with_line(&lost, gave_up(2))),
        &["ev=gave_up", "by=c1", "after 2 tries, retry_max is 3"],
    );
    let back = with_line(&base(), line(S + 1_240_000, "chat", "gave_up", r#""target":"chat-0","by":"c1","tries":3"#));
    assert_fail(judge("chat.4b", &back), &["ev=reconnected target=chat-0 by=c1", "rejoined after giving up"]);
}

#[test]
fn rule_5a_restart_attempts_that_do_not_count_up_fail() {
    let two =
        edit(&base(), "restarted", Some(line(S + 1_201_000, "chat", "restarted", r#""target":"chat-0","attempt":2"#)));
    assert_fail(judge("chat.5a", &two), &["ev=restarted target=chat-0 attempt=2", "should have attempt 1"]);
}

#[test]
fn rule_5b_a_restart_before_its_fault_or_none_at_all_fails() {
    let early =
        edit(&base(), "restarted", Some(line(S + 1_100_000, "chat", "restarted", r#""target":"chat-0","attempt":1"#)));
    assert_fail(judge("chat.5b", &early), &["restart 1 precedes its fault", "ts_us=11100000 ev=restarted"]);
    let none = edit(&base(), "restarted", None);
    assert_fail(judge("chat.5b", &none), &["ev=fault_injected id=f-0", "never followed by a restart"]);
    // A second fault that hit the incarnation already dead (one restart for two faults) passes.
    let twice = with_line(
        &base(),
        line(S + 1_200_900, "chat", "fault_injected", r#""id":"f-1","target":"chat-0","kind":"kill""#),
    );
    assert_eq!(judge("chat.5b", &twice), Verdict::Pass);
    let unprovoked = with_line(&base(), line(S + 1_500_000, "chat", "restarted", r#""target":"chat-0","attempt":2"#));
    assert_fail(judge("chat.5b", &unprovoked), &["restart 2 with no crashing fault before it", "attempt=2"]);
}

#[test]
fn rule_6a_a_fault_neither_injected_nor_skipped_fails() {
    let gone = edit(&base(), "fault_injected", None);
    assert_fail(judge("chat.6a", &gone), &["1 of 2 planned faults", "id=f-0 at_ms=1200"]);
}

#[test]
fn rule_6b_an_early_fault_or_one_on_the_wrong_chat_fails_a_late_one_does_not() {
    let early = edit(
        &base(),
        "fault_injected",
        Some(line(S + 1_100_000, "chat", "fault_injected", r#""id":"f-0","target":"chat-0","kind":"kill""#)),
    );
    assert_fail(judge("chat.6b", &early), &["ev=fault_injected id=f-0", "100 ms before its instant"]);
    // Late is what a loaded machine does: not judged.
    let late = edit(
        &base(),
        "fault_injected",
        Some(line(S + 2_500_000, "chat", "fault_injected", r#""id":"f-0","target":"chat-0","kind":"kill""#)),
    );
    assert_eq!(judge("chat.6b", &late), Verdict::Pass);
    let wrong = edit(
        &base(),
        "fault_injected",
        Some(line(S + 1_200_500, "chat", "fault_injected", r#""id":"f-0","target":"chat-1","kind":"kill""#)),
    );
    assert_fail(judge("chat.6b", &wrong), &["target=chat-1", "should hit chat-0 with kill"]);
}

#[test]
fn rule_6c_an_injector_away_from_the_chats_first_client_fails() {
    let cfg = config(&["deployment=distributed", "clients_per_process=1"]);
    // The clients on two processes; the chat's first client, c0, on clients-0.
    let moved = |inj: &str| -> Vec<String> {
        base()
            .into_iter()
            .map(|l| {
                let node = if l.contains(r#""by":"c1""#) {
                    "clients-1"
                } else if l.contains(r#""by":"c0""#) {
                    "clients-0"
                } else if l.contains("fault_injected") {
                    inj
                } else {
                    "discovery"
                };
                l.replace(r#""node":"chat""#, &format!(r#""node":"{node}""#))
            })
            .collect()
    };
    assert_eq!(judge_with("chat.6c", &cfg, &moved("clients-0")), Verdict::Pass);
    assert_fail(judge_with("chat.6c", &cfg, &moved("discovery")), &["node=discovery", "c0 is on node clients-0"]);
}

#[test]
fn rule_6d_a_fault_skipped_on_a_chat_never_hurt_fails() {
    // The base trace skips f-1 (2,400 ms) after f-0 killed the chat: allowed.
    assert_eq!(judge("chat.6d", &base()), Verdict::Pass);
    // Without f-0 carried out, f-1's chat had never been hurt: it was registered.
    let gone = edit(&base(), "fault_injected", None);
    assert_fail(judge("chat.6d", &gone), &["fault id=f-0 at_ms=1200 on chat-0 was not carried out"]);
}

#[test]
fn rule_7a_a_joined_client_without_its_detection_fails() {
    let missed = edit(
        &edit(&base(), r#""fault_detected","id":null,"target":"chat-0","by":"c1""#, None),
        r#""reconnected","target":"chat-0","by":"c1""#,
        None,
    );
    assert_fail(judge("chat.7a", &missed), &["client c1, joined to chat-0", "ev=fault_injected id=f-0"]);
    // A detection late enough to come after the chat's next fault still counts (a stalled
    // process); a fault in the window's last second is due none.
    let late = edit(
        &base(),
        r#""fault_detected","id":null,"target":"chat-0","by":"c1""#,
        Some(line(S + 2_500_000, "chat", "fault_detected", r#""target":"chat-0","by":"c1""#)),
    );
    assert_eq!(
        judge(
            "chat.7a",
            &with_line(
                &late,
                line(S + 2_400_000, "chat", "fault_injected", r#""id":"f-1","target":"chat-0","kind":"kill""#)
            )
        ),
        Verdict::Pass
    );
    let last_second = with_line(
        &base(),
        line(S + 2_100_000, "chat", "fault_injected", r#""id":"f-1","target":"chat-0","kind":"kill""#),
    );
    assert_eq!(judge("chat.7a", &last_second), Verdict::Pass);
}

#[test]
fn rule_7b_a_rejoin_without_a_detection_fails() {
    let extra =
        with_line(&base(), line(S + 1_800_000, "chat", "reconnected", r#""target":"chat-0","by":"c0","ms":1.0"#));
    assert_fail(judge("chat.7b", &extra), &["ts_us=11800000 ev=reconnected target=chat-0 by=c0", "no open detection"]);
}

#[test]
fn rule_7c_a_missing_or_early_second_fails() {
    let missing = edit(&base(), r#""second":1"#, None);
    assert_fail(judge("chat.7c", &missing), &["second=2", "should be second 1"]);
    let early =
        edit(&base(), r#""second":0"#, Some(line(S + 900_000, "chat", "throughput", r#""second":0,"count":40"#)));
    assert_fail(judge("chat.7c", &early), &["second=0", "100 ms before its second ends"]);
    let stranger = with_line(&base(), line(S + 1_000_200, "server-0", "throughput", r#""second":0,"count":1"#));
    assert_fail(judge("chat.7c", &stranger), &["node=server-0", "holds no clients"]);
}

#[test]
fn rule_8a_a_detection_before_its_fault_fails() {
    let early = edit(
        &base(),
        r#""fault_detected","id":null,"target":"chat-0","by":"c0""#,
        Some(line(S + 1_100_000, "chat", "fault_detected", r#""target":"chat-0","by":"c0""#)),
    );
    assert_fail(judge("chat.8a", &early), &["ts_us=11100000 ev=fault_detected target=chat-0 by=c0"]);
}

#[test]
fn rule_8b_reconnection_times_not_from_the_detection_fail_a_few_outliers_do_not() {
    // Ten clients of one chat rejoining 20 ms after detecting; `ms_of(i)` is what client i says.
    let trace = |ms_of: &dyn Fn(usize) -> f64| -> Vec<String> {
        let mut l = base();
        for i in 2..12 {
            let by = format!(r#""target":"chat-0","by":"c{i}""#);
            l.push(line(S + 1_300_000 + i as i64, "chat", "fault_detected", &by));
            l.push(line(S + 1_320_000 + i as i64, "chat", "reconnected", &format!(r#"{by},"ms":{}"#, ms_of(i))));
        }
        l
    };
    assert_eq!(judge("chat.8b", &trace(&|_| 20.0)), Verdict::Pass);
    // Five of twelve off (threads kept from stamping during a stall) pass.
    assert_eq!(judge("chat.8b", &trace(&|i| if i < 7 { 1800.0 } else { 20.0 })), Verdict::Pass);
    // Most measured from another origin fail, naming the worst.
    assert_fail(
        judge("chat.8b", &trace(&|i| if i == 5 { 120.0 } else { 70.0 })),
        &["10 of 12 rejoins", "by 100.0 ms", "by=c5 ms=120]", "ev=fault_detected target=chat-0 by=c5"],
    );
}

#[test]
fn rule_8c_a_window_opened_before_the_warm_up_fails() {
    let soon = edit(
        &base(),
        r#""what":"window""#,
        Some(line(S - 999_000, "chat", "ready", &format!(r#""what":"window","count":3,"start_us":{}"#, S - 500_000))),
    );
    assert_fail(judge("chat.8c", &soon), &["500 ms before warmup_s (1)", "what=clients"]);
    let two =
        with_line(&base(), line(S - 998_000, "chat", "ready", &format!(r#""what":"window","count":3,"start_us":{S}"#)));
    assert_fail(judge("chat.8c", &two), &["two window events"]);
}
