//! The stage: admission, FIFO queue, c servers, dequeue-time dropping.

use seda_control::RejectReason;

use super::{Req, Sim, dur};
use crate::secs_to_ns;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Outcome {
    Completed(f64),
    Rejected,
    Expired,
}

impl Sim {
    /// A request reaches the stage.
    pub(crate) fn arrive(&mut self, mut req: Req) {
        let now = self.now;
        let class = req.class;
        let verdict = if self.free_servers.is_empty()
            && self
                .stage
                .queue_cap
                .is_some_and(|cap| self.queue.len() >= cap)
        {
            Err(RejectReason::QueueFull)
        } else if let Some(a) = self.admission.as_mut() {
            a.admit(dur(now), class)
        } else {
            Ok(())
        };
        if verdict.is_err() {
            self.finish(req, Outcome::Rejected);
            return;
        }
        self.metrics.record(now, |b| b.admitted += 1);
        req.enq = now;
        match self.free_servers.pop() {
            Some(server) => {
                if !self.try_start(req, server) {
                    self.free_servers.push(server);
                }
            }
            None => self.queue.push_back(req),
        }
    }

    /// Starts `req` on `server` unless it is dropped at dequeue; returns whether it started.
    fn try_start(&mut self, req: Req, server: u32) -> bool {
        let now = self.now;
        // The controller hears of every dequeue, even one the deadline check drops anyway.
        let by_controller = self
            .admission
            .as_mut()
            .is_some_and(|a| a.on_dequeue(dur(now), dur(now - req.enq)));
        let dropped = by_controller || (self.stage.drop_expired && now > req.deadline);
        if dropped {
            if let Some(a) = self.admission.as_mut() {
                a.on_drop(dur(now), req.class);
            }
            self.finish(req, Outcome::Expired);
            return false;
        }
        let service_s = self.stage.service.sample(&mut self.rng_service) * self.service_scale;
        self.in_service[server as usize] = req;
        self.events
            .push(now + secs_to_ns(service_s), super::Kind::Done, server, 0);
        true
    }

    /// A server finished its request.
    pub(crate) fn on_done(&mut self, server: u32) {
        let now = self.now;
        let req = self.in_service[server as usize];
        let response = now - req.born;
        if let Some(a) = self.admission.as_mut() {
            a.on_complete(dur(now), req.class, dur(response), dur(now - req.enq));
        }
        self.finish(req, Outcome::Completed(response as f64 * 1e-9));
        while let Some(next) = self.queue.pop_front() {
            if self.try_start(next, server) {
                return;
            }
        }
        self.free_servers.push(server);
    }
}
