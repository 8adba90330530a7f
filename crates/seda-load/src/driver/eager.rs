//! The thesis's partly-open clients (FAIR07 Section 5.2): each client sends its next request
//! when its reply arrives (after the think time) or when its expected time has passed without
//! one, whichever is first. A server that falls behind therefore sees *more* requests, not
//! fewer as with closed users: each late reply lets its client send again on another
//! connection, up to `max_outstanding` requests at once.
//!
//! Users start and stop with the schedule as closed users do (`closed::controller`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::SmallRng;
use tokio::sync::oneshot;

use super::client::Client;
use super::closed::Seat;
use crate::Eager;
use crate::record::Outcome;

/// One eager user: see the module docs.
pub(crate) async fn user(seat: Seat, model: Eager) {
    let (ctx, id) = (seat.ctx.clone(), seat.id);
    let (mut session, mut rng) = seat.session();
    // Idle connections of this user; a request that outlives its expected time keeps its own.
    let idle: Rc<RefCell<Vec<Client>>> = Rc::default();
    let outstanding = Rc::new(std::cell::Cell::new(0usize));
    // The reply the session sees next: the last one that came back in time, with its client.
    let mut last: Option<(Client, Outcome)> = None;
    while seat.wanted() {
        let req = {
            let reply = last.as_ref().and_then(|(c, o)| c.reply(o));
            session.next_request(reply.as_ref())
        };
        let client = match last.take() {
            Some((c, _)) => c,
            None => idle.borrow_mut().pop().unwrap_or_else(|| {
                let mut c = Client::new(id);
                c.capture(session.capture_bytes(), session.capture_headers());
                c
            }),
        };
        let (tx, mut rx) = oneshot::channel();
        outstanding.set(outstanding.get() + 1);
        {
            let ctx = ctx.clone();
            let outstanding = outstanding.clone();
            let idle = idle.clone();
            tokio::task::spawn_local(async move {
                let mut client = client;
                let outcome = client.send(&ctx, &req, Instant::now()).await;
                outstanding.set(outstanding.get() - 1);
                // The user waits for it: hand the connection back with the reply; otherwise
                // keep the connection for the user's next request.
                if let Err((client, _)) = tx.send((client, outcome)) {
                    idle.borrow_mut().push(client);
                }
            });
        }
        let patience = draw(&mut rng, model.patience_min, model.patience_max);
        let full = outstanding.get() >= model.max_outstanding;
        let replied = if full {
            (&mut rx).await.ok()
        } else {
            tokio::select! {
                r = &mut rx => r.ok(),
                () = tokio::time::sleep(patience) => None,
            }
        };
        let Some((client, outcome)) = replied else {
            continue; // the expected time passed: send again at once
        };
        match outcome {
            Outcome::Response { status: 503, .. } if ctx.cfg.client.backoff_on_503.is_some() => {
                let backoff = ctx.cfg.client.wait_after_503(client.retry_after_s());
                idle.borrow_mut().push(client);
                tokio::time::sleep(backoff.unwrap_or_default()).await;
                session.restart();
                continue;
            }
            Outcome::Error(_) => {
                idle.borrow_mut().push(client);
                tokio::time::sleep(ctx.cfg.client.error_pause).await;
                continue;
            }
            Outcome::Timeout | Outcome::Refused => idle.borrow_mut().push(client),
            Outcome::Response { .. } => last = Some((client, outcome)),
        }
        let think = session.think_time().unwrap_or(model.think);
        if !think.is_zero() {
            tokio::time::sleep(think).await;
        }
    }
    seat.leave();
}

/// A duration uniform in `[lo, hi]`.
fn draw(rng: &mut SmallRng, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    lo + (hi - lo).mul_f64(rng.random::<f64>())
}
