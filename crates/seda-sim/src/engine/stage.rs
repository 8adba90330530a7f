//! A stage: admission, FIFO queue, c servers (a count the pool lever may change), dequeue-time
//! dropping, an emulated plant's slow-down, termination, routing to the next stage.

use std::collections::VecDeque;

use seda_control::{AdmissionController, RejectReason};

use super::{Kind, Req, Sim, dur};
use crate::config::StageConfig;
use crate::levers::Contention;
use crate::{StageStats, secs_to_ns};

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Outcome {
    Completed(f64),
    Rejected,
    Expired,
    Terminated,
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
    /// Servers the pool should have; `active` may exceed it until busy servers finish.
    pub target: u32,
    /// Server ids in the pool (busy or idle).
    pub active: u32,
    /// Ids retired by a shrink, reused by a growth.
    pub spare: Vec<u32>,
    /// Per server: bumped at every start, completion and cut, so stale events are ignored.
    pub epoch: Vec<u32>,
    /// Per server: when its request started and when it would finish.
    pub started: Vec<u64>,
    pub ends: Vec<u64>,
    /// The emulated plant's slow-down with busy servers.
    pub contention: Option<Contention>,
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
            target: servers,
            active: servers,
            spare: Vec::new(),
            epoch: vec![0; servers as usize],
            started: vec![0; servers as usize],
            ends: vec![0; servers as usize],
            contention: None,
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
        let dist = match self.levers.phases.iter().rev().find(|p| p.0 <= now) {
            Some(p) if s == 0 => &p.1,
            _ => &st.cfg.service,
        };
        let mut service_s = dist.sample(&mut self.rng_service) * st.service_scale;
        if let Some(c) = st.contention {
            let busy = st.active.saturating_sub(st.free_servers.len() as u32);
            service_s *= c.factor(busy);
        }
        let i = server as usize;
        st.in_service[i] = req;
        st.epoch[i] = st.epoch[i].wrapping_add(1);
        st.started[i] = now;
        st.ends[i] = now + secs_to_ns(service_s);
        let (end, g) = (st.ends[i], st.epoch[i]);
        self.events
            .push_gen(end, Kind::Done, server, u32::from(s), g);
        if s == 0 {
            self.schedule_cut(server);
        }
        true
    }

    /// Whether stage `s`'s server `server` still serves the request of generation `g`.
    pub(crate) fn serving(&self, s: u16, server: u32, g: u32) -> bool {
        self.stages[s as usize].epoch.get(server as usize) == Some(&g)
    }

    /// The server is free: it retires if the pool is shrinking, else takes the next request.
    pub(crate) fn release(&mut self, s: u16, server: u32) {
        let st = &mut self.stages[s as usize];
        if st.active > st.target {
            st.active -= 1;
            st.spare.push(server);
            return;
        }
        while let Some(next) = self.stages[s as usize].queue.pop_front() {
            if self.try_start(s, next, server) {
                return;
            }
        }
        self.stages[s as usize].free_servers.push(server);
    }

    /// Sets stage `s`'s pool to `n` servers: new ones start on the queue at once; idle ones
    /// retire at once, busy ones when they finish.
    pub(crate) fn resize(&mut self, s: u16, n: u32) {
        let st = &mut self.stages[s as usize];
        st.target = n.max(1);
        while st.active > st.target {
            let Some(id) = st.free_servers.pop() else {
                break;
            };
            st.spare.push(id);
            st.active -= 1;
        }
        let mut fresh = Vec::new();
        while st.active < st.target {
            let id = st.spare.pop().unwrap_or_else(|| {
                st.in_service.push(Req::EMPTY);
                st.epoch.push(0);
                st.started.push(0);
                st.ends.push(0);
                (st.in_service.len() - 1) as u32
            });
            st.active += 1;
            fresh.push(id);
        }
        for id in fresh {
            // A growth keeps the servers: release never retires them (active == target).
            self.release(s, id);
        }
    }

    /// A server of stage `s` finished its request (generation `g`; a stale event of a cut
    /// request is ignored).
    pub(crate) fn on_done(&mut self, s: u16, server: u32, g: u32) {
        if !self.serving(s, server, g) {
            return;
        }
        let now = self.now;
        let st = &mut self.stages[s as usize];
        let i = server as usize;
        st.epoch[i] = st.epoch[i].wrapping_add(1);
        let req = st.in_service[i];
        st.stats.served += 1;
        if s == 0 {
            let running = now - st.started[i];
            self.levers.on_served(dur(running));
        }
        let st = &mut self.stages[s as usize];
        let response = now - req.born;
        let waited = st.started[i] - req.enq;
        if let Some(a) = st.admission.as_mut()
            && !(s == 0 && req.entry_held)
        {
            a.on_served(dur(now), req.class, dur(response.saturating_sub(waited)));
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
        self.release(s, server);
    }
}
