//! Drawing: stacked line panels and a histogram, as PNG files (plotters' bitmap backend).

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::register_font;

/// Width and height of every chart (pixels).
pub(crate) const SIZE: (u32, u32) = (1200, 900);

/// A drawing failure, as text (plotters' error types are generic over the backend).
pub(super) type Drawn = Result<(), String>;

/// The family every label uses: DejaVu Sans, compiled in, so no system font is needed.
const FONT: &str = "sans-serif";

fn font_registered() -> Drawn {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok());
    ok.then_some(())
        .ok_or_else(|| "the built-in font does not load".to_string())
}

/// One panel of line series over a shared x axis.
pub(super) struct Panel<'a> {
    /// Caption above the panel.
    pub(super) title: &'a str,
    /// Y axis label.
    pub(super) y_label: &'a str,
    /// X values (time, s).
    pub(super) x: &'a [f64],
    /// Named series, each as long as `x`.
    pub(super) series: Vec<(&'a str, &'a [f64])>,
}

/// Values beyond this magnitude are left off the axes, so that a padded range's width stays
/// finite (a quarter of the largest `f64`).
const AXIS_LIMIT: f64 = f64::MAX / 4.0;

/// The range of `values` within [`AXIS_LIMIT`], padded by 5% (a unit-wide range around a
/// constant).
fn padded(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.abs() <= AXIS_LIMIT)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    let pad = if hi > lo {
        0.05 * (hi - lo)
    } else {
        0.5 * lo.abs().max(1.0)
    };
    lo - pad..hi + pad
}

/// A y tick label on an axis `span` long: plain for moderate magnitudes, scientific otherwise,
/// 0 for round-off.
fn tick(v: f64, span: f64) -> String {
    let a = v.abs();
    if a < 1e-9 * span {
        "0".into()
    } else if (1e-2..1e5).contains(&a) {
        let plain = format!("{v:.3}");
        plain
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{v:.2e}")
    }
}

/// Draws `panels` stacked top to bottom into the PNG `path`, time on every x axis.
pub(super) fn lines(path: &Path, panels: &[Panel<'_>]) -> Drawn {
    font_registered()?;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let x = padded(panel.x.iter().copied());
        let y = padded(panel.series.iter().flat_map(|(_, ys)| ys.iter().copied()));
        let span = y.end - y.start;
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title, (FONT, 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(90)
            .build_cartesian_2d(x, y)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(panel.y_label)
            .light_line_style(TRANSPARENT)
            .label_style((FONT, 14))
            .y_label_formatter(&|v| tick(*v, span))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (name, ys)) in panel.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points = panel
                .x
                .iter()
                .zip(ys.iter())
                .filter(|(t, v)| t.is_finite() && v.is_finite())
                .map(|(&t, &v)| (t, v));
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(*name)
                .legend(move |(lx, ly)| {
                    PathElement::new([(lx, ly), (lx + 20, ly)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// One histogram bar: `[from, to)` on the x axis and its height.
pub(super) struct Bar {
    /// Left edge.
    pub(super) from: f64,
    /// Right edge.
    pub(super) to: f64,
    /// Height.
    pub(super) height: f64,
}

/// Draws `bars` into the PNG `path`: the x axis is log10 of a quantity (labels `1e-k`), the y
/// axis logarithmic.
pub(super) fn log_histogram(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    bars: &[Bar],
) -> Drawn {
    font_registered()?;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    // The occupied bins, and a decade either side.
    let occupied = bars.iter().filter(|b| b.height > 0.0);
    let x = padded(occupied.flat_map(|b| [b.from - 1.0, b.to + 1.0]));
    // Log heights, so that the few vertices in deep layers show beside the many at the elastic
    // clock; bars stand on a floor a decade below the smallest.
    let top = bars
        .iter()
        .map(|b| b.height)
        .fold(0.0, f64::max)
        .max(1e-300);
    let floor = 0.1
        * bars
            .iter()
            .map(|b| b.height)
            .filter(|&h| h > 0.0)
            .fold(top, f64::min);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 24))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x, (floor..2.0 * top).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(TRANSPARENT)
        .label_style((FONT, 16))
        .x_label_formatter(&|v| format!("{:.0e}", 10f64.powf(*v)))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()
        .map_err(|e| e.to_string())?;
    let fill = Palette99::pick(0).to_rgba();
    chart
        .draw_series(
            bars.iter()
                .filter(|b| b.height > 0.0)
                .map(|b| Rectangle::new([(b.from, floor), (b.to, b.height)], fill.filled())),
        )
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_padded_range_is_finite_and_holds_the_values_within_the_axis_limit() {
        for values in [
            vec![-f64::MAX, f64::MAX, 1.0],
            vec![f64::MAX, f64::INFINITY, f64::NAN],
            vec![-AXIS_LIMIT, AXIS_LIMIT],
            vec![0.0, 1e-320],
            vec![3.0],
        ] {
            let r = padded(values.iter().copied());
            assert!(
                (r.end - r.start).is_finite() && r.end > r.start,
                "{values:?}: {r:?}"
            );
            for &v in values.iter().filter(|v| v.abs() <= AXIS_LIMIT) {
                assert!(r.contains(&v), "{v} outside {r:?}");
            }
        }
        assert_eq!(padded([f64::MAX].into_iter()), 0.0..1.0, "nothing to draw");
    }
}
