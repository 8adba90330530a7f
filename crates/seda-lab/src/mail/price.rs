//! A run's goodput priced: the capacity on the mix it served within the target, each request
//! at the cost the service stated for it.

use std::collections::BTreeMap;

use seda_load::Report;
use seda_sim::summary::RunSummary;

use super::{MailCapacity, Work};

/// in the run ([`MailCapacity::on_mix`]), and the figures behind it.
#[derive(Debug, Clone)]
pub struct RunPrice {
    /// Capacity in requests per second of the served mix.
    pub capacity_per_s: f64,
    /// Capacity in requests per second of the user model's mix.
    model_per_s: f64,
    served: BTreeMap<String, u64>,
    /// What a request of each type served in time cost, seconds of the processor's work.
    costs: BTreeMap<String, f64>,
    /// The processor's work on each type over the run's window, seconds, whether its requests
    /// came in time, late or not at all: it tells where a processor that served little goodput
    /// went (late work, or one costly type).
    handler_cpu_s: BTreeMap<String, f64>,
    /// The share of the processor's cores busy over the run's window (`None`: not read).
    processor_busy: Option<f64>,
    /// The server's real CPU over the run's window, seconds per second (`None`: not read).
    server_cpu_share: Option<f64>,
}

impl RunPrice {
    /// Prices the requests of each type `report` completed within the target in the intervals
    /// that start in `[from_s, to_s)` (the span the run's goodput counts), each at what the
    /// service said it cost (its `Server-Timing`), a type without those at what an answered
    /// request of it cost over the run (`work`), else at the table's mean.
    ///
    /// The requests' own costs, because a type's mean misprices the ones answered in time: a
    /// search of a large mailbox costs ten times one of a small one, and under some controls
    /// the large ones are the ones answered late.
    pub fn new(
        capacity: &MailCapacity,
        report: &Report,
        (from_s, to_s): (f64, f64),
        work: &Work,
    ) -> RunPrice {
        let served = report.good_by_class_between(from_s, to_s);
        let mut prices = work.cost_s();
        for (kind, c) in report.good_server_cpu_between(from_s, to_s) {
            if c.timed > 0 && c.cpu_s.is_finite() {
                prices.insert(kind, c.cpu_s / c.timed as f64);
            }
        }
        let window = work.window_s.filter(|&w| w > 0.0);
        RunPrice {
            capacity_per_s: capacity.on_mix(&served, &prices),
            model_per_s: capacity.per_s,
            served,
            costs: prices,
            handler_cpu_s: work
                .per_type
                .iter()
                .map(|(k, w)| (k.clone(), w.cpu_s))
                .collect(),
            processor_busy: work
                .busy_core_s
                .zip(window)
                .map(|(b, w)| b / w / capacity.cores),
            server_cpu_share: work.server_cpu_s.zip(window).map(|(c, w)| c / w),
        }
    }

    /// `summary` with the figures behind the price.
    pub fn annotate(&self, summary: RunSummary) -> RunSummary {
        summary
            .with("capacity_model_mix_per_s", self.model_per_s)
            .with("processor_busy_fraction", self.processor_busy)
            .with("server_real_cpu_share", self.server_cpu_share)
            .with("served_mix", &self.served)
            .with("cost_s_per_type", &self.costs)
            .with("handler_cpu_s", &self.handler_cpu_s)
    }

    /// Goodput / capacity second by second, `(t_s, fraction)` for each of `report`'s
    /// intervals that start in `[from_s, to_s)`: each interval's requests answered within the
    /// target, priced as this run prices them, per second of the interval. Their mean over
    /// the span is the run's goodput / capacity; their spread says how much one run can tell
    /// two variants apart.
    pub fn fraction_by_second(
        &self,
        capacity: &MailCapacity,
        report: &Report,
        (from_s, to_s): (f64, f64),
    ) -> Vec<(f64, f64)> {
        report
            .series
            .iter()
            .filter(|i| i.t_s >= from_s && i.t_s < to_s && i.duration_s > 0.0)
            .map(|i| {
                let mix: BTreeMap<String, u64> = report
                    .classes
                    .iter()
                    .zip(&i.good_by_class)
                    .map(|(c, n)| (c.name.clone(), *n))
                    .collect();
                let n: u64 = mix.values().sum();
                let work = capacity.mean_cost(&mix, &self.costs).unwrap_or(0.0) * n as f64;
                (i.t_s, work / i.duration_s / capacity.cores)
            })
            .collect()
    }
}
