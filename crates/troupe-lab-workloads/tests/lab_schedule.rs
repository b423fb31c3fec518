//! Fault schedules: determinism (same seed, same bytes), the realised kill rate, burst and
//! uniform shapes, targets, and progressive kills that never hit a dead pair twice.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;
use troupe_lab::schedule::to_jsonl;
use troupe_lab_workloads::scp::config::ScpConfig;
use troupe_lab_workloads::scp::schedule::{scp_schedule, PROGRESSIVE_STEP_MS};

fn cfg(sets: &[String]) -> ScpConfig {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    ScpConfig::from_config(&b.build().unwrap())
}

fn pairs_and_sups() -> impl Strategy<Value = (u32, u32)> {
    (0u32..5, 0u32..5).prop_map(|(a, b)| {
        let sups = 1 << a;
        (sups << b, sups)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn same_seed_same_bytes(seed in 0u64..1_000_000, (pairs, sups) in pairs_and_sups(),
                            pat in prop::sample::select(vec!["uniform", "burst", "random"]),
                            rate in 0.5f64..20.0) {
        let sets = vec![format!("seed={seed}"), format!("pairs={pairs}"), format!("supervisors={sups}"),
                        format!("pattern={pat}"), format!("failure_rate={rate}"), "duration_s=7".into(),
                        "burst_size=1".into(), "random_burst_max=1".into()];
        let a = to_jsonl(&scp_schedule(&cfg(&sets)));
        let b = to_jsonl(&scp_schedule(&cfg(&sets)));
        prop_assert_eq!(&a, &b);
        let mut other = sets.clone();
        other[0] = format!("seed={}", seed + 1);
        let c = to_jsonl(&scp_schedule(&cfg(&other)));
        // Targets are random, so another seed gives another schedule (unless one slot per group).
        if pairs / sups > 1 && !a.is_empty() && a.lines().count() > 8 {
            prop_assert_ne!(a, c);
        }
    }

    #[test]
    fn realised_kill_rate_matches(seed in 0u64..1_000_000, pat in prop::sample::select(vec!["uniform", "burst", "random"]),
                                  rate in 0.1f64..20.0, dur in 1u64..30, basis in prop::sample::select(vec!["exchanges", "pairs"]),
                                  delay in prop::sample::select(vec![50u64, 200, 1000])) {
        let c = cfg(&[format!("seed={seed}"), format!("pattern={pat}"), format!("failure_rate={rate}"),
                      format!("duration_s={dur}"), format!("failure_basis={basis}"), format!("delay_ms={delay}")]);
        let s = scp_schedule(&c);
        let wanted = c.kill_rate();
        let expected_rate = if basis == "exchanges" { rate / 100.0 * 1024.0 * 1000.0 / delay as f64 } else { 1024.0 * rate / 100.0 };
        prop_assert!((wanted - expected_rate).abs() < 1e-9);
        let realised = s.len() as f64 / dur as f64;
        // N = round(rate * D): off by at most half a kill over the window.
        prop_assert!((realised - wanted).abs() <= 0.5 / dur as f64 + 1e-9, "realised {} wanted {}", realised, wanted);
        prop_assert!(s.iter().all(|a| a.at_ms < dur * 1000 && a.restart && a.kind == "kill"));
        prop_assert!(s.windows(2).all(|w| w[0].at_ms <= w[1].at_ms), "time order");
        prop_assert!(s.iter().all(|a| a.group < c.supervisors && a.slot < c.pairs_per_supervisor()));
        for (i, a) in s.iter().enumerate() {
            prop_assert_eq!(&a.id, &format!("f-{i}"));
            prop_assert_eq!(a.group, (i as u32) % c.supervisors, "round-robin groups");
        }
    }

    #[test]
    fn progressive_never_targets_a_dead_pair(seed in 0u64..1_000_000, (pairs, sups) in pairs_and_sups(),
                                             rate in 1.0f64..20.0, dur in 5u64..200) {
        let c = cfg(&[format!("seed={seed}"), format!("pairs={pairs}"), format!("supervisors={sups}"),
                      "pattern=progressive".into(), "recovery=false".into(), format!("failure_rate={rate}"),
                      format!("duration_s={dur}")]);
        let s = scp_schedule(&c);
        let mut dead = HashSet::new();
        for a in &s {
            prop_assert!(!a.restart);
            prop_assert!(dead.insert((a.group, a.slot)), "pair g{}/s{} targeted twice", a.group, a.slot);
            prop_assert_eq!(a.at_ms % PROGRESSIVE_STEP_MS, 0);
            prop_assert!(a.at_ms >= PROGRESSIVE_STEP_MS && a.at_ms < dur * 1000);
        }
        let per_step = ((pairs as f64 * rate / 100.0).round() as usize).max(1);
        let mut steps: BTreeMap<u64, usize> = BTreeMap::new();
        for a in &s { *steps.entry(a.at_ms).or_default() += 1; }
        let n_steps = ((dur * 1000 - 1) / PROGRESSIVE_STEP_MS) as usize;
        let expect_total = (per_step * n_steps).min(pairs as usize);
        prop_assert_eq!(s.len(), expect_total);
        for (i, (_, n)) in steps.iter().enumerate() {
            let left = pairs as usize - per_step * i;
            prop_assert_eq!(*n, per_step.min(left));
        }
    }
}

#[test]
fn uniform_is_evenly_spaced_and_burst_is_grouped() {
    let u = scp_schedule(&cfg(&["pattern=uniform".into(), "duration_s=2".into()]));
    assert_eq!(u.len(), 512);
    assert_eq!((u[0].at_ms, u[1].at_ms, u[256].at_ms), (0, 3, 1000));
    let b = scp_schedule(&cfg(&["pattern=burst".into(), "duration_s=2".into()]));
    let mut groups: BTreeMap<u64, usize> = BTreeMap::new();
    for a in &b {
        *groups.entry(a.at_ms).or_default() += 1;
    }
    // 512 kills in bursts of 25: 20 full bursts and one of 12, one every 25/256 s.
    assert_eq!(groups.len(), 21);
    assert_eq!(groups.values().filter(|&&n| n == 25).count(), 20);
    assert_eq!(groups.keys().nth(1), Some(&97));
}

#[test]
fn random_mixes_singles_and_bursts() {
    let r = scp_schedule(&cfg(&["pattern=random".into(), "duration_s=10".into()]));
    let mut groups: BTreeMap<u64, usize> = BTreeMap::new();
    for a in &r {
        *groups.entry(a.at_ms).or_default() += 1;
    }
    assert_eq!(r.len(), 2560);
    assert!(groups.values().any(|&n| n == 1));
    assert!(groups.values().any(|&n| n >= 5));
    assert!(groups.values().all(|&n| n <= 20), "two events may share a ms, never more");
}

#[test]
fn no_faults_when_baseline() {
    assert!(scp_schedule(&cfg(&["pattern=none".into()])).is_empty());
    assert!(scp_schedule(&cfg(&["pattern=burst".into(), "failure_rate=0".into()])).is_empty());
}

/// Rule 7: no two kills of one instant hit the same server while the group has a free slot, and
/// a clash is resolved without drawing more from the PRNG (the kills after it are unchanged).
#[test]
fn one_instant_never_kills_one_server_twice() {
    // One supervisor: every kill of a burst lands in group 0, where a draw with replacement
    // clashes almost surely (25 draws from 128 slots).
    for seed in 0..20u64 {
        for pattern in ["burst", "random"] {
            let s = scp_schedule(&cfg(&[
                format!("seed={seed}"),
                format!("pattern={pattern}"),
                "supervisors=1".into(),
                "pairs=128".into(),
                "duration_s=4".into(),
            ]));
            assert!(!s.is_empty());
            let mut seen = HashSet::new();
            for a in &s {
                assert!(
                    seen.insert((a.at_ms, a.group, a.slot)),
                    "seed {seed} {pattern}: server {}/{} killed twice at {} ms",
                    a.group,
                    a.slot,
                    a.at_ms
                );
            }
        }
    }
}

/// Rule 7's limit: an instant with more kills for a group than it has slots takes every slot
/// once before any twice.
#[test]
fn an_instant_with_more_kills_than_slots_spreads_them_evenly() {
    let s = scp_schedule(&cfg(&[
        "pattern=burst".into(),
        "supervisors=1".into(),
        "pairs=8".into(),
        "burst_size=20".into(),
        "failure_rate=20".into(),
        "duration_s=10".into(),
    ]));
    let mut per: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for a in &s {
        *per.entry((a.at_ms, a.slot)).or_default() += 1;
    }
    let first = s[0].at_ms;
    let counts: Vec<usize> = per.iter().filter(|((t, _), _)| *t == first).map(|(_, &n)| n).collect();
    assert_eq!(counts.len(), 8, "all 8 slots hit in the first burst");
    assert!(counts.iter().all(|&n| n == 2 || n == 3), "20 kills over 8 slots: {counts:?}");
}
