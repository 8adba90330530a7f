//! The partly-open model (Schroeder, Wierman, Harchol-Balter, NSDI'06): sessions arrive as a
//! Poisson process; after each reply a session stays with probability p, thinks, and sends
//! again; otherwise it leaves.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::client::Client;
use super::{Ctx, arrivals, seed_for};
use crate::record::Outcome;
use crate::{Arrivals, PartlyOpen};

pub(crate) async fn pacer(ctx: Rc<Ctx>, model: PartlyOpen) {
    // Free session slots; a slot is a "client" in the per-client table.
    let free: Rc<RefCell<Vec<usize>>> =
        Rc::new(RefCell::new((0..model.max_sessions).rev().collect()));
    let mut n: u64 = 0;
    arrivals(&ctx, Arrivals::Poisson, ctx.cfg.seed, |intended| {
        let slot = free.borrow_mut().pop();
        match slot {
            Some(slot) => {
                n += 1;
                ctx.rec.borrow_mut().active = model.max_sessions - free.borrow().len();
                let seed = seed_for(ctx.cfg.seed, n);
                tokio::task::spawn_local(session(
                    ctx.clone(),
                    model.clone(),
                    slot,
                    seed,
                    intended,
                    free.clone(),
                ));
            }
            None if ctx.measured(intended) => ctx.rec.borrow_mut().dropped(1),
            None => {}
        }
    })
    .await;
}

async fn session(
    ctx: Rc<Ctx>,
    model: PartlyOpen,
    slot: usize,
    seed: u64,
    arrived: Instant,
    free: Rc<RefCell<Vec<usize>>>,
) {
    let mut session = ctx.cfg.workload.session(seed);
    let mut rng = SmallRng::seed_from_u64(!seed);
    let mut client = Client::new(slot);
    client.capture(session.capture_bytes(), session.capture_headers());
    let mut last: Option<Outcome> = None;
    // The first request is due at the arrival time; later ones when the think time ends.
    let mut intended = arrived;
    while !ctx.stopping.get() {
        let req = {
            let reply = last.as_ref().and_then(|o| client.reply(o));
            session.next_request(reply.as_ref())
        };
        let outcome = client.send(&ctx, &req, intended).await;
        last = Some(outcome);
        match outcome {
            Outcome::Response { status: 503, .. } if ctx.cfg.client.backoff_on_503.is_some() => {
                let backoff = ctx
                    .cfg
                    .client
                    .wait_after_503(client.retry_after_s())
                    .unwrap_or_default();
                tokio::time::sleep(backoff).await;
                session.restart();
                last = None;
                intended = Instant::now();
                continue;
            }
            Outcome::Error(_) | Outcome::Timeout | Outcome::Refused => break,
            Outcome::Response { .. } => {}
        }
        if rng.random::<f64>() >= model.stay_probability {
            break;
        }
        let think = session.think_time().unwrap_or(model.think);
        if !think.is_zero() {
            tokio::time::sleep(think).await;
        }
        intended = Instant::now();
    }
    let mut f = free.borrow_mut();
    f.push(slot);
    ctx.rec.borrow_mut().active = model.max_sessions - f.len();
}
