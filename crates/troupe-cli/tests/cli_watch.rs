//! `troupe lab run WORKLOAD --watch`: the live view in a real headless browser. A short scp run
//! with a few kills serves the view on a loopback port printed on stderr; once `/data` holds 3
//! throughput points, `chromium --headless` loads the page twice: `--dump-dom` must show the
//! title the page sets after drawing (`troupe watch: N points`, N >= 3), and `--screenshot` must
//! show the plot line (pixels of its colour, decoded with `png`). Ctrl-C then ends the run and
//! the view with it. A bad `--watch` address is a usage error naming the flag.
//!
//! Without a browser the test says SKIPPED loudly, unless TROUPE_TEST_REQUIRE_CHROMIUM=1
//! (scripts/test.sh sets it after scripts/install-chromium.sh), which makes it fail.
//! TROUPE_CHROMIUM names the browser when it is not `chromium` or `chromium-browser` on PATH;
//! TROUPE_WATCH_SCREENSHOT=FILE keeps a copy of the screenshot (docs/images/lab-watch.png).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::lab::{assert_usage_error, sets, troupe, TempLab};

/// The plot line's colour in the page (crates/troupe-lab/src/watch/page.html).
const LINE_RGB: [u8; 3] = [0x0b, 0x6b, 0xcb];

/// The browser: TROUPE_CHROMIUM (which must be a file), else `chromium` or `chromium-browser`
/// on PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TROUPE_CHROMIUM") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "TROUPE_CHROMIUM={} is not a file; unset it to look for chromium on PATH", p.display());
        return Some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n))).find(|p| p.is_file())
}

fn require_or_skip() -> Option<PathBuf> {
    match chromium() {
        Some(p) => Some(p),
        None if std::env::var("TROUPE_TEST_REQUIRE_CHROMIUM").as_deref() == Ok("1") => panic!(
            "TROUPE_TEST_REQUIRE_CHROMIUM=1 but no chromium on PATH (run scripts/install-chromium.sh, or set TROUPE_CHROMIUM)"
        ),
        None => {
            eprintln!(
                "!!!!!!!!!! SKIPPED cli_watch: no chromium on PATH; the --watch page was NOT checked in a browser \
                 (scripts/install-chromium.sh installs it; TROUPE_TEST_REQUIRE_CHROMIUM=1 makes this a failure)"
            );
            None
        }
    }
}

/// A minimal GET on loopback; the body of a 200 answer.
fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// The run with its stderr collected by a thread (the progress line keeps writing to it).
struct Running {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    fn start(lab: &TempLab, kv: &[&str]) -> Running {
        let mut c = lab.troupe(&["lab", "run", "scp", "--watch"]);
        c.args(sets(kv)).current_dir(lab.path()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = c.spawn().expect("troupe starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (pipe, buf) = (child.stderr.take().unwrap(), Arc::clone(&stderr));
        // Ends when the process closes its stderr.
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).split(b'\n').map_while(Result::ok) {
                let mut b = buf.lock().unwrap();
                b.push_str(&String::from_utf8_lossy(&line));
                b.push('\n');
            }
        });
        Running { child, stderr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (bounded) for `what` to return something, failing with the run's stderr.
    fn wait_for<T>(&mut self, what: &str, limit: Duration, mut f: impl FnMut(&str) -> Option<T>) -> T {
        let t0 = Instant::now();
        loop {
            if let Some(v) = f(&self.stderr()) {
                return v;
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("the run ended ({st}) before {what}; stderr:\n{}", self.stderr());
            }
            assert!(t0.elapsed() < limit, "no {what} within {limit:?}; stderr:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the browser with `args` then `url`, bounded by 120 s; its stdout.
fn browse(browser: &Path, profile: &Path, args: &[&str], url: &str) -> String {
    let mut c = Command::new(browser);
    c.args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=900,500", "--virtual-time-budget=3000"])
        .args(["--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("chromium starts");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let (mut o, mut e) = (String::new(), String::new());
        let _ = out.read_to_string(&mut o);
        let _ = err.read_to_string(&mut e);
        (o, e)
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} ran past 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (o, e) = reader.join().unwrap();
    assert!(status.success(), "chromium {args:?} failed ({status}):\n{e}");
    o
}

/// Pixels of `rgb` (each channel within 12) in a PNG.
fn count_colour(png_path: &Path, rgb: [u8; 3]) -> (usize, u32, u32) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => panic!("a screenshot in {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let near = |a: u8, b: u8| a.abs_diff(b) <= 12;
    let n = buf[..info.buffer_size()]
        .chunks_exact(step)
        .filter(|p| near(p[0], rgb[0]) && near(p[1], rgb[1]) && near(p[2], rgb[2]))
        .count();
    (n, info.width, info.height)
}

#[test]
fn the_live_view_plots_the_run_in_a_headless_browser() {
    let Some(browser) = require_or_skip() else { return };
    let lab = TempLab::new("watched");
    // About one kill a second over a window far longer than the test needs; Ctrl-C ends it.
    let mut run = Running::start(
        &lab,
        &["duration_s=90", "warmup_s=1", "pairs=8", "supervisors=2", "failure_rate=1", "pattern=uniform"],
    );
    let url = run.wait_for("a `watch: URL` line on stderr", Duration::from_secs(60), |e| {
        e.lines().find_map(|l| l.strip_prefix("watch: ").map(|u| u.trim().to_string()))
    });
    let addr: SocketAddr = url.trim_start_matches("http://").trim_end_matches('/').parse().expect("the URL's address");
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{url}");
    let data = run.wait_for("3 throughput points at /data", Duration::from_secs(90), |_| {
        let d: serde_json::Value = serde_json::from_str(&get(addr, "/data")?).ok()?;
        (d["points"].as_array()?.len() >= 3).then_some(d)
    });
    assert!(data["points"][0][1].as_i64().unwrap() > 0, "{data}");
    assert_eq!(data["title"], "scp on troupe");

    let profile = tempfile::tempdir().unwrap();
    let dom = browse(&browser, profile.path(), &["--dump-dom"], &url);
    let title = dom
        .split_once("<title>")
        .and_then(|(_, r)| r.split_once("</title>"))
        .map(|(t, _)| t.to_string())
        .unwrap_or_else(|| panic!("no <title> in the DOM:\n{dom}"));
    let n: usize = title
        .strip_prefix("troupe watch: ")
        .and_then(|r| r.strip_suffix(" points"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the page did not draw: title {title:?}"));
    assert!(n >= 3, "{title}");
    assert!(dom.contains("scp on troupe"), "the heading names the run:\n{dom}");

    let shot = lab.path().join("watch.png");
    browse(&browser, profile.path(), &[&format!("--screenshot={}", shot.display())], &url);
    let (line_px, w, h) = count_colour(&shot, LINE_RGB);
    assert_eq!((w, h), (900, 500));
    assert!(line_px >= 150, "only {line_px} pixels of the plot line's colour in {}", shot.display());
    if let Some(keep) = std::env::var_os("TROUPE_WATCH_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }

    // Ctrl-C ends the run, and the view with it.
    let k = Command::new("kill").args(["-INT", &run.child.id().to_string()]).status().unwrap();
    assert!(k.success());
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = run.child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the run did not end after Ctrl-C");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130), "{}", run.stderr());
    assert!(get(addr, "/data").is_none(), "the view still answers after the run ended");
}

#[test]
fn a_bad_watch_address_is_a_usage_error_naming_the_flag() {
    let lab = TempLab::new("never");
    for bad in ["--watch=nonsense", "--watch=127.0.0.1:99999"] {
        let o =
            troupe().args(["lab", "run", "scp", bad, "--out"]).arg(&lab.out).current_dir(lab.path()).output().unwrap();
        assert_usage_error(&o, &["--watch", "IP:PORT"]);
        assert!(!lab.out.exists(), "a refused run made its folder");
    }
}
