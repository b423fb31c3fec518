//! What a sweep or comparison folder records of its grid (`sweep.json`, `compare.json`) and
//! how its run folders are named; read by the sweep and comparison runners and by every
//! report of a grid.

use serde::{Deserialize, Serialize};

/// `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// Format version.
    pub format: u32,
    /// Workload.
    pub workload: String,
    /// Runtimes.
    pub runtimes: Vec<String>,
    /// Config before the axes are applied (defaults, file, fixed overrides; not validated).
    pub base_config: serde_json::Value,
    /// The axes: key and values as given.
    pub axes: Vec<(String, Vec<String>)>,
    /// Point folder names, in run order.
    pub points: Vec<String>,
    /// Repetitions of every point (sweep rule 6); absent (1) in folders made without repetitions.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub reps: u32,
}

/// The default repetition count of a folder that records none.
pub fn one() -> u32 {
    1
}

/// Whether a repetition count is the default (serde's `skip_serializing_if` hands over a
/// reference).
pub fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A run folder's name for repetition `rep` of `point` (sweep rule 6): `point` itself when `reps`
/// is 1, else `<point>_rep-<rep>`.
///
/// ```
/// use troupe_lab::sweep::{rep_name, split_rep};
/// assert_eq!(rep_name("troupe_failure_rate-2", 1, 1), "troupe_failure_rate-2");
/// assert_eq!(rep_name("troupe_failure_rate-2", 2, 3), "troupe_failure_rate-2_rep-2");
/// assert_eq!(split_rep("troupe_failure_rate-2_rep-2"), ("troupe_failure_rate-2", 2));
/// assert_eq!(split_rep("troupe_failure_rate-2"), ("troupe_failure_rate-2", 1));
/// ```
pub fn rep_name(point: &str, rep: u32, reps: u32) -> String {
    if reps <= 1 {
        point.to_string()
    } else {
        format!("{point}_rep-{rep}")
    }
}

/// The point and repetition of a run folder's name: the inverse of [`rep_name`] (a name
/// without the suffix is repetition 1).
pub fn split_rep(name: &str) -> (&str, u32) {
    if let Some((point, k)) = name.rsplit_once("_rep-") {
        if let Ok(k) = k.parse::<u32>() {
            if k >= 1 && !point.is_empty() {
                return (point, k);
            }
        }
    }
    (name, 1)
}

/// Replaces what does not belong in a folder name with `_`.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}
/// The file recording a comparison's grid.
pub const FILE: &str = "compare.json";
/// `compare.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareFile {
    /// Format version.
    pub format: u32,
    /// Workload.
    pub workload: String,
    /// Runtimes, in report order.
    pub runtimes: Vec<String>,
    /// Config before the axes are applied.
    pub base_config: serde_json::Value,
    /// The axes: key and values as given.
    pub axes: Vec<(String, Vec<String>)>,
    /// Point names, in run order.
    pub points: Vec<String>,
    /// Each point's resolved config, in the order of `points`.
    pub configs: Vec<serde_json::Value>,
    /// The point plotted over time.
    #[serde(default)]
    pub focus: Option<String>,
    /// Repetitions (rule 7); absent (1) in folders made without repetitions.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub reps: u32,
}

/// One run folder of a comparison: which runtime, point and repetition, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFolder {
    /// Runtime.
    pub runtime: String,
    /// Point name.
    pub point: String,
    /// Repetition, 1-based.
    pub rep: u32,
    /// The folder, relative to the comparison's: `<rt>/<point>` or `<rt>/<point>_rep-<k>`.
    pub rel: String,
}

impl CompareFile {
    /// Every run folder in run order (rule 7): per point, per repetition, the runtimes in
    /// round robin starting with the repetition's own.
    pub fn run_folders(&self) -> Vec<RunFolder> {
        let mut out = Vec::new();
        let n = self.runtimes.len();
        for p in &self.points {
            for rep in 1..=self.reps.max(1) {
                for i in 0..n {
                    let rt = &self.runtimes[(i + rep as usize - 1) % n];
                    out.push(RunFolder {
                        runtime: rt.clone(),
                        point: p.clone(),
                        rep,
                        rel: format!("{rt}/{}", rep_name(p, rep, self.reps)),
                    });
                }
            }
        }
        out
    }

    /// Whether `other` is the same grid (the plotted point aside).
    pub fn same_grid(&self, other: &CompareFile) -> bool {
        CompareFile { focus: None, ..self.clone() } == CompareFile { focus: None, ..other.clone() }
    }
}
