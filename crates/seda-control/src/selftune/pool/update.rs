//! One control period: the readings learned, the law's step, the search below the target,
//! and the holds that keep the step to what the target needs.

use super::super::arx::ArxEstimate;
use super::super::design::{Gains, Law, gains};
use super::SelfTuningPool;
use super::config::{HEADROOM, HOLD_BAND, NOISE_Z, PeriodSample, SEEK_BAND};
use super::judge::Period;

impl SelfTuningPool {
    /// Feeds one period and returns the thread count for the next one.
    pub fn update(&mut self, s: PeriodSample) -> usize {
        let threads = s
            .threads
            .clamp(self.config.min_threads, self.config.max_threads);
        let du = self.prev_threads.map_or(0.0, |p| threads as f64 - p as f64);
        let last_move = self.prev_threads.zip(self.prev_y);
        let sample = PeriodSample { threads, ..s };
        let (capacity, saturated) = (sample.capacity_per_s(), sample.saturated());
        // What the threads can do together: measured only where every thread was busy.
        let full_capacity = capacity.filter(|_| saturated);
        let capacity_moved = self.noise.learn_capacity(du, full_capacity);
        self.prev_threads = Some(threads);
        let y = if s.throughput_per_s.is_finite() {
            s.throughput_per_s.max(0.0)
        } else {
            0.0
        };
        let target = if s.target_per_s.is_finite() {
            s.target_per_s.max(0.0)
        } else {
            y
        };
        self.learn_noise(du, y);
        // The line is drawn through what the threads can do: the capacity where every thread
        // was busy (a pool with idle threads serves its arrivals), the throughput where busy
        // threads are not measured.
        let reading = match (s.busy_threads, full_capacity) {
            (None, _) => Some(y),
            (Some(_), c) => c,
        };
        if let Some(r) = reading {
            self.levels.push(threads, r);
        }
        let fit = self.model.observe(du, y);
        self.gains = fit.and_then(|m| gains(self.config.law, m, self.config.poles));
        let step = match self.gains {
            Some(g) => self.control(g, y, target),
            None => probe(y, target),
        };
        self.prev_y = Some(y);
        let max_step = self.config.max_step as f64;
        // A step the law wanted but may not take (past `max_step`, or overruled by the seek)
        // is not integrated (anti-windup): while a large step climbs a few threads at a time,
        // PI would otherwise store the whole climb's error and overshoot by it.
        let wanted = step.round() as i64;
        let mut step = self.sign_checked(
            step.clamp(-max_step, max_step).round() as i64,
            fit,
            y,
            target,
        );
        if y < (1.0 - SEEK_BAND) * target {
            let period = Period {
                threads,
                y,
                last: last_move,
                fit,
                capacity_moved,
                busy_measured: capacity.is_some(),
                read: reading.is_some(),
            };
            step = self
                .seek(step, &period)
                .clamp(-(max_step as i64), max_step as i64);
        }
        if let Some(c) = capacity {
            step = hold_to_need(step, threads, y, target, c, saturated);
        }
        // Above the target, a throughput that rose past its noise since the last period is
        // arrivals rising, which a target measured over the same period has not yet caught:
        // no threads go (giving them back there sheds the queue that builds before the
        // target follows).
        let rising = last_move.is_some_and(|(_, y0)| y - y0 > NOISE_Z * self.noise.of_change());
        if step < 0 && y > target && rising {
            step = 0;
        }
        if (y - target).abs() <= HOLD_BAND * target {
            step = 0;
        }
        self.apply(threads, step, step != wanted)
    }

    /// P never adds threads above its target nor removes them below it, and no law does on a
    /// fit with `b <= 0`. P's only move against the error's sign is the pre-compensator's
    /// drift (see [`HOLD_BAND`]); PI and PD damp with such moves, but a fit with `b < 0`
    /// (adding threads lowers throughput, true only past a knee, and fitted by chance when the
    /// throughput follows the arrivals) inverts every law. Below the target the seek decides
    /// whether removing threads pays. A forbidden step becomes a probe of one thread toward
    /// the target, not a hold: without a move the model never corrects its `b`.
    fn sign_checked(&self, step: i64, fit: Option<ArxEstimate>, y: f64, target: f64) -> i64 {
        let inverted = fit.is_none_or(|m| m.b <= 0.0);
        if (self.config.law == Law::P || inverted) && (step as f64) * (target - y) < 0.0 {
            probe(y, target) as i64
        } else {
            step
        }
    }

    /// The next period's threads: `threads` moved by `step` within the bounds. Saturated at
    /// the step or at a bound (`clamped`), or holding, the law stops integrating
    /// (anti-windup).
    fn apply(&mut self, threads: usize, step: i64, clamped: bool) -> usize {
        let next = (threads as i64 + step).clamp(
            self.config.min_threads as i64,
            self.config.max_threads as i64,
        );
        let next = next as usize;
        if clamped || (next == threads && step != 0) {
            self.integral -= self.gains.map_or(0.0, |g| g.ki) * self.prev_error;
        }
        next
    }

    /// Updates the noise estimate with the error of the model's prediction of `y` (made
    /// before `y` is fed to it).
    fn learn_noise(&mut self, du: f64, y: f64) {
        let (Some(m), Some(y_prev)) = (self.model.estimate(), self.prev_y) else {
            return;
        };
        self.noise.learn_model_error(y - m.predict(y_prev, du));
    }

    /// The law's step toward `target` (FAIR07 Section 4.3.4: P pre-compensated, PI, PD).
    fn control(&mut self, g: Gains, y: f64, target: f64) -> f64 {
        let e = g.precomp * target - y;
        self.integral += g.ki * e;
        let u = g.kp * e + self.integral + g.kd * (e - self.prev_error);
        self.prev_error = e;
        if u.is_finite() { u } else { 0.0 }
    }
}

/// `step` held to what the target needs at a capacity of `c` (at the period's service time,
/// by Little's law). No addition past it by more than a thread (a thread's probe: a pool on a
/// busy machine spends time between its handlers, so its busy threads understate what it
/// uses, and its capacity overstates). Above the target, no removal to below it with
/// [`HEADROOM`] from a pool with idle threads (whose throughput is its arrivals, above its
/// target by chance), nor of several threads at once from a saturated one, where one thread a
/// period may go (a queue waits, and the target decides how long). The law's gain comes from a
/// fit that may have followed the arrivals (`b` near zero), and then its step is `max_step`
/// threads whatever the error. Undoing a move past a knee below the target is the seek's.
fn hold_to_need(step: i64, threads: usize, y: f64, target: f64, c: f64, saturated: bool) -> i64 {
    let n = threads as i64;
    let needs = |headroom: f64| (target * headroom * threads as f64 / c).ceil() as i64;
    if step > 0 {
        step.min((needs(1.0) - n).max(1))
    } else if step < 0 && y > target && (step < -1 || !saturated) {
        let keep = needs(1.0 + HEADROOM) - n;
        step.max(keep.min(if saturated { -1 } else { 0 }))
    } else {
        step
    }
}

/// One thread toward the target, to excite the model while it has no fit.
pub(super) fn probe(y: f64, target: f64) -> f64 {
    if y < target * (1.0 - HOLD_BAND) {
        1.0
    } else if y > target * (1.0 + HOLD_BAND) {
        -1.0
    } else {
        0.0
    }
}
