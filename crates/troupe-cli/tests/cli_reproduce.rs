//! `troupe lab reproduce` through the real binary (docs/studies.md): `--list` prints every
//! study's figures with their status and both profiles' estimates from any folder; one cheap
//! figure (seed 004's overlay figure, simulated: seconds) runs its quick grid through the
//! sweep machinery, writes `figures.csv` with a verdict and `report.html`, and a second run
//! resumes (every run already complete), and `--list` over its folder sets the time it took
//! beside the model's estimate; unknown studies and figures are usage errors.

mod support;
use support::lab::{assert_stdout_has, assert_success, assert_usage_error, csv_rows, output, read, TempLab};

#[test]
fn list_prints_every_study_its_figures_status_and_estimates_from_any_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let o = output(&["lab", "reproduce", "--list"], tmp.path());
    assert_success(&o);
    for needle in ["scp (seed 001)", "chat (seed 000)", "energy (seed 002)", "iot (seed 003)", "partisan (seed 004)"] {
        assert_stdout_has(&o, needle);
    }
    assert_stdout_has(&o, "fig5a");
    assert_stdout_has(&o, "[missing: ");
    assert_stdout_has(&o, "estimates, from each grid");
    assert_stdout_has(&o, "profile quick:");
    assert!(!support::lab::text(&o.stdout).contains("measured here"), "no runs in an empty folder");

    let o = output(&["lab", "reproduce", "scp", "--list"], tmp.path());
    assert_success(&o);
    assert_stdout_has(&o, "fig9c");
    assert!(!support::lab::text(&o.stdout).contains("chat (seed 000)"));
}

#[test]
fn one_figure_runs_writes_a_verdict_and_resumes() {
    let lab = TempLab::new("study");
    let o = lab.run(&["lab", "reproduce", "partisan", "--only", "fig11"], &[]);
    assert_success(&o);
    assert_stdout_has(&o, "4 ok, 0 failed, 0 already complete");
    let fig = lab.out.join("quick").join("fig11");
    assert!(fig.join("sweep.json").is_file() && fig.join("report.html").is_file());
    let rows = csv_rows(&lab.out.join("quick").join("figures.csv"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!((row["study"].as_str(), row["figure"].as_str()), ("partisan", "fig11"));
    assert!(["agrees", "disagrees"].contains(&row["verdict"].as_str()), "{row:?}");
    assert!(row["measured_value"].contains("a/b = "), "{row:?}");
    let html = read(&lab.out.join("quick").join("report.html"));
    assert!(html.contains("fig11") && html.contains("fig11/report.html") && html.contains("Profile quick"), "{html}");

    // Rule: a re-run skips every finished cell.
    let o = lab.run(&["lab", "reproduce", "partisan", "--only", "fig11"], &[]);
    assert_success(&o);
    assert_stdout_has(&o, "0 ok, 0 failed, 4 already complete");

    // Study rule 7: `--list` over the same folder sets the time measured here beside the model.
    let o = lab.run(&["lab", "reproduce", "partisan", "--list"], &[]);
    assert_success(&o);
    assert_stdout_has(&o, "measured here (");
    assert_stdout_has(&o, "1 figure(s) of profile quick, 4 runs, took ");
    assert_stdout_has(&o, "at that ratio: quick ");
}

#[test]
fn unknown_study_or_figure_is_a_usage_error_naming_the_choices() {
    let lab = TempLab::new("study");
    let o = lab.run(&["lab", "reproduce", "cht"], &[]);
    assert_usage_error(&o, &["did you mean `chat`?", "scp, chat, energy, iot, partisan"]);
    let o = lab.run(&["lab", "reproduce", "scp", "--only", "fig55"], &[]);
    assert_usage_error(&o, &["no figure \"fig55\"", "fig5a"]);
    assert!(!lab.out.exists(), "nothing is written on a usage error");
}
