//! Stage 0's levers in the event loop: the control period (pool sizing, the terminator's
//! feed) and termination of requests that run past the threshold.

use std::time::Duration;

use seda_control::terminate::PeriodCounts;

use super::stage::Outcome;
use super::{Kind, Sim};
use crate::levers::{Levers, Period, PoolControl, PoolPeriod, Termination, secs};
use crate::metrics::LogHistogram;
use crate::secs_to_ns;

/// The levers and what the current period has measured so far.
pub(crate) struct LeverState {
    pub pool: Option<PoolControl>,
    pub termination: Option<Termination>,
    pub period_ns: Option<u64>,
    pub period_s: f64,
    /// The current threshold in nanoseconds (`u64::MAX` without a terminator).
    pub threshold_ns: u64,
    served_mark: u64,
    arrived_mark: u64,
    lost: u64,
    terminated: u64,
    response: LogHistogram,
    response_sum_s: f64,
    pub periods: Vec<Period>,
    /// Stage 0's service phases: (start in ns, distribution), sorted.
    pub phases: Vec<(u64, crate::Dist)>,
}

impl LeverState {
    pub fn new(l: Levers) -> Self {
        let period_ns = l.active().then(|| secs_to_ns(l.period_s).max(1));
        let threshold_ns = l
            .termination
            .as_ref()
            .map_or(u64::MAX, |t| t.terminator.threshold().as_nanos() as u64);
        let mut phases: Vec<(u64, crate::Dist)> = l
            .phases
            .into_iter()
            .map(|(t, d)| (secs_to_ns(t), d))
            .collect();
        phases.sort_by_key(|p| p.0);
        LeverState {
            phases,
            pool: l.pool,
            termination: l.termination,
            period_ns,
            period_s: l.period_s,
            threshold_ns,
            served_mark: 0,
            arrived_mark: 0,
            lost: 0,
            terminated: 0,
            response: LogHistogram::default(),
            response_sum_s: 0.0,
            periods: Vec::new(),
        }
    }

    /// Stage 0 served a request that ran `running`.
    pub fn on_served(&mut self, running: Duration) {
        if let Some(t) = self.termination.as_mut() {
            t.terminator.on_complete(running);
        }
    }

    /// A request ended: a response time, or a loss.
    pub fn on_end(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Completed(r) => {
                self.response.record(r);
                self.response_sum_s += r;
                // A reply past the terminator's service-level limit is throughput lost too.
                let late = self
                    .termination
                    .as_ref()
                    .and_then(|t| t.terminator.late_after());
                if late.is_some_and(|l| r > l.as_secs_f64()) {
                    self.lost += 1;
                }
            }
            Outcome::Terminated => {
                self.terminated += 1;
                self.lost += 1;
            }
            Outcome::Rejected | Outcome::Expired => self.lost += 1,
        }
    }
}

impl Sim {
    /// The end of a control period.
    pub(crate) fn on_lever(&mut self) {
        let now_s = self.now as f64 * 1e-9;
        let st = &self.stages[0];
        let l = &mut self.levers;
        let served = st.stats.served - l.served_mark;
        let arrived = st.stats.arrived - l.arrived_mark;
        l.served_mark = st.stats.served;
        l.arrived_mark = st.stats.arrived;
        let n = l.response.count();
        let p = PoolPeriod {
            now_s,
            period_s: l.period_s,
            servers: st.target,
            served,
            arrived,
            queue_len: st.queue.len(),
            mean_response_s: if n > 0 {
                l.response_sum_s / n as f64
            } else {
                0.0
            },
            p90_response_s: l.response.quantile(0.9),
        };
        let mut target_per_s = None;
        let mut resize = None;
        if let Some(pool) = l.pool.as_mut() {
            let run_time = pool.plan.as_mut().map(|plan| plan.target(&p));
            let n = pool.sizer.update(&p.to_sizer_period(run_time));
            let next = u32::try_from(n)
                .unwrap_or(u32::MAX)
                .clamp(1, pool.max_servers);
            target_per_s = pool.sizer.report().throughput_target_per_s;
            resize = Some(next);
        }
        let mut threshold_s = None;
        if let Some(t) = l.termination.as_mut() {
            t.terminator.on_period(PeriodCounts {
                arrived,
                lost: l.lost,
                terminated: l.terminated,
            });
            let d = t.terminator.threshold();
            l.threshold_ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            threshold_s = Some(secs(d));
        }
        l.periods.push(Period {
            end_s: now_s,
            servers: p.servers,
            throughput_per_s: p.throughput_per_s(),
            arrivals_per_s: p.arrivals_per_s(),
            target_per_s,
            threshold_s,
            terminated: l.terminated,
            p90_s: p.p90_response_s,
        });
        l.lost = 0;
        l.terminated = 0;
        l.response = LogHistogram::default();
        l.response_sum_s = 0.0;
        if let Some(n) = resize {
            self.resize(0, n);
        }
        if self.levers.termination.is_some() {
            // The threshold may have fallen: requests already in service are checked against it.
            let busy: Vec<u32> = (0..self.stages[0].in_service.len() as u32).collect();
            for server in busy {
                self.schedule_cut(server);
            }
        }
    }

    /// If stage 0 is terminable and its server's request would run past the threshold,
    /// schedules the check at the moment it crosses it.
    pub(crate) fn schedule_cut(&mut self, server: u32) {
        if self.levers.termination.is_none() {
            return;
        }
        let st = &self.stages[0];
        let i = server as usize;
        let at = st.started[i].saturating_add(self.levers.threshold_ns);
        if st.ends[i] > at && st.ends[i] > self.now {
            self.events
                .push_gen(at.max(self.now), Kind::Cut, server, 0, st.epoch[i]);
        }
    }

    /// A request may have crossed the threshold: cut it if it has, still serving it.
    pub(crate) fn on_cut(&mut self, s: u16, server: u32, g: u32) {
        if !self.serving(s, server, g) || self.levers.termination.is_none() {
            return;
        }
        let i = server as usize;
        let st = &mut self.stages[s as usize];
        let running = self.now - st.started[i];
        if running < self.levers.threshold_ns {
            return; // the threshold rose; the next period's check reschedules it
        }
        st.epoch[i] = st.epoch[i].wrapping_add(1);
        st.ends[i] = self.now;
        st.stats.terminated += 1;
        let req = st.in_service[i];
        self.finish(req, Outcome::Terminated);
        self.release(s, server);
    }
}
