//! FAIR07 Section 4.3's self-tuning pool as a sizer: [`SelfTuningPool`] (P, PI or PD on an
//! ARX model fitted online) steered to a throughput target, with the model's one-step
//! prediction error kept for reports (FAIR07 Figure 4-7).

use super::{Sizer, SizerPeriod, SizerReport, SizerSettings};
use crate::selftune::{PeriodSample, PoleSpec, SelfTuningConfig, SelfTuningPool};

/// FAIR07 Section 4.3's self-tuning pool: P, PI or PD control toward a throughput target on
/// an ARX model fitted online.
pub const SELF_TUNING: &str = "self_tuning";

/// The self-tuning pool, its target setting and its model's prediction error.
#[derive(Debug, Clone)]
pub struct SelfTuningSizer {
    pool: SelfTuningPool,
    fixed_target: Option<f64>,
    /// The last period's threads and throughput.
    prev: Option<(usize, f64)>,
    error_sum: f64,
    error_samples: u64,
    report: SizerReport,
}

impl SelfTuningSizer {
    /// The pool `s` describes; absent settings take [`SelfTuningConfig::default`]'s.
    pub fn new(s: &SizerSettings) -> Self {
        let d = SelfTuningConfig::default();
        let poles = PoleSpec {
            settle_periods: s.settle_periods.unwrap_or(d.poles.settle_periods),
            overshoot: s.overshoot.unwrap_or(d.poles.overshoot),
        };
        let pool = SelfTuningPool::new(SelfTuningConfig {
            law: s.law,
            min_threads: s.min_threads,
            max_threads: s.max_threads,
            max_step: s.max_step.unwrap_or(d.max_step),
            forgetting: d.forgetting,
            poles,
        });
        SelfTuningSizer {
            pool,
            fixed_target: s.target_per_s,
            prev: None,
            error_sum: 0.0,
            error_samples: 0,
            report: SizerReport::default(),
        }
    }
}

/// The registry's builder.
pub(crate) fn build(s: &SizerSettings) -> Box<dyn Sizer> {
    Box::new(SelfTuningSizer::new(s))
}

impl Sizer for SelfTuningSizer {
    fn name(&self) -> &'static str {
        SELF_TUNING
    }

    fn update(&mut self, p: &SizerPeriod) -> usize {
        let y = p.throughput_per_s();
        if let (Some(m), Some((prev_n, prev_y))) = (self.pool.model(), self.prev)
            && y > 0.0
        {
            let du = p.threads as f64 - prev_n as f64;
            self.error_sum += (m.predict(prev_y, du) - y).abs() / y;
            self.error_samples += 1;
        }
        self.prev = Some((p.threads, y));
        let target = p
            .targets
            .run_time
            .or(self.fixed_target)
            .or(p.targets.global)
            .unwrap_or_else(|| p.arrivals_per_s());
        let busy_threads = p.busy_secs.map(|b| b / p.secs);
        let next = self.pool.update(PeriodSample {
            throughput_per_s: y,
            threads: p.threads,
            target_per_s: target,
            busy_threads,
        });
        let model = self.pool.model();
        self.report = SizerReport {
            throughput_target_per_s: Some(target),
            arx_a: model.map(|m| m.a),
            arx_b: model.map(|m| m.b),
            arx_error: (self.error_samples > 0).then(|| self.error_sum / self.error_samples as f64),
            ..SizerReport::measured(p, next)
        };
        next
    }

    fn report(&self) -> SizerReport {
        self.report
    }
}
