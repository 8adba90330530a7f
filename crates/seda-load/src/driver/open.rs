//! The open loop: requests arrive on a schedule whatever the server does; each is handed to an
//! idle connection, a new one, or the backlog. Latency counts from the intended arrival time.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::client::Client;
use super::{Ctx, arrivals, seed_for};
use crate::Open;
use crate::workload::Request;

struct Job {
    intended: Instant,
    req: Request,
}

#[derive(Default)]
struct Pool {
    idle: RefCell<Vec<oneshot::Sender<Job>>>,
    backlog: RefCell<VecDeque<Job>>,
    workers: Cell<usize>,
}

pub(crate) async fn pacer(ctx: Rc<Ctx>, model: Open) {
    let pool = Rc::new(Pool::default());
    let mut session = ctx.cfg.workload.session(seed_for(ctx.cfg.seed, u64::MAX));
    arrivals(&ctx, model.arrivals, ctx.cfg.seed, |intended| {
        let job = Job {
            intended,
            req: session.next_request(None),
        };
        dispatch(&ctx, &pool, &model, job);
    })
    .await;
}

/// Hands a due request to an idle connection, a new one, or the backlog. From here until a
/// connection starts on it, the request counts as queued: still queued at the end of the run,
/// it is reported as dropped (due but never sent).
fn dispatch(ctx: &Rc<Ctx>, pool: &Rc<Pool>, model: &Open, mut job: Job) {
    let full = pool.idle.borrow().is_empty()
        && pool.workers.get() >= model.max_connections
        && pool.backlog.borrow().len() >= model.max_backlog;
    if ctx.measured(job.intended) {
        let mut rec = ctx.rec.borrow_mut();
        if full {
            rec.dropped(1)
        } else {
            rec.queued(true)
        }
    }
    if full {
        return;
    }
    loop {
        let Some(tx) = pool.idle.borrow_mut().pop() else {
            break;
        };
        match tx.send(job) {
            Ok(()) => return,
            Err(j) => job = j,
        }
    }
    let workers = pool.workers.get();
    if workers < model.max_connections {
        pool.workers.set(workers + 1);
        ctx.rec.borrow_mut().active = workers + 1;
        tokio::task::spawn_local(worker(ctx.clone(), pool.clone(), workers, job));
    } else {
        pool.backlog.borrow_mut().push_back(job);
    }
}

async fn worker(ctx: Rc<Ctx>, pool: Rc<Pool>, id: usize, first: Job) {
    let mut client = Client::new(id);
    let mut job = first;
    loop {
        if ctx.measured(job.intended) {
            ctx.rec.borrow_mut().queued(false);
        }
        client.send(&ctx, &job.req, job.intended).await;
        let next = pool.backlog.borrow_mut().pop_front();
        job = match next {
            Some(j) => j,
            None => {
                let (tx, rx) = oneshot::channel();
                pool.idle.borrow_mut().push(tx);
                match rx.await {
                    Ok(j) => j,
                    Err(_) => return,
                }
            }
        };
    }
}
