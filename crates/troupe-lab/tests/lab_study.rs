//! The study format of the core (`troupe_lab::study`) on the core's own workload
//! ([`troupe_lab::testkit::Noop`]): rule 1 (every problem of a file at once, each naming file,
//! figure and key), rule 3 (a `missing:` status), rule 4 (the quick profile replaces keys),
//! rule 5 (the estimate from the grid), rule 8 (`skip`) and rule 6 (the verdicts of each check kind; a check no
//! cell of a profile can meet is refused).

use std::time::Duration;

use serde_json::json;
use troupe_lab::registry::Registry;
use troupe_lab::study::{self, Cell, RUN_OVERHEAD};
use troupe_lab::testkit::Noop;

const GOOD: &str = r#"
study = "demo"
seed = "999"
title = "A demo"
[profiles]
quick = "one point"
full = "three points"

[[figure]]
id = "fig1"
title = "ticks"
section = "§1"
workload = "noop"
runtimes = ["troupe", "erlang"]
reps = 2
plot = "line"
x = "ticks"
y = "ticks"
grid = { ticks = [1, 2, 3] }
quick = { runtimes = ["troupe"], reps = 1, grid = { ticks = [1, 3] } }
[[figure.statement]]
text = "more ticks count more"
check = { kind = "greater", metric = "ticks", a = { ticks = 3 }, b = { ticks = 1 } }

[[figure]]
id = "fig2"
title = "not yet"
section = "§2"
workload = "noop"
plot = "bar"
x = "ticks"
y = "ticks"
status = "missing: a knob"
"#;

fn reg() -> Registry {
    Registry::new(vec![&Noop])
}

#[test]
fn rules_4_5_profiles_and_estimates_come_from_the_grid() {
    let s = study::load(&reg(), GOOD, "demo.toml").unwrap();
    let fig = s.figure("fig1").unwrap();
    let full = s.plan(&reg(), fig, "full").unwrap();
    assert_eq!((full.configs.len(), full.runtimes.len(), full.reps, full.runs()), (3, 2, 2, 12));
    // Noop expects 5 s a run.
    assert_eq!(full.estimate(), (Duration::from_secs(5) + RUN_OVERHEAD) * 12);
    let quick = s.plan(&reg(), fig, "quick").unwrap();
    assert_eq!((quick.runs(), quick.sets.clone()), (2, vec!["ticks=1,3".to_string()]));
    assert!(s.study.figures[0].runnable() && !s.study.figures[1].runnable());
    let e = s.figure("fig3").unwrap_err().to_string();
    assert!(e.contains("fig1, fig2"), "{e}");
}

#[test]
fn rule_1_every_problem_of_a_file_at_once() {
    let bad = GOOD
        .replace("plot = \"bar\"", "plot = \"pie\"")
        .replace("status = \"missing: a knob\"", "status = \"later\"")
        .replace("grid = { ticks = [1, 3] }", "grid = { ticks = [-1] }")
        .replace("a = { ticks = 3 }", "a = { tocks = 3 }");
    let e = study::load(&reg(), &bad, "demo.toml").unwrap_err().to_string();
    for needle in [
        "demo.toml: figure fig2: plot = pie",
        "demo.toml: figure fig2: status = later",
        "demo.toml: figure fig1: grid.ticks (profile quick) = -1",
        "demo.toml: figure fig1: statement[0].check.tocks",
    ] {
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    let e = study::load(&reg(), "study = 3", "demo.toml").unwrap_err().to_string();
    assert!(e.contains("demo.toml = (file): not a study file"), "{e}");
}

#[test]
fn rule_6_a_check_no_cell_of_a_profile_can_meet_is_refused_unless_it_names_a_runtime_not_run() {
    // The quick grid has only ticks = 2: "3 against 1" could never get a verdict there.
    let bad = GOOD.replace("grid = { ticks = [1, 3] }", "grid = { ticks = [2] }");
    let e = study::load(&reg(), &bad, "demo.toml").unwrap_err().to_string();
    for needle in [
        "demo.toml: figure fig1: statement[0].check.a (profile quick) = ticks = 3: no cell of the quick profile's grid",
        "statement[0].check.b (profile quick) = ticks = 1",
    ] {
        assert!(e.contains(needle), "{needle:?} not in {e}");
    }
    // The same check on a runtime quick does not run reads `no data` there by design: accepted.
    let peer = bad.replace("a = { ticks = 3 }", "a = { ticks = 3, runtime = \"erlang\" }");
    assert!(study::load(&reg(), &peer, "demo.toml").is_ok());
}

fn cell(ticks: i64, runtime: &str, value: f64) -> Cell {
    Cell { runtime: runtime.into(), config: json!({ "ticks": ticks }), summary: json!({ "n": { "v": value } }) }
}

#[test]
fn rule_6_each_check_kind_judges_the_mean_of_its_cells() {
    let check = |kind: &str, extra: &str| -> study::Check {
        toml::from_str(&format!("kind = \"{kind}\"\nmetric = \"n.v\"\na = {{ ticks = 3 }}\nb = {{ ticks = 1, runtime = \"troupe\" }}\n{extra}"))
            .unwrap()
    };
    // Two runs of a (mean 30), one of b (20).
    let cells = [cell(3, "troupe", 20.0), cell(3, "troupe", 40.0), cell(1, "troupe", 20.0), cell(1, "erlang", 99.0)];
    assert_eq!(study::verdict(Some(&check("greater", "")), &cells).word, "agrees");
    assert_eq!(study::verdict(Some(&check("less", "")), &cells).word, "disagrees");
    let v = study::verdict(Some(&check("ratio", "min = 1.4\nmax = 1.6")), &cells);
    assert_eq!((v.word, v.measured.as_str()), ("agrees", "a = 30.0000; b = 20.0000; a/b = 1.5000"));
    assert_eq!(study::verdict(Some(&check("ratio", "min = 2.0\nmax = 3.0")), &cells).word, "disagrees");
    assert_eq!(study::verdict(Some(&check("greater", "")), &cells[..2]).word, "no data");
}

/// Rule 6: a check that names no runtime states a shape, judged on each runtime's own cells
/// (never on a mean across runtimes), agreeing only where every runtime with both cells agrees.
#[test]
fn rule_6_a_shape_is_judged_per_runtime() {
    let check: study::Check =
        toml::from_str("kind = \"greater\"\nmetric = \"n.v\"\na = { ticks = 3 }\nb = { ticks = 1 }").unwrap();
    // troupe: 30 > 20; erlang: 5 < 8. A mean over both (17.5 > 14) would say "agrees".
    let cells = [cell(3, "troupe", 30.0), cell(1, "troupe", 20.0), cell(3, "erlang", 5.0), cell(1, "erlang", 8.0)];
    let v = study::verdict(Some(&check), &cells);
    assert_eq!(v.word, "disagrees");
    assert!(
        v.measured.contains("erlang (disagrees): a = 5.0000") && v.measured.contains("troupe (agrees)"),
        "{}",
        v.measured
    );
    let both = [cell(3, "troupe", 30.0), cell(1, "troupe", 20.0), cell(3, "erlang", 9.0), cell(1, "erlang", 8.0)];
    assert_eq!(study::verdict(Some(&check), &both).word, "agrees");
    // A runtime with only one of the cells is left out; one runtime alone reads as before.
    let v = study::verdict(Some(&check), &cells[..3]);
    assert_eq!((v.word, v.measured.as_str()), ("agrees", "troupe (agrees): a = 30.0000; b = 20.0000; a/b = 1.5000"));
    assert_eq!(study::verdict(Some(&check), &cells[..2]).measured, "a = 30.0000; b = 20.0000; a/b = 1.5000");
}

/// Rule 8: `skip` takes (runtime, cell) pairs out of the plan's runs and estimate; a skip naming
/// a key the figure does not set is refused.
#[test]
fn rule_8_skip_leaves_out_the_pairs_a_runtime_cannot_run() {
    let with_skip = GOOD.replace(
        "reps = 2\nplot = \"line\"",
        "reps = 2\nskip = [{ runtime = \"erlang\", ticks = 3 }]\nplot = \"line\"",
    );
    let s = study::load(&reg(), &with_skip, "demo.toml").unwrap();
    let full = s.plan(&reg(), s.figure("fig1").unwrap(), "full").unwrap();
    // 3 cells x 2 runtimes, less erlang at ticks = 3, x 2 repetitions.
    assert_eq!(full.runs(), 10);
    assert_eq!(full.estimate(), (Duration::from_secs(5) + RUN_OVERHEAD) * 10);
    assert!(full.skips("erlang", &json!({ "ticks": 3 })) && !full.skips("troupe", &json!({ "ticks": 3 })));
    let bad = GOOD.replace(
        "reps = 2\nplot = \"line\"",
        "reps = 2\nskip = [{ runtime = \"erlang\", tocks = 3 }]\nplot = \"line\"",
    );
    let e = study::load(&reg(), &bad, "demo.toml").unwrap_err().to_string();
    assert!(e.contains("demo.toml: figure fig1: skip[0] = runtime, tocks: a skip picks cells"), "{e}");
}
