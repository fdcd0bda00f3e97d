//! Plots of the results, as SVG or PNG (by the file's extension). Text uses a
//! font compiled into the binary, so no system font library is needed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::bandwidth::BandwidthRow;
use super::chunks::ChunkRow;
use super::BenchResult;

/// The bundled font's family name ([`register_font`]).
pub const FONT: &str = "sans-serif";
/// Width of a panel's plot; its legend is to the right.
const LEGEND_X: u32 = 800;
const MEMCPY_COLOR: RGBColor = RGBColor(40, 40, 40);

/// One line of a panel. The x values are plotted on a log₂ axis.
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
    color: RGBColor,
    /// Reference lines (raw transport, memcpy) are dashed.
    dashed: bool,
    markers: bool,
}

struct Panel {
    title: String,
    series: Vec<Series>,
}

struct Figure<'a> {
    caption: String,
    x_desc: &'a str,
    y_desc: &'a str,
    /// Label of a tick at log₂ x.
    x_label: &'a dyn Fn(f64) -> String,
    panels: Vec<Panel>,
}

fn transport_color(transport: &str) -> RGBColor {
    match transport {
        "tcp" => RGBColor(31, 119, 180),
        "csr" => RGBColor(214, 39, 40),
        _ => RGBColor(44, 160, 44),
    }
}

/// Pinned memory in a darker shade of its transport's color.
fn shade(c: RGBColor, memory: &str) -> RGBColor {
    if memory == "pinned" {
        RGBColor(c.0 / 2, c.1 / 2, c.2 / 2)
    } else {
        c
    }
}

/// The image formats plots are written in, by file extension.
pub enum Kind {
    Svg,
    Png,
}

/// The format of `path`, from its extension.
pub fn kind(path: &Path) -> BenchResult<Kind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Kind::Svg),
        Some(e) if e.eq_ignore_ascii_case("png") => Ok(Kind::Png),
        _ => Err(format!(
            "cannot plot into {}: the file name must end in .svg or .png",
            path.display()
        )
        .into()),
    }
}

/// Fails early (before measuring) on a file name that cannot be plotted into.
pub(crate) fn check_path(path: &Path) -> BenchResult<()> {
    kind(path).map(|_| ())
}

/// `2^v` bytes as a short size: `4 KiB`, `32 MiB`.
fn size_label(v: f64) -> String {
    let b = 2f64.powf(v).round() as u64;
    match b {
        b if b >= 1 << 30 && b.is_multiple_of(1 << 30) => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b.is_multiple_of(1 << 20) => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b.is_multiple_of(1 << 10) => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// Bandwidth against transfer size: one panel per direction, one line per
/// transport and memory kind (pinned with markers), the raw transport of each
/// module and the host's memcpy dashed.
pub(crate) fn bandwidth(path: &Path, rows: &[BandwidthRow]) -> BenchResult<()> {
    let mut panels = Vec::new();
    for dir in ["h2d", "d2h", "d2d"] {
        let of_dir: Vec<&BandwidthRow> = rows.iter().filter(|r| r.direction == dir).collect();
        if of_dir.is_empty() {
            continue;
        }
        let mut lines: BTreeMap<(String, &str), Vec<(f64, f64)>> = BTreeMap::new();
        let mut raw: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
        let mut memcpy: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for r in &of_dir {
            lines
                .entry((r.transport.clone(), r.memory))
                .or_default()
                .push((r.bytes as f64, r.gb_per_s));
            if let Some(v) = r.raw_gb_per_s {
                // The raw transport does not depend on the memory kind: the first one measured.
                raw.entry(r.transport.clone())
                    .or_default()
                    .entry(r.bytes)
                    .or_insert(v);
            }
            memcpy.entry(r.bytes).or_default().push(r.memcpy_gb_per_s);
        }
        let mut series: Vec<Series> = lines
            .into_iter()
            .map(|((transport, memory), points)| Series {
                label: format!("{transport} {memory}"),
                color: shade(transport_color(&transport), memory),
                points,
                dashed: false,
                markers: memory == "pinned",
            })
            .collect();
        series.extend(raw.into_iter().map(|(transport, points)| Series {
            label: format!("{transport} raw"),
            color: transport_color(&transport),
            points: points.into_iter().map(|(b, v)| (b as f64, v)).collect(),
            dashed: true,
            markers: false,
        }));
        series.push(Series {
            label: "host memcpy".into(),
            color: MEMCPY_COLOR,
            points: mean_points(memcpy),
            dashed: true,
            markers: false,
        });
        let title = match dir {
            "h2d" => "host to device",
            "d2h" => "device to host",
            _ => "device to device",
        };
        panels.push(Panel {
            title: title.into(),
            series,
        });
    }
    render(
        path,
        &Figure {
            caption: "rcud bench bandwidth".into(),
            x_desc: "transfer size",
            y_desc: "GB/s",
            x_label: &size_label,
            panels,
        },
    )
}

/// Bandwidth against staging chunk count, one line per module (the mean of
/// pageable and pinned, both directions), its raw channel and memcpy dashed.
pub(crate) fn chunks(path: &Path, rows: &[ChunkRow], bytes: u64) -> BenchResult<()> {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut raw: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut memcpy: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in rows {
        let x = r.chunks_used.unwrap_or(r.chunks) as f64;
        if let Some(v) = r.mb_per_s {
            lines.entry(r.transport.clone()).or_default().push((x, v));
        }
        if let Some(v) = r.raw_mb_per_s {
            raw.entry(r.transport.clone()).or_default().push((x, v));
        }
        if let Some(v) = r.memcpy_mb_per_s {
            memcpy.entry(x as u64).or_default().push(v);
        }
    }
    let mut series: Vec<Series> = lines
        .into_iter()
        .map(|(t, points)| Series {
            label: format!("{t} (rcud)"),
            color: transport_color(&t),
            points,
            dashed: false,
            markers: true,
        })
        .collect();
    series.extend(raw.into_iter().map(|(t, points)| Series {
        label: format!("{t} raw"),
        color: transport_color(&t),
        points,
        dashed: true,
        markers: false,
    }));
    series.push(Series {
        label: "host memcpy".into(),
        color: MEMCPY_COLOR,
        points: mean_points(memcpy),
        dashed: true,
        markers: false,
    });
    render(
        path,
        &Figure {
            caption: format!(
                "rcud bench chunks: {} transfers, mean of pageable and pinned, H2D and D2H",
                size_label((bytes as f64).log2())
            ),
            x_desc: "staging chunks per direction",
            y_desc: "MB/s",
            x_label: &|v| format!("{}", 2f64.powf(v).round()),
            panels: vec![Panel {
                title: String::new(),
                series,
            }],
        },
    )
}

fn mean_points(by_x: BTreeMap<u64, Vec<f64>>) -> Vec<(f64, f64)> {
    by_x.into_iter()
        .map(|(x, v)| (x as f64, v.iter().sum::<f64>() / v.len().max(1) as f64))
        .collect()
}

/// Loads the font compiled into the binary, once per process.
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let loaded = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        );
        if loaded.is_err() {
            tracing::warn!("the bundled plot font did not load: labels may be missing");
        }
    });
}

fn render(path: &Path, fig: &Figure<'_>) -> BenchResult<()> {
    register_font();
    let size = (LEGEND_X + 180, 60 + 380 * fig.panels.len().max(1) as u32);
    match kind(path)? {
        Kind::Svg => draw(SVGBackend::new(path, size).into_drawing_area(), fig),
        Kind::Png => draw(BitMapBackend::new(path, size).into_drawing_area(), fig),
    }
    .map_err(|e| format!("plotting into {}: {e}", path.display()).into())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, fig: &Figure<'_>) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(&fig.caption, (FONT, 22)).map_err(e)?;
    let areas = root.split_evenly((fig.panels.len().max(1), 1));
    for (area, panel) in areas.iter().zip(&fig.panels) {
        // The legend beside the plot, where it hides no line.
        let (area, legend_area) = area.split_horizontally(LEGEND_X);
        let all = panel.series.iter().flat_map(|s| &s.points);
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y0, mut y1) = (f64::INFINITY, 0f64);
        for &(x, y) in all.filter(|p| p.1 > 0.0) {
            let lx = x.max(1.0).log2();
            x0 = x0.min(lx);
            x1 = x1.max(lx);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            (x0, x1, y0, y1) = (0.0, 1.0, 1.0, 10.0);
        }
        if x1 - x0 < 1.0 {
            (x0, x1) = (x0 - 0.5, x1 + 0.5);
        }
        // Bandwidth often spans orders of magnitude between small and large
        // copies (and memcpy of a cache-resident size): a log axis then shows
        // them all; a narrow range reads better on a linear one from zero.
        if y1 / y0 > 10.0 {
            plot_panel(
                &area,
                fig,
                panel,
                x0..x1,
                (y0 * 0.8..y1 * 1.25).log_scale(),
                true,
            )
        } else {
            plot_panel(&area, fig, panel, x0..x1, 0.0..y1 * 1.1, false)
        }
        .map_err(e)?;
        legend(&legend_area, &panel.series).map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

fn plot_panel<DB: DrawingBackend, Y>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure<'_>,
    panel: &Panel,
    x: std::ops::Range<f64>,
    y: Y,
    log_y: bool,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let ticks = ((x.end - x.start).round() as usize + 1).clamp(2, 12);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)?;
    let scale = if log_y { " (log scale)" } else { "" };
    chart
        .configure_mesh()
        .x_labels(ticks)
        .x_label_formatter(&|v| (fig.x_label)(*v))
        .x_desc(format!("{} (log scale)", fig.x_desc))
        .y_desc(format!("{}{scale}", fig.y_desc))
        .y_label_formatter(&|v| format!("{v}"))
        .label_style((FONT, 13))
        .draw()?;
    for s in &panel.series {
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.1 > 0.0)
            .map(|&(x, y)| (x.max(1.0).log2(), y))
            .collect();
        let style = s.color.stroke_width(2);
        if s.dashed {
            chart.draw_series(DashedLineSeries::new(points, 8, 5, style))?;
        } else if s.markers {
            chart.draw_series(LineSeries::new(points, style).point_size(4))?;
        } else {
            chart.draw_series(LineSeries::new(points, style))?;
        }
    }
    Ok(())
}

/// One sample line (two segments with a gap when dashed, a marker when the
/// series has markers) and its label per series, top down.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (i, s) in series.iter().enumerate() {
        let y = 50 + 20 * i as i32;
        let gap = if s.dashed { 5 } else { 0 };
        let line = s.color.stroke_width(2);
        area.draw(&PathElement::new(vec![(4, y), (13 - gap, y)], line))?;
        area.draw(&PathElement::new(vec![(13 + gap, y), (23, y)], line))?;
        if s.markers {
            area.draw(&Circle::new((13, y), 4, s.color.stroke_width(2)))?;
        }
        area.draw(&Text::new(
            s.label.clone(),
            (30, y - 7),
            (FONT, 13).into_font().color(&BLACK),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_label_in_binary_units() {
        assert_eq!(size_label(10.0), "1 KiB");
        assert_eq!(size_label(25.0), "32 MiB");
        assert_eq!(size_label(3.0), "8 B");
        assert!(check_path(Path::new("a.svg")).is_ok());
        assert!(check_path(Path::new("a.PNG")).is_ok());
        assert!(check_path(Path::new("a.pdf")).is_err());
    }
}
