//! The lab: experiments on the real system, with plots and reports.
//!
//! So far it holds the plotting every experiment shares: line charts written as PNG and SVG
//! with a bundled font (DejaVu Sans), so no system font or library is needed.
//!
//! ```no_run
//! use seda_lab::plot::{LineChart, Series};
//!
//! let chart = LineChart {
//!     title: "p90 response time".into(),
//!     x_label: "time (s)".into(),
//!     y_label: "ms".into(),
//!     series: vec![Series { name: "queue threshold".into(), points: vec![(1.0, 40.0), (2.0, 38.0)] }],
//! };
//! let files = chart.write("out/p90")?; // out/p90.png and out/p90.svg
//! # Ok::<(), seda_lab::plot::PlotError>(())
//! ```

#![warn(missing_docs)]

pub mod plot;
