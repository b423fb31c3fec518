//! Line charts rendered to SVG text with plotters, for inlining into the self-contained
//! report.html and for writing beside it. One function, many series; the caller decides what
//! the lines mean. A point whose y is not finite (NaN) is a gap: the line breaks there, so a
//! missing measurement is never drawn as a straight line across it.

use plotters::prelude::*;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (references such as the ceiling).
    pub dashed: bool,
    /// Draw a marker on each point (sparse data such as sweep points).
    pub markers: bool,
}

impl Series {
    /// A plain solid line.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.into(), points, dashed: false, markers: false }
    }

    /// A grid's line over a count that grows by factors (actor pairs, clients): at each x, the
    /// mean of its runs' figures (a point with none is a gap), x drawn as log2 so 1, 4, 16, 64
    /// are evenly spaced; with markers.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use troupe_lab::report::plot::Series;
    /// let s = Series::log2_means("troupe", BTreeMap::from([(1, vec![Some(2.0), Some(4.0)]), (8, vec![None])]));
    /// assert_eq!(s.points[0], (0.0, 3.0));
    /// assert_eq!(s.points[1].0, 3.0);
    /// assert!(s.points[1].1.is_nan());
    /// ```
    pub fn log2_means(name: impl Into<String>, points: std::collections::BTreeMap<u64, Vec<Option<f64>>>) -> Series {
        let points =
            points.into_iter().map(|(x, ys)| ((x.max(1) as f64).log2(), mean(ys).unwrap_or(f64::NAN))).collect();
        Series { markers: true, ..Series::line(name, points) }
    }
}

pub use crate::stats::mean;

/// The cumulative distribution of `v` as percent of `total` samples (at most about 400
/// points). With `total > v.len()` the curve stops below 100%: the missing samples are ones
/// known only to lie above every plotted value (censored: never recovered in the window), so a
/// runtime that left clients unrecovered never looks complete.
///
/// ```
/// let pts = troupe_lab::report::plot::cdf(vec![3.0, 1.0, 2.0], 4);
/// assert_eq!(pts.last(), Some(&(3.0, 75.0)));
/// ```
pub fn cdf(mut v: Vec<f64>, total: usize) -> Vec<(f64, f64)> {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let total = total.max(n).max(1) as f64;
    let step = n.div_ceil(400).max(1);
    let mut pts: Vec<(f64, f64)> = (0..n).step_by(step).map(|i| (v[i], 100.0 * (i + 1) as f64 / total)).collect();
    if let Some(&last) = v.last() {
        pts.push((last, 100.0 * n as f64 / total));
    }
    pts
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Y range; computed from the data when `None`.
    pub y_range: Option<(f64, f64)>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn bounds(series: &[Series]) -> ((f64, f64), (f64, f64)) {
    let pts = series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return ((0.0, 1.0), (0.0, 1.0));
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    if y1 - y0 < 1e-9 {
        y0 -= 1.0;
        y1 += 1.0;
    }
    let pad = (y1 - y0) * 0.08;
    ((x0, x1), (y0 - pad, y1 + pad))
}

/// A y range zoomed to the data and the ceiling: from a little below the smallest value to a
/// little above the larger of the largest value and the ceiling (never below 0), so a run at
/// 99.8% of its ceiling shows its dips instead of a flat line at the top of a 0-based axis. The
/// caller draws the ceiling as a dashed series and says in the title that the axis is zoomed.
pub fn zoomed_range(values: impl IntoIterator<Item = f64>, ceiling: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (ceiling, ceiling);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.002).max(1e-9);
    ((lo - pad).max(0.0), hi + pad)
}

/// What a chart title says when its y axis is zoomed by [`zoomed_range`].
pub const ZOOMED: &str = " (y axis zoomed to the data, not from 0; dashed: the ceiling)";

/// One box of a box plot: the spread of one series at one x.
#[derive(Debug, Clone, Copy)]
pub struct BoxItem {
    /// The series it belongs to (its colour), an index into the chart's series.
    pub series: usize,
    /// Where it stands.
    pub x: f64,
    /// Half its width, in x units.
    pub half_width: f64,
    /// Lower whisker (the smallest value).
    pub lo: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Upper whisker (the largest value).
    pub hi: f64,
}

/// Renders `chart` as an SVG document of `width` x `height` pixels.
pub fn svg(chart: &Chart, width: u32, height: u32) -> String {
    svg_with_boxes(chart, &[], width, height)
}

/// [`svg`] with box plots drawn over the lines (min-max whiskers, q1-q3 box, median bar).
pub fn svg_with_boxes(chart: &Chart, boxes: &[BoxItem], width: u32, height: u32) -> String {
    let mut buf = String::new();
    if let Err(e) = draw(chart, boxes, width, height, &mut buf) {
        return format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"40\">\
             <text x=\"4\" y=\"20\">plot failed: {}</text></svg>",
            super::html::escape(&e)
        );
    }
    buf
}

fn draw(chart: &Chart, boxes: &[BoxItem], width: u32, height: u32, buf: &mut String) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let root = SVGBackend::with_string(buf, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut all = chart.series.clone();
    all.push(Series::line(
        "",
        boxes.iter().flat_map(|b| [(b.x - b.half_width, b.lo), (b.x + b.half_width, b.hi)]).collect(),
    ));
    let ((x0, x1), (mut y0, mut y1)) = bounds(&all);
    if let Some((a, b)) = chart.y_range {
        y0 = a;
        y1 = b;
    }
    let mut ctx = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let style = color.stroke_width(2);
        let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        // Segments between gaps (non-finite y); the legend entry goes with the first one.
        let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(x, y) in s.points.iter().filter(|p| p.0.is_finite()) {
            match segments.last_mut() {
                Some(seg) if y.is_finite() => seg.push((x, y)),
                Some(seg) if !seg.is_empty() => segments.push(Vec::new()),
                _ => {}
            }
        }
        for (j, seg) in segments.into_iter().enumerate() {
            let anno = if s.dashed {
                ctx.draw_series(DashedLineSeries::new(seg, 6, 4, style)).map_err(err)?
            } else {
                ctx.draw_series(LineSeries::new(seg, style)).map_err(err)?
            };
            if j == 0 {
                anno.label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            }
        }
        if s.markers {
            ctx.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
        }
    }
    for b in boxes {
        let color = PALETTE[b.series % PALETTE.len()];
        let (l, r) = (b.x - b.half_width, b.x + b.half_width);
        ctx.draw_series(std::iter::once(Rectangle::new([(l, b.q1), (r, b.q3)], color.stroke_width(1)))).map_err(err)?;
        ctx.draw_series(std::iter::once(PathElement::new(vec![(l, b.median), (r, b.median)], color.stroke_width(3))))
            .map_err(err)?;
        for (from, to) in [(b.lo, b.q1), (b.q3, b.hi)] {
            ctx.draw_series(std::iter::once(PathElement::new(vec![(b.x, from), (b.x, to)], color.stroke_width(1))))
                .map_err(err)?;
        }
    }
    if chart.series.len() > 1 || chart.series.iter().any(|s| !s.name.is_empty()) {
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zoomed_range_holds_the_data_and_the_ceiling() {
        let (lo, hi) = zoomed_range([5113.0, 5110.0, 5119.0], 5120.0);
        assert!(lo > 5000.0 && lo < 5110.0, "{lo}");
        assert!(hi > 5120.0 && hi < 5140.0, "{hi}");
        let (lo, _) = zoomed_range([0.0, 80.0], 80.0);
        assert_eq!(lo, 0.0, "never below 0");
        let (lo, hi) = zoomed_range([f64::NAN], 100.0);
        assert!(lo < 100.0 && hi > 100.0, "a ceiling alone still gets a range");
    }
}
