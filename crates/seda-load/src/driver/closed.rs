//! The closed loop: users that send, wait for the reply, think, and send again.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::client::Client;
use super::{Ctx, seed_for};
use crate::record::Outcome;
use crate::workload::Session;
use crate::{Closed, Eager};

/// Which users the schedule starts and stops.
#[derive(Debug, Clone)]
pub(crate) enum Users {
    /// Closed users.
    Closed(Closed),
    /// The thesis's partly-open users (`eager.rs`).
    Eager(Eager),
}

/// Starts and stops users to follow the schedule. User `i` runs while `i < target`; a user above
/// the target leaves after its current request (and think time).
pub(crate) async fn controller(ctx: Rc<Ctx>, model: Users) {
    let running: Rc<RefCell<Vec<bool>>> = Rc::default();
    let target = Rc::new(Cell::new(0usize));
    loop {
        let t = ctx.elapsed();
        if ctx.stopping.get() {
            return;
        }
        let n = ctx.schedule.level_at(t).round() as usize;
        target.set(n);
        {
            let mut run = running.borrow_mut();
            if run.len() < n {
                run.resize(n, false);
            }
            for id in 0..n {
                if !run[id] {
                    run[id] = true;
                    let seat = Seat {
                        ctx: ctx.clone(),
                        id,
                        target: target.clone(),
                        running: running.clone(),
                    };
                    match &model {
                        Users::Closed(m) => {
                            tokio::task::spawn_local(user(seat, m.clone()));
                        }
                        Users::Eager(m) => {
                            tokio::task::spawn_local(super::eager::user(seat, m.clone()));
                        }
                    }
                }
            }
            let mut rec = ctx.rec.borrow_mut();
            rec.level = n as f64;
            rec.active = run.iter().filter(|&&r| r).count();
        }
        // Wake at the next step, or every 10 ms while a ramp is under way.
        let next = if ctx.schedule.ramping_at(t) {
            t + Duration::from_millis(10)
        } else {
            match ctx.schedule.next_point_after(t) {
                Some(at) => at,
                None => return,
            }
        };
        tokio::time::sleep_until((ctx.start + next).into()).await;
    }
}

/// One user's place in the schedule, handed to the user's task: who it is, and the controller's
/// target and roll of running users that say when it leaves.
pub(crate) struct Seat {
    pub ctx: Rc<Ctx>,
    pub id: usize,
    target: Rc<Cell<usize>>,
    running: Rc<RefCell<Vec<bool>>>,
}

impl Seat {
    /// The user's session and its own random draws, both seeded from the run's seed and the
    /// user's number, so a run repeats.
    pub fn session(&self) -> (Box<dyn Session>, SmallRng) {
        let seed = seed_for(self.ctx.cfg.seed, self.id as u64);
        (
            self.ctx.cfg.workload.session(seed),
            SmallRng::seed_from_u64(!seed),
        )
    }

    /// Whether the user goes on: the schedule still wants it and the run is not stopping.
    pub fn wanted(&self) -> bool {
        self.id < self.target.get() && !self.ctx.stopping.get()
    }

    /// The user has left: off the roll, and the recorder's count of active users follows.
    pub fn leave(self) {
        let mut run = self.running.borrow_mut();
        run[self.id] = false;
        self.ctx.rec.borrow_mut().active = run.iter().filter(|&&r| r).count();
    }
}

async fn user(seat: Seat, model: Closed) {
    let (ctx, id) = (seat.ctx.clone(), seat.id);
    let (mut session, mut rng) = seat.session();
    let mut client = Client::new(id);
    client.capture(session.capture_bytes(), session.capture_headers());
    let mut last: Option<Outcome> = None;
    while seat.wanted() {
        let req = {
            let reply = last.as_ref().and_then(|o| client.reply(o));
            session.next_request(reply.as_ref())
        };
        let outcome = client.send(&ctx, &req, Instant::now()).await;
        last = Some(outcome);
        match outcome {
            Outcome::Response { status: 503, .. } => {
                if let Some(backoff) = ctx.cfg.client.wait_after_503(client.retry_after_s()) {
                    // "Wait, then start over", on the connection the server kept open (as a
                    // browser does: a 503 does not close an HTTP/1.1 connection).
                    tokio::time::sleep(backoff).await;
                    session.restart();
                    last = None;
                    continue;
                }
            }
            Outcome::Error(_) => {
                tokio::time::sleep(ctx.cfg.client.error_pause).await;
                last = None;
            }
            // The client's throttle refused the request without sending it: the user gets the
            // error at once, and waits as after a 503 (or an error), so that a user without
            // think time does not spin refusing itself millions of times a second (the
            // throttle counts each try: its refusal probability would stay near 1).
            Outcome::Refused => {
                let wait = ctx.cfg.client.wait_after_503(None);
                tokio::time::sleep(wait.unwrap_or(ctx.cfg.client.error_pause)).await;
                session.restart();
                last = None;
                continue;
            }
            Outcome::Timeout => last = None,
            Outcome::Response { .. } => {}
        }
        let think = session.think_time().unwrap_or_else(|| {
            if model.think_exponential {
                model.think.mul_f64(-(1.0 - rng.random::<f64>()).ln())
            } else {
                model.think
            }
        });
        if !think.is_zero() {
            tokio::time::sleep(think).await;
        }
    }
    seat.leave();
}
