//! What a parked connection keeps while it waits for its next request: the socket, its
//! state, and this small wait (no hyper connection, no buffers).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Instant;

use tokio::time::Sleep;

use super::Shared;
use super::stats::inc;
use super::watch::{ConnState, Verdict, WatchedStream};

/// How [`wait_parked`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Bytes (or an EOF, or an error) to read.
    Readable,
    /// The idle or head time is up, or the server shuts down: close the connection.
    Close,
    /// `park_at` passed first.
    Park,
}

/// Counts a connection as parked while it lives.
pub(super) struct ParkedGuard<'a>(&'a Shared);

impl<'a> ParkedGuard<'a> {
    pub(super) fn count(shared: &'a Shared) -> Self {
        shared.counters.parked.fetch_add(1, Ordering::Relaxed);
        ParkedGuard(shared)
    }
}

impl Drop for ParkedGuard<'_> {
    fn drop(&mut self) {
        self.0.counters.parked.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Waits, with no hyper connection, until a parked connection has bytes to read, its idle (or
/// head) time is up or the server shuts down (close it), or `park_at` passes (park it: a
/// busy connection that went idle gives its buffers back).
///
/// Every parked connection keeps this wait, so it is written for size: the socket's readiness
/// is polled in place (its `readable()` future alone is 152 bytes), the shutdown is a
/// `Notified` (64 bytes, against 144 for a `watch` wait), and one timer is re-armed in place.
pub(super) async fn wait_parked(
    shared: &Shared,
    state: &ConnState,
    io: &WatchedStream,
    park_at: Option<Instant>,
) -> Wait {
    let timer = std::pin::pin!(tokio::time::sleep_until(Instant::now().into()));
    wait_parked_on(shared, state, io, park_at, timer).await
}

/// [`wait_parked`] on the caller's `timer`, re-armed in place: a busy connection keeps one
/// across its requests, and moving its deadline later costs tokio no new registration
/// (a timer made and dropped per request cost about 400 of a static hit's instructions).
pub(super) async fn wait_parked_on(
    shared: &Shared,
    state: &ConnState,
    io: &WatchedStream,
    park_at: Option<Instant>,
    mut timer: Pin<&mut Sleep>,
) -> Wait {
    let cfg = &shared.config;
    let mut stopping = std::pin::pin!(shared.stopping.notified());
    // Registered before the flag is read, so a shutdown between the two is not missed.
    stopping.as_mut().enable();
    if *shared.shutdown.borrow() {
        return Wait::Close;
    }
    loop {
        let until = match state.verdict(Instant::now(), cfg.header_timeout(), cfg.idle_timeout()) {
            Verdict::Until(t) => t,
            Verdict::IdleTimeout => {
                inc(&shared.counters.idle_closed);
                return Wait::Close;
            }
            Verdict::HeadTimeout => {
                inc(&shared.counters.header_timeouts);
                return Wait::Close;
            }
        };
        if park_at.is_some_and(|p| p <= Instant::now()) {
            return Wait::Park;
        }
        let until = park_at.map_or(until, |p| p.min(until));
        timer.as_mut().reset(until.into());
        let woke = std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = io.poll_readable(cx) {
                return Poll::Ready(Some(if r.is_ok() {
                    Wait::Readable
                } else {
                    Wait::Close
                }));
            }
            if stopping.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Some(Wait::Close));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        if let Some(wait) = woke {
            return wait;
        }
    }
}
