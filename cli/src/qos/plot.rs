//! The sawtooth plot, as SVG or PNG (by the file's extension). Text uses a
//! font compiled into the binary, registered once, so no system font library
//! is needed (the same approach as the benchmark plots).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{QosResult, SawtoothReport};
use rcud_bench::plot::{kind, register_font, Kind, FONT};

const FORMULA: RGBColor = RGBColor(31, 119, 180);
const SIMULATED: RGBColor = RGBColor(255, 127, 14);
const MEASURED: RGBColor = RGBColor(214, 39, 40);
const STABLE: RGBColor = RGBColor(120, 120, 120);

/// Fails early (before simulating) on a file name that cannot be plotted into.
pub(super) fn check_path(path: &Path) -> QosResult<()> {
    kind(path).map(|_| ())
}

/// Ratio against L: the formula as a line, the simulation as dots, the
/// paper's measurements (when it has some for this Q and H) as large dots,
/// and the stable value dashed.
pub(super) fn sawtooth(path: &Path, r: &SawtoothReport) -> QosResult<()> {
    register_font();
    let size = (960, 540);
    match kind(path)? {
        Kind::Svg => draw(SVGBackend::new(path, size).into_drawing_area(), r),
        Kind::Png => draw(BitMapBackend::new(path, size).into_drawing_area(), r),
    }
    .map_err(|e| format!("plotting into {}: {e}", path.display()).into())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, r: &SawtoothReport) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let x_min = r.points.first().map_or(0.0, |p| p.low as f64 - 1.0);
    let x_max = r.points.last().map_or(1.0, |p| p.low as f64 + 1.0);
    let y_max = r
        .points
        .iter()
        .flat_map(|p| [p.simulated, p.formula])
        .chain(r.measured.iter().map(|m| m.1))
        .fold(0.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "High/low bandwidth ratio against the low weight L (Q = {}, H = {}, MTU {})",
                r.limit, r.high, r.mtu
            ),
            (FONT, 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(x_min..x_max, 0f64..y_max.max(1.0))
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("low-priority weight L (64-byte units)")
        .y_desc("high / low bandwidth")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;

    if r.stable > 0.0 {
        chart
            .draw_series(DashedLineSeries::new(
                [(x_min, r.stable), (x_max, r.stable)],
                6,
                4,
                STABLE.stroke_width(1),
            ))
            .map_err(e)?
            .label(format!(
                "{} (= Q·4096/MTU), reached every {} of L",
                r.stable, r.period
            ))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], STABLE.stroke_width(1)));
    }
    chart
        .draw_series(LineSeries::new(
            r.points.iter().map(|p| (p.low as f64, p.formula)),
            FORMULA.stroke_width(2),
        ))
        .map_err(e)?
        .label("(H/L)·max(1, floor(2QL/H))")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], FORMULA.stroke_width(2)));
    chart
        .draw_series(
            r.points
                .iter()
                .map(|p| Circle::new((p.low as f64, p.simulated), 3, SIMULATED.filled())),
        )
        .map_err(e)?
        .label(format!("packet-level arbiter ({}-byte packets)", r.packet))
        .legend(|(x, y)| Circle::new((x + 10, y), 3, SIMULATED.filled()));
    if !r.measured.is_empty() {
        chart
            .draw_series(
                r.measured
                    .iter()
                    .map(|&(l, m)| Cross::new((l as f64, m), 7, MEASURED.stroke_width(3))),
            )
            .map_err(e)?
            .label("measured on ConnectX-2 (seed 004, Table 2)")
            .legend(|(x, y)| Cross::new((x + 10, y), 5, MEASURED.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(200, 200, 200))
        .label_font((FONT, 14))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}
