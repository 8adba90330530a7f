//! The report: per plant, every sizer's figures beside the thesis's.

use std::time::Duration;

use super::Results;
use crate::figure::fmt;

pub(super) fn markdown(all: &Results<'_>, period: Duration, phases: &[Duration]) -> String {
    let phases: Vec<String> = phases
        .iter()
        .map(|p| format!("{:.1}", p.as_secs_f64()))
        .collect();
    let mut s = String::new();
    s += &format!(
        "Each plant is one stage of the real runtime whose handler waits on a backend, kept busy \
         by a producer: an *emulated* backend (a sleep, not real I/O), or the e-mail store on \
         PostgreSQL (a real database transaction per event). A sweep of fixed pools finds \
         the best fixed size; then each sizer starts from eight threads and runs three phases of \
         {} s with a {:.1} s control period: throughput targets of 0.4 and 0.8 x the best \
         fixed throughput (the step), then 1.5 x (more than any pool gives: the most it can find). \
         SEDA's heuristic and hill climbing take no target. The steady error, settle periods \
         and thread overshoot are the step's (the second phase); the share of the best fixed \
         pool is the last phase's second half. The steady error is how far the mean throughput \
         of the step's second half is off its target (control theory's steady-state error); the \
         tracking error is the mean of each period's distance from it, the plant's noise \
         included; settling is judged on the mean of the last three periods. The thesis \
         (FAIR07 Figures 5-2 to 5-6) ran 1 s periods on a server with real I/O stages; it \
         reports P settling within about 3 periods with small error and little overshoot.\n\n",
        phases.join(", "),
        period.as_secs_f64()
    );
    for (plant, best, rows) in all {
        let readings: Vec<String> = best.readings.iter().map(|r| format!("{r:.0}")).collect();
        s += &format!(
            "## Plant `{}`: {}\n\nBest fixed pool: {} threads, {:.0} events/s in the sweep; read \
             again beside the sizers at {} events/s, and each sizer's share is of the mean of the \
             two readings beside it (in the quick form, the sweep's and the last; the plant \
             drifts between runs). At that size a control period's throughput strayed \
             from its mean by {} of it on average: the plant's own noise, the floor under the \
             ARX error (a predictor that knew the mean would err that much).\n\n\
             | sizer | share of best fixed | events/s | threads | steady error | tracking error \
             | settle periods | thread overshoot | ARX error |\n|---|---|---|---|---|---|---|---|---|\n",
            plant.name,
            plant.backend.describe(),
            best.threads,
            best.swept,
            readings.join(", "),
            fmt(best.noise()),
        );
        for (name, f) in rows {
            s += &format!(
                "| {name} | {:.2} | {:.0} | {:.1} | {} | {} | {} | {} | {} |\n",
                f.fraction_of_best_fixed,
                f.throughput_per_s,
                f.threads,
                fmt(f.steady_error),
                fmt(f.tracking_error),
                f.settle_periods.map_or("-".into(), |k| k.to_string()),
                fmt(f.thread_overshoot),
                fmt(f.arx_error),
            );
        }
        let leader = rows
            .iter()
            .max_by(|a, b| a.1.throughput_per_s.total_cmp(&b.1.throughput_per_s));
        if let Some((name, f)) = leader {
            s += &format!(
                "\nMost throughput in the last phase: **{name}** ({:.0} events/s).\n\n",
                f.throughput_per_s
            );
        }
    }
    s
}
