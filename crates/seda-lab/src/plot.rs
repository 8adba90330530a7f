//! Line charts as PNG and SVG.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// `(t, f(interval))` over a load report's intervals, leaving out those `f` has no value for
/// (a percentile of an interval with no completions).
pub fn points_over(
    report: &seda_load::Report,
    f: impl Fn(&seda_load::record::IntervalStats) -> Option<f64>,
) -> Vec<(f64, f64)> {
    report
        .series
        .iter()
        .filter_map(|i| f(i).map(|v| (i.t_s, v)))
        .collect()
}

/// One named line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A chart of one or more lines sharing axes.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the chart.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
}

impl Series {
    /// The line `name` through `points`.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
        }
    }

    /// The line `name` of `f` over a load report's intervals ([`points_over`]).
    pub fn over(
        name: impl Into<String>,
        report: &seda_load::Report,
        f: impl Fn(&seda_load::record::IntervalStats) -> Option<f64>,
    ) -> Series {
        Series::new(name, points_over(report, f))
    }
}

impl LineChart {
    /// A chart of `series` over a run's time, in seconds.
    pub fn over_time(
        title: impl Into<String>,
        y_label: impl Into<String>,
        series: Vec<Series>,
    ) -> LineChart {
        LineChart {
            title: title.into(),
            x_label: "time (s)".into(),
            y_label: y_label.into(),
            series,
        }
    }

    /// A chart over time of `f` over each `(name, report)` of `runs`, a line each.
    pub fn over_runs<'a>(
        title: impl Into<String>,
        y_label: impl Into<String>,
        runs: impl IntoIterator<Item = (&'a str, &'a seda_load::Report)>,
        f: impl Fn(&seda_load::record::IntervalStats) -> Option<f64>,
    ) -> LineChart {
        let series = runs
            .into_iter()
            .map(|(name, report)| Series::over(name, report, &f))
            .collect();
        LineChart::over_time(title, y_label, series)
    }

    /// The completed requests per second of each `(name, report)` of `runs`.
    pub fn throughput<'a>(
        runs: impl IntoIterator<Item = (&'a str, &'a seda_load::Report)>,
    ) -> LineChart {
        LineChart::over_runs(
            "Throughput (completed requests/s)",
            "requests/s",
            runs,
            |i| Some(i.throughput_per_s),
        )
    }

    /// A chart over time of one line, `name`'s `points`.
    pub fn one_line(
        title: impl Into<String>,
        y_label: impl Into<String>,
        name: impl Into<String>,
        points: Vec<(f64, f64)>,
    ) -> LineChart {
        LineChart::over_time(title, y_label, vec![Series::new(name, points)])
    }
}

/// Why a chart could not be written.
#[derive(Debug)]
pub struct PlotError(String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot draw the chart: {}", self.0)
    }
}

impl std::error::Error for PlotError {}

fn err(e: impl fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

const SIZE: (u32, u32) = (900, 500);
/// Tableau's ten, then two more: a chart of every controller and a reference line needs 14
/// before a colour repeats.
const COLORS: [RGBColor; 14] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xaa, 0x88, 0x00),
    RGBColor(0x55, 0x00, 0x88),
    RGBColor(0x00, 0x55, 0x55),
];

/// Registers the bundled font once (bitmap text needs a font; none is read from the system).
fn register_bundled_font() -> Result<(), PlotError> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| PlotError("the bundled DejaVu Sans font did not load".into()));
    });
    result
}

impl LineChart {
    /// Writes `<stem>.png` and `<stem>.svg` (creating the directory) and returns both paths.
    pub fn write(&self, stem: impl AsRef<Path>) -> Result<[PathBuf; 2], PlotError> {
        register_bundled_font()?;
        let stem = stem.as_ref();
        if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        }
        let png = stem.with_extension("png");
        let svg = stem.with_extension("svg");
        self.draw(BitMapBackend::new(&png, SIZE).into_drawing_area())?;
        self.draw(SVGBackend::new(&svg, SIZE).into_drawing_area())?;
        Ok([png, svg])
    }

    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        let pts = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if y1 <= 0.0 {
            y1 = 1.0;
        }
        ((x0, x1), (0.0, y1 * 1.05))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        area.fill(&WHITE).map_err(err)?;
        let ((x0, x1), (y0, y1)) = self.bounds();
        let mut chart = ChartBuilder::on(&area)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        for (i, s) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite());
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(err)?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        area.present().map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_png_and_svg_with_text() {
        let dir = std::env::temp_dir().join(format!("seda-lab-plot-{}", std::process::id()));
        let chart = LineChart {
            title: "p90 <response> & time".into(),
            x_label: "t (s)".into(),
            y_label: "ms".into(),
            series: vec![
                Series {
                    name: "bounded".into(),
                    points: vec![(1.0, 40.0), (2.0, 38.0), (3.0, f64::NAN)],
                },
                Series {
                    name: "unbounded".into(),
                    points: vec![(1.0, 400.0), (2.0, 900.0)],
                },
            ],
        };
        let [png, svg] = chart.write(dir.join("chart")).unwrap();
        let png_bytes = std::fs::read(&png).unwrap();
        assert_eq!(&png_bytes[1..4], b"PNG");
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        assert!(
            svg_text.contains("unbounded") && svg_text.contains("&lt;response&gt;"),
            "labels and escaping"
        );
        let empty = LineChart {
            series: vec![],
            ..chart
        };
        assert!(
            empty.write(dir.join("empty")).is_ok(),
            "an empty chart still draws its axes"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
