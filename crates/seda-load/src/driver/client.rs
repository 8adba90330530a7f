//! One client: a connection (opened on demand), the encode buffer, the AIMD gate.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use seda_control::AimdWindow;
use tokio::sync::oneshot;

use super::Ctx;
use crate::http::{Capture, Conn, HttpError, Response, encode_request};
use crate::record::Outcome;
use crate::workload::{Reply, Request};

/// SSM's client-side AIMD window shared by all clients of a run: a request waits for a slot
/// before it is sent.
pub(crate) struct Gate {
    window: RefCell<AimdWindow>,
    waiters: RefCell<VecDeque<oneshot::Sender<()>>>,
}

impl Gate {
    pub fn new(window: AimdWindow) -> Gate {
        Gate {
            window: RefCell::new(window),
            waiters: RefCell::new(VecDeque::new()),
        }
    }

    /// Takes a slot if one is free now and nobody waits for one.
    fn try_acquire(&self) -> bool {
        self.waiters.borrow().is_empty() && self.window.borrow_mut().try_acquire()
    }

    async fn acquire(&self) {
        if self.try_acquire() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.borrow_mut().push_back(tx);
        // An error means the run is over and the gate is being torn down.
        let _ = rx.await;
    }

    fn finish(&self, success: bool, latency: Duration) {
        {
            let mut w = self.window.borrow_mut();
            if success {
                w.on_reply(latency)
            } else {
                w.on_failure()
            }
        }
        let mut waiters = self.waiters.borrow_mut();
        loop {
            while waiters.front().is_some_and(|w| w.is_closed()) {
                waiters.pop_front();
            }
            if waiters.is_empty() || !self.window.borrow_mut().try_acquire() {
                return;
            }
            // Single-threaded: the receiver checked open above cannot have gone since.
            if let Some(w) = waiters.pop_front() {
                let _ = w.send(());
            }
        }
    }

    /// The current window, for tests and reports.
    pub fn window(&self) -> f64 {
        self.window.borrow().window()
    }
}

/// One client's connection and buffers.
pub(crate) struct Client {
    pub id: usize,
    conn: Option<Conn>,
    encoded: Vec<u8>,
    /// What is kept of the last reply for the session.
    capture: Capture,
}

impl Client {
    pub fn new(id: usize) -> Client {
        Client {
            id,
            conn: None,
            encoded: Vec::new(),
            capture: Capture::default(),
        }
    }

    /// Keep the first `body_bytes` of each reply's body, and its headers if `headers`.
    pub fn capture(&mut self, body_bytes: usize, headers: bool) {
        self.capture.body_max = body_bytes;
        self.capture.headers_on = headers;
    }

    /// Sends `req` and waits for its end, sending it again while the server refuses it and
    /// the client's retries and retry budget allow; records it once, with latency measured
    /// from `intended` to the last attempt's end.
    pub async fn send(&mut self, ctx: &Ctx, req: &Request, intended: Instant) -> Outcome {
        let measured = ctx.measured(intended);
        if let Some(b) = &ctx.retry_budget {
            b.borrow_mut().on_request(ctx.elapsed());
        }
        let mut retries_left = ctx.cfg.client.retries;
        let mut first = true;
        let outcome = loop {
            let outcome = self.attempt(ctx, req, intended, measured && first).await;
            first = false;
            let refused = matches!(outcome, Outcome::Response { status: 503, .. });
            if !refused || retries_left == 0 {
                break outcome;
            }
            let allowed = ctx
                .retry_budget
                .as_ref()
                .is_none_or(|b| b.borrow_mut().try_retry(ctx.elapsed()));
            if measured {
                ctx.rec.borrow_mut().retry(allowed);
            }
            if !allowed {
                break outcome;
            }
            retries_left -= 1;
        };
        if measured {
            let latency = match outcome {
                Outcome::Refused => Duration::ZERO,
                _ => intended.elapsed(),
            };
            ctx.rec
                .borrow_mut()
                .done(self.id, req.class, outcome, latency);
        }
        outcome
    }

    /// One attempt at `req`: through the throttle and the AIMD gate, then the exchange, by the
    /// deadline counted from `intended`; `record_sent` counts it sent (the request's first,
    /// measured attempt).
    async fn attempt(
        &mut self,
        ctx: &Ctx,
        req: &Request,
        intended: Instant,
        record_sent: bool,
    ) -> Outcome {
        if !throttle_lets_send(ctx) {
            if record_sent {
                ctx.rec.borrow_mut().sent(self.id, req.class);
            }
            return Outcome::Refused;
        }
        if let Some(gate) = &ctx.gate {
            if ctx.cfg.client.aimd_reject_when_full {
                // SSM04: the stub rejects what its window cannot take; the server never sees it.
                if !gate.try_acquire() {
                    if record_sent {
                        ctx.rec.borrow_mut().sent(self.id, req.class);
                    }
                    return Outcome::Refused;
                }
            } else {
                gate.acquire().await;
            }
        }
        if record_sent {
            ctx.rec.borrow_mut().sent(self.id, req.class);
        }
        let deadline = intended + ctx.cfg.client.deadline;
        let sent_at = Instant::now();
        // A request that waited past its deadline before it could be sent (open model backlog,
        // AIMD gate) is a timeout without bothering the server, and the connection stays.
        let attempted = sent_at < deadline;
        let result = if !attempted {
            None
        } else {
            tokio::time::timeout_at(deadline.into(), self.exchange(ctx, req))
                .await
                .ok()
        };
        let done_at = Instant::now();
        let outcome = match result {
            None => {
                if attempted {
                    // Cut off mid-exchange: the connection's state is unknown.
                    self.conn = None;
                }
                Outcome::Timeout
            }
            Some(Err(e)) => {
                self.conn = None;
                Outcome::Error(e.kind())
            }
            Some(Ok(Response {
                status,
                body_bytes,
                keep_alive,
            })) => {
                let limit = ctx.cfg.client.requests_per_connection;
                let used = self.conn.as_ref().map_or(0, |c| c.requests);
                if !keep_alive || (limit > 0 && used >= limit) {
                    self.conn = None;
                }
                Outcome::Response {
                    status,
                    bytes: body_bytes,
                    server_cpu_us: self.capture.server_cpu_us,
                }
            }
        };
        if let Some(gate) = &ctx.gate {
            let ok = matches!(outcome, Outcome::Response { status, .. } if status < 500);
            gate.finish(ok, done_at - sent_at);
        }
        if let Some(t) = &ctx.throttle
            && matches!(outcome, Outcome::Response { status, .. } if status != 503)
        {
            t.borrow_mut().on_accept(ctx.elapsed());
        }
        outcome
    }

    async fn exchange(&mut self, ctx: &Ctx, req: &Request) -> Result<Response, HttpError> {
        let cfg = &ctx.cfg;
        let mut retried = false;
        loop {
            let conn = match &mut self.conn {
                Some(c) => c,
                None => self
                    .conn
                    .insert(Conn::connect(cfg.target.addr, cfg.client.connect_timeout).await?),
            };
            let limit = cfg.client.requests_per_connection;
            let last = limit > 0 && conn.requests + 1 >= limit;
            self.encoded.clear();
            encode_request(&mut self.encoded, req, &cfg.target.host_header, last);
            match conn
                .exchange(&self.encoded, &mut self.capture, ctx.limits)
                .await
            {
                // The server timed out an idle keep-alive connection: once, on a new one, and
                // only for an idempotent method. The server may have read and acted on the
                // request before it closed (a `POST /delete` run twice purges a message).
                Err(HttpError::Stale) if !retried && idempotent(req.method) => {
                    self.conn = None;
                    retried = true;
                }
                other => return other,
            }
        }
    }

    /// The last response's `Retry-After`, seconds.
    pub fn retry_after_s(&self) -> Option<u32> {
        self.capture.retry_after_s
    }

    /// The reply a session sees, for an outcome.
    pub fn reply<'a>(&'a self, outcome: &Outcome) -> Option<Reply<'a>> {
        match *outcome {
            Outcome::Response { status, bytes, .. } => Some(Reply {
                status,
                body_bytes: bytes,
                body: &self.capture.body,
                headers: &self.capture.headers,
            }),
            _ => None,
        }
    }
}

/// Methods that RFC 9110 (9.2.2) calls idempotent: sending one twice has the effect of
/// sending it once, so a request lost on a stale connection may be sent again.
pub(crate) fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
    )
}

/// Whether the adaptive throttle, if the client has one, lets a request go now (it counts the
/// request either way).
fn throttle_lets_send(ctx: &Ctx) -> bool {
    let Some(t) = &ctx.throttle else {
        return true;
    };
    t.borrow_mut().try_send(ctx.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_idempotent_methods_are_retried() {
        for m in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"] {
            assert!(idempotent(m), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", "get", ""] {
            assert!(!idempotent(m), "{m}");
        }
    }
    use seda_control::AimdWindowConfig;

    #[tokio::test(flavor = "current_thread")]
    async fn the_gate_holds_requests_beyond_the_window() {
        let gate = std::rc::Rc::new(Gate::new(AimdWindow::new(AimdWindowConfig {
            initial: 2.0,
            ..Default::default()
        })));
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                gate.acquire().await;
                gate.acquire().await;
                let g = gate.clone();
                let third = tokio::task::spawn_local(async move { g.acquire().await });
                tokio::task::yield_now().await;
                assert!(
                    !third.is_finished(),
                    "a third request got past a window of 2"
                );
                gate.finish(true, Duration::from_millis(1));
                third.await.unwrap();
                gate.finish(false, Duration::ZERO);
                assert!(gate.window() < 2.0, "window {}", gate.window());
            })
            .await;
    }
}
