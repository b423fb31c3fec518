//! The chat run report: the seed's per-second throughput CSV, one CSV row per client event for
//! detection and reconnection, the plots, and `report.html`, all from the run folder's
//! recorded files.
//!
//! Files:
//! 1. `chat_throughput.csv`: the columns of workloads.md §2, one row per window second;
//!    `init_timestamp` / `end_timestamp` are the window's start and end in milliseconds since
//!    the Unix epoch, `test_id` is the run id, `fault_type` the `msg_type`.
//! 2. `chat_detection.csv`: `test_id,client,target,fault_id,injected_us,detected_us,detection_ms`.
//! 3. `chat_reconnection.csv`: `test_id,client,target,reconnected_us,reconnection_ms`.
//! 4. `throughput.svg` (throughput tests): messages received per second with the ceiling;
//!    `times.svg`: the cumulative distributions of detection and reconnection times.

use std::fmt::Write as _;
use std::path::Path;

use super::analysis::{ChatStats, Dist};
use super::config::ChatConfig;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::{self, Chart, Series};
use troupe_lab::report::{page_footer, status_html, write};

/// The throughput CSV's header (workloads.md §2, exactly).
pub const THROUGHPUT_COLUMNS: &str = "test_id,test_type,init_timestamp,end_timestamp,num_supervisor,chats_per_sup,\
                                      clients_per_server,fault_type,fault_pause,msg_per_second,second";

/// `chat_throughput.csv` (file 1).
pub fn throughput_csv(m: &Manifest, cfg: &ChatConfig, st: &ChatStats) -> String {
    let mut s = format!("{THROUGHPUT_COLUMNS}\n");
    let init = st.window_start_us.unwrap_or(0) / 1000;
    let end = init + (cfg.duration_s as i64) * 1000;
    for &(second, count) in &st.seconds {
        let _ = writeln!(
            s,
            "{},{},{init},{end},{},{},{},{},{},{count},{second}",
            m.run_id,
            st.test_type,
            cfg.num_supervisor,
            cfg.chats_per_sup,
            cfg.clients_per_server,
            cfg.msg_type_word,
            cfg.fault_pause_ms,
        );
    }
    s
}

/// `chat_detection.csv` (file 2).
pub fn detection_csv(m: &Manifest, st: &ChatStats) -> String {
    let mut s = String::from("test_id,client,target,fault_id,injected_us,detected_us,detection_ms\n");
    for d in &st.detection_rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{:.3}",
            m.run_id, d.client, d.target, d.fault_id, d.injected_us, d.detected_us, d.ms
        );
    }
    s
}

/// `chat_reconnection.csv` (file 3).
pub fn reconnection_csv(m: &Manifest, st: &ChatStats) -> String {
    let mut s = String::from("test_id,client,target,reconnected_us,reconnection_ms\n");
    for r in &st.reconnection_rows {
        let _ = writeln!(s, "{},{},{},{},{:.3}", m.run_id, r.client, r.target, r.reconnected_us, r.ms);
    }
    s
}

/// The cumulative distribution of `v`, at most 400 points.
fn dist_rows(name: &str, d: &Option<Dist>) -> Vec<String> {
    match d {
        None => vec![
            name.into(),
            "0".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ],
        Some(d) => std::iter::once(name.to_string())
            .chain(std::iter::once(d.n.to_string()))
            .chain(["mean", "median", "min", "q1", "q3", "p99", "max"].iter().map(|k| d.show(k, 3)))
            .collect(),
    }
}

/// Writes the CSVs, plots and `report.html` of a chat run.
pub fn write_run_outputs(dir: &Path, m: &Manifest, cfg: &Config, st: &ChatStats) -> Result<()> {
    let chat = ChatConfig::from_config(cfg);
    write(dir, "chat_throughput.csv", &throughput_csv(m, &chat, st))?;
    write(dir, "chat_detection.csv", &detection_csv(m, st))?;
    write(dir, "chat_reconnection.csv", &reconnection_csv(m, st))?;
    let mut p = Page::new(&format!("Chat run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "{} test, {} deployment: {} supervisor(s) x {} chats x {} clients = {} clients; msg_type {} every {} ms \
         per chat ({} phase); clients send every {} ms{}; retry every {} ms at most {} times (lookup {}); window {} s after {} s \
         warm-up; seed {}.",
        st.test_type,
        if chat.distributed { "distributed" } else { "single-process" },
        chat.num_supervisor,
        chat.chats_per_sup,
        chat.clients_per_server,
        chat.total_clients(),
        chat.msg_type_word,
        chat.fault_pause_ms,
        if chat.random_phase { "seeded random" } else { "aligned" },
        chat.send_interval_ms,
        if chat.clients_send() { "" } else { " (not in this test: clients only watch)" },
        chat.retry_delay_ms,
        chat.retry_max,
        chat.lookup.word(),
        chat.duration_s,
        chat.warmup_s,
        chat.seed,
    ));
    p.h2("Results");
    p.kv(&troupe_lab::workload::RunAnalysis::summary_rows(st));
    if chat.clients_send() {
        p.p(&format!(
            "Theoretical ceiling: chats x clients x clients x 1000 / send_interval_ms = {} x {} x {} x 1000 / {} = \
             {:.0} messages received per second.",
            chat.total_chats(),
            chat.clients_per_server,
            chat.clients_per_server,
            chat.send_interval_ms,
            st.ceiling
        ));
        let mut series = vec![Series::line(
            "messages received/s",
            st.seconds.iter().map(|&(s, c)| (f64::from(s), c as f64)).collect(),
        )];
        series.push(Series {
            name: format!("ceiling {:.0}/s", st.ceiling),
            points: vec![(0.0, st.ceiling), (chat.duration_s as f64, st.ceiling)],
            dashed: true,
            markers: false,
        });
        let range = plot::zoomed_range(st.seconds.iter().map(|&(_, c)| c as f64), st.ceiling);
        let chart = Chart {
            title: format!(
                "{} chat throughput, {} x {} clients, {} every {} ms{}",
                m.runtime,
                chat.total_chats(),
                chat.clients_per_server,
                chat.msg_type_word,
                chat.fault_pause_ms,
                plot::ZOOMED
            ),
            x_label: "second of the measurement window".into(),
            y_label: "messages received per second".into(),
            series,
            y_range: Some(range),
        };
        let svg = plot::svg(&chart, 900, 420);
        write(dir, "throughput.svg", &svg)?;
        p.figure(&svg, "Messages received by all clients per second of the window, with the theoretical ceiling.");
    }
    p.h2("Detection and reconnection");
    p.table(
        &["time (ms)", "n", "mean", "median", "min", "q1", "q3", "p99", "max"],
        &[dist_rows("detection", &st.detection_ms), dist_rows("reconnection", &st.reconnection_ms)],
    );
    if st.detection_ms.is_some() || st.reconnection_ms.is_some() {
        let chart = Chart {
            title: "Detection and reconnection times (cumulative)".into(),
            x_label: "ms".into(),
            y_label: "% of client events at or below".into(),
            series: vec![
                Series::line(
                    "detection",
                    plot::cdf(st.detection_rows.iter().map(|d| d.ms).collect(), st.expected_detections as usize),
                ),
                // Over every detection: the curve stops short of 100% by the unreconnected.
                Series::line(
                    "reconnection",
                    plot::cdf(st.reconnection_rows.iter().map(|r| r.ms).collect(), st.detections),
                ),
            ],
            y_range: Some((0.0, 101.0)),
        };
        let svg = plot::svg(&chart, 900, 380);
        write(dir, "times.svg", &svg)?;
        p.figure(
            &svg,
            "Per client and fault: detection = injection to the client's Down; reconnection = Down to rejoined, \
             over every detection (a curve that stops below 100% left clients unreconnected at the window's end).",
        );
    }
    p.p(&format!(
        "All clients were connected during {:.3}% of the window ({} unmatched detections, {} clients gave up).",
        st.all_connected_pct, st.unmatched_detections, st.gave_up
    ));
    let files = [
        "manifest.json",
        "config.json",
        "schedule.jsonl",
        "events.jsonl",
        "chat_throughput.csv",
        "chat_detection.csv",
        "chat_reconnection.csv",
        "summary.json",
        "stderr.txt",
    ];
    page_footer(&mut p, m, &files);
    write(dir, "report.html", &p.finish())
}
