//! SVG charts drawn with plotters into strings. Every chart has a title, axis labels with
//! units and a legend where it has several series; colours come from one colour-blind-safe
//! palette (Okabe–Ito) so reports read the same on screen and in print.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::num::{fix, fixed, grouped, tick};

type Res = Result<(), Box<dyn std::error::Error>>;

/// Okabe–Ito, then greys: distinguishable with the common colour-vision deficiencies.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(86, 180, 233),
    RGBColor(204, 121, 167),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
    RGBColor(120, 120, 120),
    RGBColor(180, 180, 180),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const FONT: &str = "sans-serif";

/// The legend every chart draws: on a translucent white box at `$pos`.
macro_rules! legend {
    ($c:expr, $pos:expr) => {
        $c.configure_series_labels()
            .position($pos)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, 13))
            .draw()?
    };
}

fn render(w: u32, h: u32, draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Res) -> String {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        let ok = root.fill(&WHITE).is_ok() && draw(&root).is_ok() && root.present().is_ok();
        if !ok {
            drop(root);
            return error_svg(w, h);
        }
    }
    s
}

fn error_svg(w: u32, h: u32) -> String {
    format!(
        r#"<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg"><text x="10" y="20">chart could not be drawn</text></svg>"#
    )
}

/// A chart given nothing to draw says so (the reports put a note in its place; this is for
/// other callers): an empty frame with axes from 0 to 1 read as data.
fn no_data_svg(w: u32, h: u32, title: &str) -> String {
    let mut t = String::new();
    for c in title.chars() {
        match c {
            '<' => t.push_str("&lt;"),
            '>' => t.push_str("&gt;"),
            '&' => t.push_str("&amp;"),
            c => t.push(c),
        }
    }
    format!(
        r#"<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg"><text x="10" y="20">{t}: no data to draw</text></svg>"#
    )
}

fn nice_max(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    // Near f64::MAX the margin overflows: an infinite axis makes plotters loop forever.
    Some(x * 1.08).filter(|m| m.is_finite()).unwrap_or(x)
}

/// Whether `a..b` is an axis plotters can lay out: finite ends and a finite width (an
/// infinite one makes its key-point search loop forever).
fn spans(a: f64, b: f64) -> bool {
    a.is_finite() && b.is_finite() && (b - a).is_finite()
}

/// Whether `a..b` is a log axis plotters can lay out: positive, with the decade above its
/// end and the ratio of its ends finite (else its key-point search loops forever).
fn log_spans(a: f64, b: f64) -> bool {
    a > 0.0 && spans(a, b * 10.0) && (b * 10.0 / a).is_finite()
}

/// One horizontal bar split into segments (where the step time or the memory goes), with
/// an optional reference line (the HBM capacity).
pub fn stacked_bar(
    title: &str,
    unit: &str,
    segments: &[(String, f64)],
    reference: Option<(&str, f64)>,
) -> String {
    let total: f64 = segments.iter().map(|s| s.1.max(0.0)).sum();
    let xmax = nice_max(total.max(reference.map_or(0.0, |r| r.1)));
    let rows = segments.iter().filter(|s| s.1 > 0.0).count().div_ceil(3) as u32;
    render(900, 230 + 22 * rows, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(10)
            .build_cartesian_2d(0f64..xmax, 0f64..(2.2 + 0.25 * rows as f64))?;
        c.configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(unit)
            .x_label_formatter(&|v| tick(*v, xmax))
            .label_style((FONT, 14))
            .max_light_lines(0)
            .draw()?;
        let top = 2.1 + 0.25 * rows as f64;
        let mut x = 0.0;
        for (i, (name, v)) in segments.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            let col = color(i);
            let share = if total > 0.0 { 100.0 * v / total } else { 0.0 };
            c.draw_series(std::iter::once(Rectangle::new(
                [(x, top - 0.9), (x + v, top - 0.1)],
                col.filled(),
            )))?
            .label(format!("{name}: {} {unit} ({share:.1}%)", fix(*v, 3)))
            .legend(move |(lx, ly)| {
                Rectangle::new([(lx, ly - 6), (lx + 12, ly + 6)], col.filled())
            });
            x += v;
        }
        if let Some((name, r)) = reference {
            c.draw_series(std::iter::once(PathElement::new(
                vec![(r, 0.0), (r, top)],
                BLACK.stroke_width(3),
            )))?
            .label(format!("{name}: {} {unit}", fixed(r, 1)))
            .legend(|(lx, ly)| {
                PathElement::new(vec![(lx, ly), (lx + 12, ly)], BLACK.stroke_width(3))
            });
        }
        legend!(c, SeriesLabelPosition::LowerLeft);
        Ok(())
    })
}

type RowChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordi32>,
    >,
>;

/// A chart whose y axis is `labels.len()` named rows, the first on top, and whose x axis
/// runs from 0 to `xmax` in `xdesc`.
fn row_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    xdesc: &str,
    xmax: f64,
    labels: &[String],
    label_area: u32,
) -> Result<RowChart<'a, 'b>, Box<dyn std::error::Error>> {
    let n = labels.len().max(1);
    let mut c = ChartBuilder::on(root)
        .caption(title, (FONT, 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_area)
        .build_cartesian_2d(0f64..xmax, (0..n as i32).into_segmented())?;
    c.configure_mesh()
        .disable_y_mesh()
        .x_desc(xdesc)
        .x_label_formatter(&|v| tick(*v, xmax))
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => labels
                .get((n as i32 - 1 - *i) as usize)
                .cloned()
                .unwrap_or_default(),
            SegmentValue::Last => String::new(),
        })
        .label_style((FONT, 13))
        // No light lines along x; the y mesh is off, but plotters still searches its
        // integer key points, and a limit of 0 multiplies that search's step until it
        // overflows (a panic in debug builds).
        .x_max_light_lines(0)
        .y_max_light_lines(1)
        .draw()?;
    Ok(c)
}

/// Horizontal bars, one per labelled row, largest first as given; `highlight` is drawn in
/// the second colour.
pub fn hbars(title: &str, unit: &str, rows: &[(String, f64)], highlight: Option<usize>) -> String {
    if rows.is_empty() {
        return no_data_svg(900, 120, title);
    }
    let n = rows.len().max(1);
    let xmax = nice_max(rows.iter().map(|r| r.1).fold(0.0, f64::max));
    let labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    render(900, 90 + 30 * n as u32, |root| {
        let mut c = row_chart(root, title, unit, xmax, &labels, 330)?;
        c.draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
            let col = if Some(i) == highlight {
                color(1)
            } else {
                color(0)
            };
            let row = n as i32 - 1 - i as i32;
            let mut r = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(row)),
                    (*v, SegmentValue::Exact(row + 1)),
                ],
                col.filled(),
            );
            r.set_margin(4, 4, 0, 0);
            r
        }))?;
        Ok(())
    })
}

/// A point of a scatter: x, y, on the front, label.
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub front: bool,
    pub label: String,
}

/// A box in SVG pixels: left, top, right, bottom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    /// Whether the two boxes share any area (touching edges do not).
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }

    /// A square of half-side `r` around `(x, y)`.
    fn around((x, y): (i32, i32), r: i32) -> Rect {
        Rect {
            x0: x - r,
            y0: y - r,
            x1: x + r,
            y1: y + r,
        }
    }

    /// Whether the segment from `a` to `b` passes through the box (sampled every 2 pixels).
    fn crossed_by(&self, a: (i32, i32), b: (i32, i32)) -> bool {
        let len = (b.0 - a.0).abs().max((b.1 - a.1).abs()).max(1);
        (0..=(len + 1) / 2).any(|k| {
            let t = (2 * k).min(len) as f64 / len as f64;
            let x = a.0 as f64 + t * (b.0 - a.0) as f64;
            let y = a.1 as f64 + t * (b.1 - a.1) as f64;
            x > self.x0 as f64 && x < self.x1 as f64 && y > self.y0 as f64 && y < self.y1 as f64
        })
    }
}

/// The pixels a one-line label of `size` points takes in the SVG, with a pixel of margin:
/// plotters writes the font size as `size / 1.24`, and a browser's sans-serif (DejaVu Sans,
/// Arial, Helvetica) fits each character within these widths (in ems: digits 0.64, `×`
/// 0.84).
pub fn label_size(text: &str, size: f64) -> (i32, i32) {
    let px = size / 1.24;
    let ems: f64 = text
        .chars()
        .map(|c| match c {
            ' ' => 0.33,
            '.' | ',' | ':' | ';' | '|' | '!' | 'i' | 'j' | 'l' | '\'' => 0.34,
            '-' | '(' | ')' | 'f' | 't' | 'r' => 0.45,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 1.0,
            '×' => 0.84,
            c if c.is_ascii_uppercase() => 0.78,
            _ => 0.64,
        })
        .sum();
    ((ems * px).ceil() as i32 + 2, (1.1 * px).ceil() as i32 + 2)
}

/// A line from one pixel to another.
pub type Segment = ((i32, i32), (i32, i32));

/// Where each label goes, as the box its text takes, or `None` where no room was found:
/// near its anchor, in the first of rings of growing radius around it and eight directions
/// on each ring, inside `area`, over no other placed label and no obstacle (the markers,
/// the legend); a box that also keeps off the `avoid` segments (the front's line) is taken
/// first. Labels are placed in the order given, so the first ones sit closest.
pub fn place_labels(
    anchors: &[(i32, i32)],
    sizes: &[(i32, i32)],
    area: Rect,
    obstacles: &[Rect],
    avoid: &[Segment],
) -> Vec<Option<Rect>> {
    const RINGS: [i32; 9] = [7, 12, 20, 30, 44, 62, 86, 116, 150];
    let mut placed: Vec<Rect> = Vec::new();
    anchors
        .iter()
        .zip(sizes)
        .map(|(&(ax, ay), &(w, h))| {
            let candidates = RINGS.iter().flat_map(|&r| {
                let d = (r as f64 * 0.71).round() as i32;
                [
                    (ax + r, ay - h / 2),
                    (ax - r - w, ay - h / 2),
                    (ax + d, ay - d - h),
                    (ax + d, ay + d),
                    (ax - d - w, ay - d - h),
                    (ax - d - w, ay + d),
                    (ax - w / 2, ay - r - h),
                    (ax - w / 2, ay + r),
                ]
                .map(|(x0, y0)| Rect {
                    x0,
                    y0,
                    x1: x0 + w,
                    y1: y0 + h,
                })
            });
            let free = |b: &Rect| {
                b.inside(&area)
                    && !placed.iter().any(|p| p.intersects(b))
                    && !obstacles.iter().any(|o| o.intersects(b))
            };
            let clear = |b: &Rect| !avoid.iter().any(|&(a, e)| b.crossed_by(a, e));
            let best = candidates
                .clone()
                .find(|b| free(b) && clear(b))
                .or_else(|| candidates.clone().find(free));
            if let Some(b) = best {
                placed.push(b);
            }
            best
        })
        .collect()
}

/// The nearest point of `b` to `p`: where a leader line from a point to its label ends.
fn nearest_on(b: &Rect, (x, y): (i32, i32)) -> (i32, i32) {
    (x.clamp(b.x0, b.x1), y.clamp(b.y0, b.y1))
}

/// The legend box plotters draws at the upper right of `area` for these lines at `size`
/// points (its 30-pixel marker column and 10-pixel margins), widened to the browser's text.
fn legend_box(area: Rect, lines: &[String], size: f64) -> Rect {
    let w = lines
        .iter()
        .map(|l| label_size(l, size).0)
        .max()
        .unwrap_or(0)
        + 30
        + 20
        + 4;
    let h = (lines.len() as f64 * 1.45 * size / 1.24).ceil() as i32 + 20 + 4;
    Rect {
        x0: area.x1 - 5 - w,
        y0: area.y0,
        x1: area.x1,
        y1: area.y0 + 5 + h,
    }
}

/// Font size of the front's point labels.
const POINT_LABEL: f64 = 13.0;

/// Candidates as points, the Pareto front joined, the chosen one ringed. The front's points
/// and the chosen one are labelled, each label placed where it overlaps no other label,
/// marker or the legend (`place_labels`), joined to its point by a line when set apart; a
/// label with no room left is not drawn (the report's table names every candidate).
pub fn front(
    title: &str,
    xdesc: &str,
    ydesc: &str,
    pts: &[Point],
    chosen: Option<usize>,
) -> String {
    if pts.is_empty() {
        return no_data_svg(900, 120, title);
    }
    let xmax = nice_max(pts.iter().map(|p| p.x).fold(0.0, f64::max));
    let ymax = nice_max(pts.iter().map(|p| p.y).fold(0.0, f64::max));
    render(900, 560, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
        c.configure_mesh()
            .x_desc(xdesc)
            .y_desc(ydesc)
            .x_label_formatter(&|v| tick(*v, xmax))
            .y_label_formatter(&|v| tick(*v, ymax))
            .label_style((FONT, 14))
            .max_light_lines(0)
            .draw()?;
        c.draw_series(
            pts.iter()
                .filter(|p| !p.front)
                .map(|p| Circle::new((p.x, p.y), 4, color(8).filled())),
        )?
        .label("candidate")
        .legend(|(x, y)| Circle::new((x + 6, y), 4, color(8).filled()));
        let mut f: Vec<&Point> = pts.iter().filter(|p| p.front).collect();
        f.sort_by(|a, b| a.x.total_cmp(&b.x));
        c.draw_series(LineSeries::new(
            f.iter().map(|p| (p.x, p.y)),
            color(0).stroke_width(2),
        ))?;
        c.draw_series(
            f.iter()
                .map(|p| Circle::new((p.x, p.y), 5, color(0).filled())),
        )?
        .label("Pareto front")
        .legend(|(x, y)| Circle::new((x + 6, y), 5, color(0).filled()));
        let chosen = chosen.and_then(|i| pts.get(i));
        if let Some(p) = chosen {
            c.draw_series(std::iter::once(Circle::new(
                (p.x, p.y),
                10,
                color(3).stroke_width(3),
            )))?
            .label(format!("chosen: {}", p.label))
            .legend(|(x, y)| Circle::new((x + 6, y), 6, color(3).stroke_width(3)));
        }
        // Labels: the chosen point's first, then the front's from the fastest.
        let (xr, yr) = c.plotting_area().get_pixel_range();
        let area = Rect {
            x0: xr.start,
            y0: yr.start,
            x1: xr.end,
            y1: yr.end,
        };
        let at = |p: &Point| c.backend_coord(&(p.x, p.y));
        let mut labelled: Vec<&Point> = chosen.into_iter().collect();
        labelled.extend(
            f.iter()
                .copied()
                .filter(|p| !chosen.is_some_and(|q| std::ptr::eq(*p, q))),
        );
        let mut legend = vec!["candidate".to_string(), "Pareto front".to_string()];
        if let Some(p) = chosen {
            legend.push(format!("chosen: {}", p.label));
        }
        let mut obstacles: Vec<Rect> = pts
            .iter()
            .map(|p| Rect::around(at(p), if p.front { 6 } else { 5 }))
            .collect();
        obstacles.extend(chosen.map(|p| Rect::around(at(p), 12)));
        obstacles.push(legend_box(area, &legend, 13.0));
        let line: Vec<(i32, i32)> = f.iter().map(|p| at(p)).collect();
        let segments: Vec<_> = line.windows(2).map(|w| (w[0], w[1])).collect();
        let anchors: Vec<(i32, i32)> = labelled.iter().map(|p| at(p)).collect();
        let sizes: Vec<(i32, i32)> = labelled
            .iter()
            .map(|p| label_size(&p.label, POINT_LABEL))
            .collect();
        let boxes = place_labels(&anchors, &sizes, area, &obstacles, &segments);
        let font = (FONT, POINT_LABEL).into_font().color(&BLACK);
        for ((p, a), b) in labelled.iter().zip(&anchors).zip(&boxes) {
            let Some(b) = b else { continue };
            let end = nearest_on(b, *a);
            if (end.0 - a.0).abs().max((end.1 - a.1).abs()) > 10 {
                root.draw(&PathElement::new(
                    vec![*a, end],
                    BLACK.mix(0.45).stroke_width(1),
                ))?;
            }
            // plotters anchors text at its top left (`dy="0.76em"`); one pixel in from the box.
            root.draw(&Text::new(
                p.label.clone(),
                (b.x0 + 1, b.y0 + 1),
                font.clone(),
            ))?;
        }
        legend!(c, SeriesLabelPosition::UpperRight);
        Ok(())
    })
}

/// A named series of (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// The y axis's ends: the data's `lo..hi` with `pad` either side, kept within `bounds`
/// (the range the quantity cannot leave, such as 0 to 1 for a fraction) where the data lie
/// in it: padding never takes the axis past a bound, and data outside it stay on the axis.
fn y_axis(lo: f64, hi: f64, pad: f64, bounds: Option<(f64, f64)>) -> (f64, f64) {
    let (a, b) = (lo - pad, hi + pad);
    match bounds {
        Some((min, max)) => (a.max(min.min(lo)), b.min(max.max(hi))),
        None => (a, b),
    }
}

/// Lines (with markers) over a shared x axis, optionally logarithmic; `mark` draws a
/// labelled vertical line (the optimum); `y_bounds` is the range the values cannot leave
/// (0 to 1 for ETTR), which the y axis does not pass.
pub fn lines(
    title: &str,
    xdesc: &str,
    ydesc: &str,
    series: &[Series],
    log_x: bool,
    mark: Option<(&str, f64)>,
    y_bounds: Option<(f64, f64)>,
) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    if all().next().is_none() {
        return no_data_svg(900, 120, title);
    }
    let (mut x0, mut x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let (mut y0, mut y1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    if !(x0.is_finite() && x1.is_finite()) {
        (x0, x1) = (0.0, 1.0);
    }
    if !(y0.is_finite() && y1.is_finite()) {
        (y0, y1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    // A flat series (no job ever queued, an ETTR of 1) gets a tenth of its value, or 1,
    // either side: a billionth made an axis of `-1e-9 … 1e-9` jobs. An axis of values that
    // are never negative starts at 0 at the lowest.
    let pad = if y1 > y0 {
        ((y1 - y0) * 0.08).max(y1.abs() * 1e-3)
    } else if y1 != 0.0 {
        y1.abs() * 0.1
    } else {
        1.0
    };
    let floor = if y0 >= 0.0 { 0.0 } else { f64::NEG_INFINITY };
    let (lo, hi) = y_bounds.unwrap_or((floor, f64::INFINITY));
    let (y0, y1) = y_axis(y0, y1, pad, Some((lo.max(floor), hi)));
    let log = log_x && x0 > 0.0;
    if !(spans(x0, x1) && spans(y0, y1) && (!log || log_spans(x0 * 0.9, x1 * 1.1))) {
        return error_svg(900, 500);
    }
    render(900, 500, |root| {
        let mut b = ChartBuilder::on(root);
        b.caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80);
        let yscale = y0.abs().max(y1.abs());
        let xscale = x0.abs().max(x1.abs());
        macro_rules! body {
            ($c:expr) => {{
                let mut c = $c;
                c.configure_mesh()
                    .x_desc(xdesc)
                    .y_desc(ydesc)
                    .x_label_formatter(&|v| tick(*v, if log { *v } else { xscale }))
                    .y_label_formatter(&|v| tick(*v, yscale))
                    .label_style((FONT, 14))
                    .max_light_lines(0)
                    .draw()?;
                for (i, s) in series.iter().enumerate() {
                    let col = color(i);
                    c.draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        col.stroke_width(2),
                    ))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], col.stroke_width(2))
                    });
                    // Markers only where points are few enough to read one by one.
                    if s.points.len() <= 40 {
                        c.draw_series(
                            s.points
                                .iter()
                                .map(move |&p| Circle::new(p, 3, col.filled())),
                        )?;
                    }
                }
                if let Some((name, x)) = mark {
                    c.draw_series(std::iter::once(PathElement::new(
                        vec![(x, y0), (x, y1)],
                        BLACK.stroke_width(1),
                    )))?
                    .label(name.to_string())
                    .legend(|(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], BLACK.stroke_width(1))
                    });
                }
                legend!(c, SeriesLabelPosition::LowerRight);
            }};
        }
        if log {
            body!(b.build_cartesian_2d((x0 * 0.9..x1 * 1.1).log_scale(), y0..y1)?);
        } else {
            body!(b.build_cartesian_2d(x0..x1, y0..y1)?);
        }
        Ok(())
    })
}

/// A point with an interval: x, mean, low, high; `y_bounds` as in `lines`.
pub fn intervals(
    title: &str,
    xdesc: &str,
    ydesc: &str,
    pts: &[(f64, f64, f64, f64)],
    y_bounds: Option<(f64, f64)>,
) -> String {
    if pts.is_empty() {
        return no_data_svg(900, 120, title);
    }
    let x0 = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x1 = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y0 = pts.iter().map(|p| p.2).fold(f64::INFINITY, f64::min);
    let y1 = pts.iter().map(|p| p.3).fold(f64::NEG_INFINITY, f64::max);
    if !(x0.is_finite() && x1 > 0.0 && y0.is_finite() && y1.is_finite()) {
        return error_svg(900, 500);
    }
    // A flat chart (every size at an ETTR of 1) gets a tenth of its value below, as `lines`.
    let pad = if y1 > y0 {
        ((y1 - y0) * 0.1).max(1e-3)
    } else if y1 != 0.0 {
        y1.abs() * 0.1
    } else {
        1.0
    };
    let (y0, y1) = y_axis(y0, y1, pad, y_bounds);
    if !(log_spans((x0 * 0.7).max(1e-9), x1 * 1.4) && spans(y0, y1)) {
        return error_svg(900, 500);
    }
    render(900, 500, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(((x0 * 0.7).max(1e-9)..x1 * 1.4).log_scale(), y0..y1)?;
        let yscale = y0.abs().max(y1.abs());
        c.configure_mesh()
            .x_desc(xdesc)
            .y_desc(ydesc)
            .x_label_formatter(&|v| tick(*v, *v))
            .y_label_formatter(&|v| tick(*v, yscale))
            .label_style((FONT, 14))
            .max_light_lines(0)
            .draw()?;
        c.draw_series(LineSeries::new(
            pts.iter().map(|p| (p.0, p.1)),
            color(0).stroke_width(2),
        ))?
        .label("mean")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color(0).stroke_width(2)));
        c.draw_series(
            pts.iter()
                .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, color(0).stroke_width(2), 10)),
        )?
        .label("95% interval")
        .legend(|(x, y)| PathElement::new(vec![(x + 7, y - 6), (x + 7, y + 6)], color(0)));
        legend!(c, SeriesLabelPosition::UpperRight);
        Ok(())
    })
}

/// A block on a timeline lane.
pub struct Block {
    pub lane: usize,
    pub start: f64,
    pub end: f64,
    pub kind: usize,
}

/// Lanes of blocks over time (a pipeline schedule); `kinds` names the colours.
pub fn timeline(
    title: &str,
    xdesc: &str,
    lanes: &[String],
    blocks: &[Block],
    kinds: &[&str],
) -> String {
    let n = lanes.len().max(1);
    let xmax = nice_max(blocks.iter().map(|b| b.end).fold(0.0, f64::max));
    render(900, 130 + 28 * n as u32, |root| {
        let mut c = row_chart(root, title, xdesc, xmax, lanes, 90)?;
        for (k, name) in kinds.iter().enumerate() {
            let col = color(k);
            c.draw_series(blocks.iter().filter(|b| b.kind == k).map(|b| {
                let row = n as i32 - 1 - b.lane as i32;
                let mut r = Rectangle::new(
                    [
                        (b.start, SegmentValue::Exact(row)),
                        (b.end, SegmentValue::Exact(row + 1)),
                    ],
                    col.filled(),
                );
                r.set_margin(3, 3, 0, 1);
                r
            }))?
            .label(name.to_string())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], col.filled()));
        }
        legend!(c, SeriesLabelPosition::UpperRight);
        Ok(())
    })
}

/// One row of the hierarchy picture: `count` boxes named `name`, `detail` beside them.
pub struct Layer {
    pub name: String,
    pub count: u64,
    pub detail: String,
}

/// The cluster drawn top-down: each switch tier and the scale-up domains as a row of boxes
/// (at most 16 drawn, the rest elided with the total count), rows joined by links.
pub fn hierarchy(title: &str, layers: &[Layer]) -> String {
    let rows = layers.len().max(1) as i32;
    let w = 1100;
    let row_h = 90;
    render(w as u32, (70 + rows * row_h) as u32, |root| {
        root.draw(&Text::new(
            title.to_string(),
            (w / 2, 12),
            TextStyle::from((FONT, 20).into_font()).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            )),
        ))?;
        let left = 20;
        let area_w = 520;
        let mut prev: Vec<(i32, i32)> = Vec::new();
        for (r, l) in layers.iter().enumerate() {
            let y = 50 + r as i32 * row_h;
            let shown = l.count.clamp(1, 16) as i32;
            let gap = 6;
            let bw = ((area_w - gap * (shown - 1)) / shown).clamp(8, 90);
            let span = bw * shown + gap * (shown - 1);
            let x0 = left + (area_w - span) / 2;
            let col = color(r);
            let mut centers = Vec::new();
            for i in 0..shown {
                let x = x0 + i * (bw + gap);
                centers.push((x + bw / 2, y));
                root.draw(&Rectangle::new(
                    [(x, y), (x + bw, y + 36)],
                    col.mix(0.85).filled(),
                ))?;
            }
            // Links to the row above (a sample: each box to the boxes above it).
            for (i, &(cx, cy)) in centers.iter().enumerate() {
                for (j, &(px, py)) in prev.iter().enumerate() {
                    if prev.len() <= 4 || centers.len() <= 4 || (i + j) % 3 == 0 {
                        root.draw(&PathElement::new(
                            vec![(cx, cy), (px, py + 36)],
                            BLACK.mix(0.25).stroke_width(1),
                        ))?;
                    }
                }
            }
            let more = if l.count > 16 { " (16 drawn)" } else { "" };
            root.draw(&Text::new(
                format!("{} × {}{more}", l.name, grouped(l.count as f64, 0)),
                (left + area_w + 20, y + 4),
                (FONT, 16).into_font().color(&BLACK),
            ))?;
            root.draw(&Text::new(
                l.detail.clone(),
                (left + area_w + 20, y + 24),
                (FONT, 13).into_font().color(&color(8)),
            ))?;
            prev = centers;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text nodes of an SVG (labels, ticks, legend), without its coordinates.
    fn texts(svg: &str) -> Vec<String> {
        svg.split('>')
            .filter_map(|t| t.split('<').next())
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Guards the axis labels and legends, which printed the float's every digit: ticks
    /// were plotters' `{}` (`1000000000.0` on a checkpoint-interval axis, 300 digits on an
    /// axis of 1e289 days) and a bar's legend `{:.3}` (300 digits for a 1e300 part).
    #[test]
    fn axis_labels_and_legends_print_numbers_as_the_tables_do() {
        let one = |pts: Vec<(f64, f64)>| {
            vec![Series {
                name: "a".into(),
                points: pts,
            }]
        };
        let t = texts(&lines(
            "t",
            "x (s)",
            "y",
            &one(vec![(1e3, 0.5), (1e9, 0.9)]),
            true,
            None,
            None,
        ));
        assert!(t.iter().any(|x| x == "1,000,000,000"), "{t:?}");
        assert!(!t.iter().any(|x| x.ends_with(".0")), "{t:?}");
        let p = |x, y| Point {
            x,
            y,
            front: true,
            label: "a".into(),
        };
        let t = texts(&front(
            "t",
            "days",
            "M USD",
            &[p(2.5e289, 7e290), p(1e289, 9e290)],
            Some(0),
        ));
        assert!(t.iter().any(|x| x == "1e289"), "{t:?}");
        let t = texts(&stacked_bar(
            "t",
            "M USD",
            &[("a".into(), 1e300), ("b".into(), 1.0)],
            Some(("cap", 1e300)),
        ));
        assert!(
            t.iter().any(|x| x == "a: 1.000e300 M USD (100.0%)"),
            "{t:?}"
        );
        assert!(t.iter().any(|x| x == "cap: 1.000e300 M USD"), "{t:?}");
        let t = texts(&hierarchy(
            "h",
            &[Layer {
                name: "leaf".into(),
                count: 4096,
                detail: String::new(),
            }],
        ));
        assert!(t.iter().any(|x| x == "leaf × 4,096 (16 drawn)"), "{t:?}");
        for svg in [
            lines(
                "t",
                "x",
                "y",
                &one(vec![(0.0, 1e300), (1.0, 2e300)]),
                false,
                None,
                None,
            ),
            intervals(
                "t",
                "x",
                "y",
                &[(1e3, 1e300, 0.0, 2e300), (1e6, 1.0, 0.0, 2e300)],
                None,
            ),
            hbars("t", "u", &[("a".into(), 1e300)], None),
            timeline(
                "t",
                "s",
                &["s".into()],
                &[Block {
                    lane: 0,
                    start: 0.0,
                    end: 1e300,
                    kind: 0,
                }],
                &["f"],
            ),
        ] {
            let t = texts(&svg);
            assert!(t.iter().all(|x| x.len() < 40), "{t:?}");
        }
    }

    /// A number attribute of an SVG element: `name="…"` in `el`.
    fn attr(el: &str, name: &str) -> Option<f64> {
        let at = el.find(&format!(" {name}=\""))? + name.len() + 3;
        el[at..at + el[at..].find('"')?].parse().ok()
    }

    /// The boxes of the SVG's text elements whose text is one of `labels`: where the
    /// browser draws them (`label_size` at the written font size, which plotters scaled by
    /// 1/1.24; plotters anchors a text at its top left, and `front` writes it one pixel in).
    fn label_boxes(svg: &str, labels: &[&str]) -> Vec<(String, Rect)> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let (el, rest) = t.split_once('>')?;
                let text = rest.split('<').next()?.trim();
                if !labels.contains(&text) {
                    return None;
                }
                let (x, y) = (attr(el, "x")? as i32, attr(el, "y")? as i32);
                let (w, h) = label_size(text, attr(el, "font-size")? * 1.24);
                let b = Rect {
                    x0: x - 1,
                    y0: y - 1,
                    x1: x - 1 + w,
                    y1: y - 1 + h,
                };
                Some((text.to_string(), b))
            })
            .collect()
    }

    /// Guards the plan report's time-versus-cost chart: every label of the front was drawn
    /// at its point, so close points' labels overlapped each other and the markers
    /// (`myriad plan examples/plan-llama3-70b.yaml`: 2048 × h200, 2048 × h100-sxm and the
    /// chosen 2048 × mi300x ran into one another). No label's box now meets another's, a
    /// marker, the legend, or the chart's edge, on that plan's candidates and on a front
    /// of points packed closer still.
    #[test]
    fn front_labels_do_not_overlap() {
        let example: Vec<Point> = [
            (77.918, 87.341, true, "2048 × h100-sxm"),
            (41.748, 186.278, false, "4096 × h100-sxm"),
            (22.784, 372.557, false, "8192 × h100-sxm"),
            (13.405, 745.114, false, "16384 × h100-sxm"),
            (76.509, 100.141, true, "2048 × h200"),
            (41.036, 211.878, false, "4096 × h200"),
            (22.877, 423.757, false, "8192 × h200"),
            (13.365, 847.514, false, "16384 × h200"),
            (41.936, 112.941, false, "2048 × b200"),
            (23.486, 237.478, false, "4096 × b200"),
            (13.509, 474.957, false, "8192 × b200"),
            (8.488, 949.914, false, "16384 × b200"),
            (35.088, 103.753, true, "2048 × gb200"),
            (18.434, 203.821, true, "4096 × gb200"),
            (10.197, 407.542, true, "8192 × gb200"),
            (5.964, 814.985, true, "16384 × gb200"),
            (85.433, 52.954, true, "2048 × mi300x"),
            (46.331, 117.120, false, "4096 × mi300x"),
            (25.909, 234.240, false, "8192 × mi300x"),
            (14.993, 468.480, false, "16384 × mi300x"),
        ]
        .into_iter()
        .map(|(x, y, front, l)| Point {
            x,
            y,
            front,
            label: l.into(),
        })
        .collect();
        // Twelve front points a day and a few M USD apart.
        let packed: Vec<Point> = (0..12)
            .map(|i| Point {
                x: 60.0 + i as f64,
                y: 100.0 - 4.0 * i as f64,
                front: true,
                label: format!("{} × h100-sxm", 1024 << (i % 5)),
            })
            .collect();
        for (pts, chosen, all_drawn) in [(&example, 16, true), (&packed, 11, false)] {
            let svg = front("Time versus cost", "days", "M USD", pts, Some(chosen));
            let labels: Vec<&str> = pts
                .iter()
                .filter(|p| p.front)
                .map(|p| p.label.as_str())
                .collect();
            let boxes = label_boxes(&svg, &labels);
            if all_drawn {
                assert_eq!(boxes.len(), labels.len(), "{boxes:?}");
            } else {
                assert!(boxes.len() >= labels.len() / 2, "{boxes:?}");
            }
            // The chosen point is labelled first: it always has one.
            assert!(boxes.iter().any(|b| b.0 == pts[chosen].label), "{boxes:?}");
            let markers: Vec<Rect> = svg
                .split("<circle")
                .skip(1)
                .filter_map(|c| {
                    let (x, y, r) = (attr(c, "cx")?, attr(c, "cy")?, attr(c, "r")?);
                    Some(Rect::around((x as i32, y as i32), r as i32))
                })
                .collect();
            let legend = svg
                .split("<rect")
                .skip(1)
                .find(|r| r.contains("opacity=\"0.9\""))
                .map(|r| {
                    let (x, y) = (attr(r, "x").unwrap() as i32, attr(r, "y").unwrap() as i32);
                    let (w, h) = (attr(r, "width").unwrap(), attr(r, "height").unwrap());
                    Rect {
                        x0: x,
                        y0: y,
                        x1: x + w as i32,
                        y1: y + h as i32,
                    }
                })
                .expect("legend");
            let chart = Rect {
                x0: 0,
                y0: 0,
                x1: 900,
                y1: 560,
            };
            for (i, (l, b)) in boxes.iter().enumerate() {
                for (k, c) in &boxes[i + 1..] {
                    assert!(!b.intersects(c), "{l} {b:?} overlaps {k} {c:?}");
                }
                assert!(b.inside(&chart), "{l} {b:?}");
                assert!(!b.intersects(&legend), "{l} {b:?} legend {legend:?}");
                for m in &markers {
                    assert!(!b.intersects(m), "{l} {b:?} covers the marker {m:?}");
                }
            }
        }
    }

    /// `place_labels` itself: nothing placed meets another label, an obstacle or the edge,
    /// and a label finds room near its point when there is some.
    #[test]
    fn placed_labels_keep_apart() {
        let area = Rect {
            x0: 0,
            y0: 0,
            x1: 400,
            y1: 300,
        };
        let anchors: Vec<(i32, i32)> = (0..30).map(|i| (150 + 3 * i, 150 + (i % 3))).collect();
        let sizes = vec![(60, 12); anchors.len()];
        let obstacles: Vec<Rect> = anchors.iter().map(|&a| Rect::around(a, 5)).collect();
        let boxes = place_labels(&anchors, &sizes, area, &obstacles, &[]);
        let placed: Vec<Rect> = boxes.iter().flatten().copied().collect();
        assert!(placed.len() >= 10, "{placed:?}");
        for (i, b) in placed.iter().enumerate() {
            assert!(b.inside(&area));
            assert!(!obstacles.iter().any(|o| o.intersects(b)));
            assert!(!placed[i + 1..].iter().any(|c| c.intersects(b)));
        }
        // Alone, a label sits just right of its point.
        let one = place_labels(&[(100, 100)], &[(60, 12)], area, &[], &[]);
        assert_eq!(
            one,
            [Some(Rect {
                x0: 107,
                y0: 94,
                x1: 167,
                y1: 106
            })]
        );
    }

    /// Guards flat series: all-zero queue lengths drew an axis from -1e-9 to 1e-9 jobs.
    #[test]
    fn a_flat_series_gets_a_readable_axis() {
        let flat = |y: f64| {
            texts(&lines(
                "t",
                "time (hours)",
                "jobs queued",
                &[Series {
                    name: "a".into(),
                    points: vec![(0.0, y), (10.0, y)],
                }],
                false,
                None,
                None,
            ))
        };
        let t = flat(0.0);
        assert!(t.iter().any(|x| x == "1"), "{t:?}");
        assert!(
            !t.iter().any(|x| x.contains("e-") || x.starts_with('-')),
            "{t:?}"
        );
        let t = flat(0.994);
        assert!(t.iter().any(|x| x == "1"), "{t:?}");
    }

    /// Guards charts given nothing: `lines` drew axes from 0 to 1 and `hbars`, `front` an
    /// empty frame, as if they held data; `intervals` said it "could not be drawn".
    #[test]
    fn charts_without_data_say_so() {
        for svg in [
            lines(
                "T",
                "x",
                "y",
                &[Series {
                    name: "a".into(),
                    points: vec![],
                }],
                false,
                None,
                None,
            ),
            lines("T", "x", "y", &[], true, None, None),
            hbars("T", "u", &[], None),
            front("T", "x", "y", &[], None),
            intervals("T", "x", "y", &[], None),
        ] {
            assert_eq!(texts(&svg), ["T: no data to draw"]);
        }
    }

    /// Guards values near f64::MAX (any JSON number reaches the reports, e.g. from Python's
    /// `report()`): the axis ranges overflowed to infinity and plotters looped forever. A
    /// chart is drawn, or the "could not be drawn" placeholder, but the call returns.
    #[test]
    fn charts_of_huge_values_return() {
        let big = 1.7e308;
        let one = |pts: Vec<(f64, f64)>| {
            vec![Series {
                name: "a".into(),
                points: pts,
            }]
        };
        hbars("t", "u", &[("a".into(), big)], None);
        timeline(
            "t",
            "x",
            &["s".into()],
            &[Block {
                lane: 0,
                start: 0.0,
                end: big,
                kind: 0,
            }],
            &["f"],
        );
        let p = |x, y| Point {
            x,
            y,
            front: true,
            label: "a".into(),
        };
        front("t", "x", "y", &[p(big, 1.0), p(1.0, big)], Some(0));
        lines(
            "t",
            "x",
            "y",
            &one(vec![(-big, 0.0), (big, 1.0)]),
            false,
            None,
            None,
        );
        lines(
            "t",
            "x",
            "y",
            &one(vec![(0.0, 0.0), (1.0, big)]),
            false,
            None,
            None,
        );
        lines(
            "t",
            "x",
            "y",
            &one(vec![(1.0, 0.0), (1.5e308, 1.0)]),
            true,
            None,
            None,
        );
        intervals(
            "t",
            "x",
            "y",
            &[(1.0, 0.0, -big, big), (big, 0.5, 0.0, 1.0)],
            None,
        );
    }
}
