//! The committed study files (`studies/*.toml`, troupe-lab's `study` rules 1-5): every file
//! parses and validates, every figure names a registered workload and a known plot, every
//! runnable figure has an estimate for both profiles, and a malformed file's error names the
//! file, the figure and the key.

use troupe_lab::study::{self, PROFILES};
use troupe_lab_workloads::{registry, studies};

#[test]
fn rule_1_every_study_file_parses_and_validates() {
    let all = studies::all().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), studies::FILES.len());
    for s in &all {
        assert!(!s.study.figures.is_empty(), "{} lists no figure", s.origin);
        assert_eq!(format!("{}.toml", s.study.study), s.origin, "a study is named as its file");
        for p in PROFILES {
            assert!(s.study.profiles.contains_key(*p), "{} does not state its {p} profile", s.origin);
        }
    }
}

#[test]
fn rule_2_every_figure_names_a_registered_workload_and_has_both_profiles() {
    let reg = registry();
    for s in studies::all().unwrap() {
        for fig in &s.study.figures {
            assert!(reg.get(&fig.workload).is_ok(), "{} {}: {}", s.origin, fig.id, fig.workload);
            assert!(study::PLOTS.contains(&fig.plot.as_str()), "{} {}", s.origin, fig.id);
            for p in PROFILES {
                let plan = s.plan(&reg, fig, p).unwrap_or_else(|e| panic!("{e}"));
                assert!(plan.runs() > 0 && plan.estimate().as_secs() > 0, "{} {} {p}", s.origin, fig.id);
            }
        }
    }
}

#[test]
fn rule_4_quick_is_smaller_than_full_where_a_figure_runs() {
    let reg = registry();
    for s in studies::all().unwrap() {
        for fig in s.study.figures.iter().filter(|f| f.runnable()) {
            let quick = s.plan(&reg, fig, "quick").unwrap().estimate();
            let full = s.plan(&reg, fig, "full").unwrap().estimate();
            assert!(quick <= full, "{} {}: quick {quick:?} > full {full:?}", s.origin, fig.id);
        }
    }
}

#[test]
fn rule_1_a_malformed_file_names_file_figure_and_key() {
    let reg = registry();
    let (_, scp) = studies::FILES[0];
    let bad = scp.replacen("grid = { supervisors =", "grid = { supervisorz =", 1);
    let e = study::load(&reg, &bad, "scp.toml").unwrap_err().to_string();
    assert!(e.contains("scp.toml: figure fig5a: grid.supervisorz"), "{e}");
    assert!(e.contains("did you mean `supervisors`?"), "{e}");

    let bad = scp.replacen("workload = \"scp\"", "workload = \"spc\"", 1);
    let e = study::load(&reg, &bad, "scp.toml").unwrap_err().to_string();
    assert!(e.contains("scp.toml: figure fig4: workload = spc") && e.contains("available: scp, chat"), "{e}");

    let bad = scp.replacen("plot = \"line\"", "plot = \"pie\"", 1);
    let e = study::load(&reg, &bad, "scp.toml").unwrap_err().to_string();
    assert!(e.contains("scp.toml: figure fig5a: plot = pie") && e.contains("kinds: line"), "{e}");

    let bad = scp.replacen("section = \"§4.1\"", "section = \"§4.1\"\ncolour = \"red\"", 1);
    let e = study::load(&reg, &bad, "scp.toml").unwrap_err().to_string();
    assert!(e.contains("scp.toml") && e.contains("colour"), "{e}");

    let bad = scp.replacen("failure_rate = [0, 1, 2.5, 5, 10, 20]", "failure_rate = [0, 99]", 1);
    let e = study::load(&reg, &bad, "scp.toml").unwrap_err().to_string();
    assert!(e.contains("scp.toml: figure fig5a: grid.failure_rate = 99"), "{e}");
}

#[test]
fn an_unknown_study_lists_the_studies() {
    let e = studies::get("cht").unwrap_err().to_string();
    assert!(e.contains("did you mean `chat`?") && e.contains("scp, chat, energy, iot, partisan"), "{e}");
}
