//! A stage: admission, FIFO queue, c servers, dequeue-time dropping, routing to the next stage.

use std::collections::VecDeque;

use seda_control::{AdmissionController, RejectReason};

use super::{Kind, Req, Sim, dur};
use crate::config::StageConfig;
use crate::{StageStats, secs_to_ns};

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Outcome {
    Completed(f64),
    Rejected,
    Expired,
}

/// One simulated stage's state.
pub(crate) struct StageState {
    pub cfg: StageConfig,
    pub admission: Option<Box<dyn AdmissionController>>,
    pub queue: VecDeque<Req>,
    pub in_service: Vec<Req>,
    pub free_servers: Vec<u32>,
    /// Multiplier of service times (1 unless a quality knob degrades the service).
    pub service_scale: f64,
    /// Where a request served here goes: cumulative probabilities and stage indices; the rest
    /// of the probability leaves the system (the request completes).
    pub next: Vec<(f64, u16)>,
    pub stats: StageStats,
}

impl StageState {
    pub fn new(
        cfg: StageConfig,
        admission: Option<Box<dyn AdmissionController>>,
        next: &[(f64, usize)],
    ) -> Self {
        let servers = cfg.servers;
        let mut acc = 0.0;
        let next = next
            .iter()
            .map(|&(p, s)| {
                acc += p;
                (acc, s as u16)
            })
            .collect();
        StageState {
            cfg,
            admission,
            queue: VecDeque::with_capacity(1024),
            in_service: vec![Req::EMPTY; servers as usize],
            free_servers: (0..servers).rev().collect(),
            service_scale: 1.0,
            next,
            stats: StageStats::default(),
        }
    }
}

impl Sim {
    /// A request reaches stage `s`.
    pub(crate) fn arrive(&mut self, s: u16, mut req: Req) {
        let now = self.now;
        let class = req.class;
        let st = &mut self.stages[s as usize];
        st.stats.arrived += 1;
        let verdict = if st.free_servers.is_empty()
            && st.cfg.queue_cap.is_some_and(|cap| st.queue.len() >= cap)
        {
            Err(RejectReason::QueueFull)
        } else if let Some(a) = st.admission.as_mut() {
            a.admit(dur(now), class)
        } else {
            Ok(())
        };
        if verdict.is_err() {
            st.stats.rejected += 1;
            self.finish(req, Outcome::Rejected);
            return;
        }
        if s == 0 {
            self.metrics.record(now, |b| b.admitted += 1);
            req.entry_held = self.entry_control && self.stages[0].admission.is_some();
        }
        req.enq = now;
        let st = &mut self.stages[s as usize];
        match st.free_servers.pop() {
            Some(server) => {
                if !self.try_start(s, req, server) {
                    self.stages[s as usize].free_servers.push(server);
                }
            }
            None => st.queue.push_back(req),
        }
    }

    /// Starts `req` on `server` of stage `s` unless it is dropped at dequeue; returns whether it
    /// started.
    fn try_start(&mut self, s: u16, req: Req, server: u32) -> bool {
        let now = self.now;
        let st = &mut self.stages[s as usize];
        // The controller hears of every dequeue, even one the deadline check drops anyway.
        let by_controller = st
            .admission
            .as_mut()
            .is_some_and(|a| a.on_dequeue(dur(now), dur(now - req.enq)));
        let dropped = by_controller || (st.cfg.drop_expired && now > req.deadline);
        if dropped {
            st.stats.expired += 1;
            if let Some(a) = st.admission.as_mut() {
                a.on_drop(dur(now), req.class);
            }
            // Stage 0's controller has just heard of the drop: finish must not tell it again.
            let mut req = req;
            if s == 0 {
                req.entry_held = false;
            }
            self.finish(req, Outcome::Expired);
            return false;
        }
        let service_s = st.cfg.service.sample(&mut self.rng_service) * st.service_scale;
        st.in_service[server as usize] = req;
        self.events.push(
            now + secs_to_ns(service_s),
            Kind::Done,
            server,
            u32::from(s),
        );
        true
    }

    /// A server of stage `s` finished its request.
    pub(crate) fn on_done(&mut self, s: u16, server: u32) {
        let now = self.now;
        let st = &mut self.stages[s as usize];
        let req = st.in_service[server as usize];
        st.stats.served += 1;
        let response = now - req.born;
        if let Some(a) = st.admission.as_mut()
            && !(s == 0 && req.entry_held)
        {
            a.on_complete(dur(now), req.class, dur(response), dur(now - req.enq));
        }
        let next = match st.next.as_slice() {
            [] => None,
            routes => {
                let u = self.rng_service.uniform();
                routes.iter().find(|(p, _)| u < *p).map(|&(_, to)| to)
            }
        };
        match next {
            Some(to) => self.arrive(to, req),
            None => {
                let r = response as f64 * 1e-9;
                self.stages[s as usize].stats.exits.record(r);
                self.finish(req, Outcome::Completed(r));
            }
        }
        while let Some(next) = self.stages[s as usize].queue.pop_front() {
            if self.try_start(s, next, server) {
                return;
            }
        }
        self.stages[s as usize].free_servers.push(server);
    }
}
