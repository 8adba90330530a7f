//! `sert-motivation` (SERT06, slide "Motivating Example: Size Distribution Shift"): a steady
//! stream of 5 ms and 500 ms requests whose long share grows from 0.1% to 10%; throughput and
//! mean response time with admission control alone (a queue bound) and with SERT's adaptive
//! termination too. The lab runs the same sweep on the real runtime (`seda lab sert-motivation`).
//!
//! The service is `sert-shift`'s ([`sert::hold_config`]): 8 workers each serving one request at
//! a time, open Poisson 400/s (the slides' 50/s scaled to 8 workers: they are saturated once
//! about 3% of the requests are long), a queue bound of 100, SERT's threshold as in the shift
//! (LB 50 ms, UB 1 s, LW 2%, HW 12%). Unlike the shift, the mix does not change within a run:
//! each long share is its own run of [`RUN_S`], measured from [`FROM_S`] (the SERT window's
//! first fill and the queue's first filling are left out).

use anyhow::Result;
use serde_json::json;

use super::common::{selected, sim};
use super::sert::{self, SHIFT_QUEUE, SHIFT_RATE, SHIFT_VARIANTS, SHIFT_WORKERS};
use super::{Options, Output, Scenario};
use crate::summary::RunSummary;

/// `seda sim sert-motivation`.
pub const SCENARIO: Scenario = Scenario {
    name: "sert-motivation",
    about: "5 ms and 500 ms requests, the long share from 0.1% to 10%: admission control alone vs admission plus SERT's adaptive termination (SERT06)",
    run,
};

/// The long shares swept, as fractions of the requests.
pub const LONG_SHARES: [f64; 5] = [0.001, 0.01, 0.02, 0.05, 0.1];
/// Length of each run (virtual seconds).
pub const RUN_S: f64 = 60.0;
/// Start of the measured window of each run.
pub const FROM_S: f64 = 10.0;
/// The variants: those of `sert-shift`.
pub const VARIANTS: [&str; 2] = SHIFT_VARIANTS;

/// One point of the sweep: `variant` at `long_share`, its figures over `FROM_S..RUN_S`.
pub fn run_point(variant: &str, long_share: f64, seed: u64) -> Result<RunSummary> {
    let sert = sert::variant_has_sert("sert-motivation", variant)?;
    let r = sim(sert::hold_config(RUN_S, long_share, sert, seed))?;
    let mut s = sert::window_summary(variant, &r, FROM_S, RUN_S);
    s.insert("long_share", long_share);
    Ok(s)
}

/// This table's widths of the shift's columns.
const WIDTHS: [usize; 6] = [13, 15, 10, 11, 10, 9];

fn run(args: &Options) -> Result<Output> {
    let variants = selected(&args.controller, &VARIANTS);
    let mut text = format!(
        "sert-motivation: {SHIFT_WORKERS} workers, queue bound {SHIFT_QUEUE}, open Poisson \
         {SHIFT_RATE}/s of 5 ms and 500 ms requests, one run per long share, figures over \
         {FROM_S}-{RUN_S} s; seed {}\n{:>16} {:>6} {}\n",
        args.seed,
        "variant",
        "long",
        sert::shift_header(WIDTHS)
    );
    let mut points = Vec::new();
    // (variant, share, throughput, mean response) for the closing line.
    let mut figures = Vec::new();
    for variant in variants {
        for share in LONG_SHARES {
            let s = run_point(variant, share, args.seed)?;
            let g = |k: &str| s.extra_f64(k).unwrap_or(f64::NAN);
            let tput = s.throughput_per_s.unwrap_or(0.0);
            text += &format!(
                "{variant:>16} {:>5.1}% {}\n",
                share * 100.0,
                sert::shift_cells(&s, WIDTHS)
            );
            figures.push((variant, share, tput, g("mean_response_s")));
            points.push(json!({
                "variant": variant,
                "long_share": share,
                "summary": s.to_json(),
            }));
        }
    }
    let at = |v: &str, share: f64| {
        figures
            .iter()
            .find(|f| f.0 == v && f.1 == share)
            .map(|f| (f.2, f.3))
    };
    let (lo, hi) = (LONG_SHARES[0], LONG_SHARES[LONG_SHARES.len() - 1]);
    if let (Some((t_lo, m_lo)), Some((t_hi, m_hi))) = (at("admission", lo), at("admission", hi)) {
        text += &format!(
            "admission alone from {:.1}% to {:.1}% long: throughput x{:.2}, mean response time \
             x{:.1}\n",
            lo * 100.0,
            hi * 100.0,
            t_hi / t_lo,
            m_hi / m_lo
        );
    }
    if let (Some((t_ac, _)), Some((t_sert, _))) = (at("admission", hi), at("admission+sert", hi)) {
        text += &format!(
            "at {:.1}% long SERT's throughput is x{:.2} admission alone's\n",
            hi * 100.0,
            t_sert / t_ac
        );
    }
    Ok(Output {
        json: json!({
            "scenario": "sert-motivation",
            "seed": args.seed,
            "run_s": RUN_S,
            "measured_from_s": FROM_S,
            "points": points,
        }),
        text,
    })
}
