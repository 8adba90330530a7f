//! One request through a tier: a slot in the window below (ours), the tier's own work (a hold
//! of one of its workers), the call below with the budget left (again, if it was refused and
//! [`ClientHelp`] allows), and the answer relayed up with what the tier that answered said
//! (`Retry-After`, `x-seda-reject`).
//!
//! A [`Ledger`] follows the request: when the handler's future is dropped before the answer
//! (the caller left, or the seda layer cut the request at its deadline), its `Drop` counts the
//! request cancelled, the work spent on it wasted, and frees its slot. Dropping the future
//! also drops the call below, which closes that connection, and the tier below sees its
//! client gone: cancellation runs down the tiers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, Request, Response, StatusCode, Uri, header};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use seda_control::dagor::Priority;
use seda_tower::{REJECT_HEADER, RequestDeadline};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::counters::{Below, Counters};
use super::dagor::DagorTier;
use super::help::ClientHelp;
use super::window::{DownstreamWindow, Slot};

/// The largest answer from below relayed whole.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// A tier: its work, its workers, the tier below and how it is called.
pub struct Tier {
    pub counters: Counters,
    /// Ours: the window over the tiers below; `None`: the tier controls alone.
    pub window: Option<Mutex<DownstreamWindow>>,
    /// DAGOR: its agent and the level of the tier below; `None`: not DAGOR.
    pub dagor: Option<DagorTier>,
    /// Calls below in flight at once, the rest waiting in a bounded queue (`--below-limit`).
    pub below_limit: Option<BelowLimit>,
    /// How calls below are throttled and retried (`--throttle`, `--retries`).
    pub help: ClientHelp,
    pub workers: Semaphore,
    pub work: Duration,
    /// The tier below, as `http://host:port/path`; the request's query is passed on.
    pub downstream: String,
    pub client: Client<HttpConnector, Body>,
}

/// A bound on the calls below in flight, with a bounded queue of the calls waiting: the back's
/// gate under DAGOR, where requests queue in the tier, so that its agent sees their wait.
pub struct BelowLimit {
    pub slots: Semaphore,
    /// Calls allowed to wait for a slot; past them, 503 with `Retry-After`.
    pub queue: usize,
    pub waiting: std::sync::atomic::AtomicUsize,
}

/// A place in [`BelowLimit`]'s queue, given back when dropped (served, or the caller left).
struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Waiting<'a> {
    /// A place, if fewer than the queue's bound are waiting.
    fn enter(limit: &'a BelowLimit) -> Option<Waiting<'a>> {
        use std::sync::atomic::Ordering::Relaxed;
        limit
            .waiting
            .fetch_update(Relaxed, Relaxed, |n| (n < limit.queue).then_some(n + 1))
            .ok()
            .map(|_| Waiting(&limit.waiting))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Tier {
    fn window(&self) -> Option<std::sync::MutexGuard<'_, DownstreamWindow>> {
        self.window.as_ref().map(super::lock)
    }

    /// The window's size now, for the stats.
    pub fn window_size(&self) -> Option<f64> {
        self.window().map(|w| w.size())
    }
}

/// A request's account in its tier, settled once or counted cancelled when dropped.
struct Ledger<'a> {
    tier: &'a Tier,
    slot: Option<Slot>,
    spent: Duration,
    working_since: Option<Instant>,
    in_call: bool,
    settled: bool,
}

impl Ledger<'_> {
    fn settle(&mut self, below: Below, latency: Duration) {
        self.settled = true;
        let c = &self.tier.counters;
        c.below(below);
        if below != Below::Ok {
            c.wasted(self.spent);
        }
        if let (Some(slot), Some(mut w)) = (self.slot.take(), self.tier.window()) {
            match below {
                Below::Ok => w.succeeded(slot, latency),
                Below::Refused | Below::Deadline => w.refused(slot),
                Below::Failed => w.cancelled(slot),
            }
        }
    }
}

impl Drop for Ledger<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let c = &self.tier.counters;
        if let Some(since) = self.working_since.take() {
            let part = since.elapsed();
            c.worked(part, false);
            self.spent += part;
        }
        c.cancelled(self.in_call);
        c.wasted(self.spent);
        if let (Some(slot), Some(mut w)) = (self.slot.take(), self.tier.window()) {
            w.cancelled(slot);
        }
    }
}

/// DAGOR's level on an answer going up (nothing when the tier is not DAGOR).
fn stamped(tier: &Tier, mut r: Response<Body>) -> Response<Body> {
    if let Some(d) = &tier.dagor {
        d.stamp(r.headers_mut());
    }
    r
}

/// The tier's own refusal of a request before its call below: the status, the reason it
/// gives in `x-seda-reject` (with `Retry-After`) and the body, for [`answer`].
struct Refusal(StatusCode, Option<&'static str>, &'static str);

fn answer(status: StatusCode, reject: Option<&'static str>, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    if let Some(why) = reject {
        r.headers_mut()
            .insert(REJECT_HEADER, header::HeaderValue::from_static(why));
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    r
}

/// `GET /?...`: the tier's part of a request, then the call below.
pub async fn handle(
    State(tier): State<Arc<Tier>>,
    deadline: Option<axum::Extension<RequestDeadline>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response<Body> {
    let tier = &*tier;
    let r = serve(tier, deadline, uri, &headers).await;
    stamped(tier, r)
}

/// A request's way through the tier: the door, the tier's own work, a slot below, the call.
async fn serve(
    tier: &Tier,
    deadline: Option<axum::Extension<RequestDeadline>>,
    uri: Uri,
    headers: &HeaderMap,
) -> Response<Body> {
    tier.counters.arrived();
    let arrived = Instant::now();
    let (priority, slot) = match at_the_door(tier, headers) {
        Ok(admitted) => admitted,
        Err(Refusal(status, why, body)) => return answer(status, why, body),
    };
    let mut ledger = Ledger {
        tier,
        slot,
        spent: Duration::ZERO,
        working_since: None,
        in_call: false,
        settled: false,
    };
    let worker_wait = match own_work(&mut ledger, arrived).await {
        Ok(waited) => waited,
        Err(Refusal(status, why, body)) => return answer(status, why, body),
    };
    let (_below_slot, slot_wait) = match slot_below(&mut ledger).await {
        Ok(held) => held,
        Err(Refusal(status, why, body)) => return answer(status, why, body),
    };
    if let Some(d) = &tier.dagor {
        d.on_dequeue(worker_wait + slot_wait);
    }
    let target = match uri.query() {
        Some(q) => format!("{}?{q}", tier.downstream),
        None => tier.downstream.clone(),
    };
    call_with_retries(&mut ledger, &target, priority, deadline).await
}

/// The door, before any work: the throttle (`--throttle`) on the request's first call (what
/// it refuses costs this tier nothing), DAGOR's levels, then a slot in our window below. The
/// request's priority and its slot, or the refusal.
fn at_the_door(
    tier: &Tier,
    headers: &HeaderMap,
) -> Result<(Option<Priority>, Option<Slot>), Refusal> {
    if !tier.help.may_send() {
        tier.counters.throttled();
        return Err(Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            Some("throttled"),
            "",
        ));
    }
    let priority = tier.dagor.as_ref().map(|d| d.priority(headers));
    if let (Some(d), Some(p)) = (&tier.dagor, priority) {
        // DAGOR18 Section 4.2: this tier's level, then the level the tier below said.
        if !d.admit(p) {
            tier.counters.refused_at_door();
            return Err(Refusal(StatusCode::SERVICE_UNAVAILABLE, Some("dagor"), ""));
        }
        if !d.below_admits(p) {
            tier.counters.refused_at_door();
            return Err(Refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                Some("downstream"),
                "",
            ));
        }
    }
    let slot = match tier.window() {
        Some(mut w) => match w.try_acquire() {
            Some(s) => Some(s),
            None => {
                tier.counters.refused_at_door();
                return Err(Refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some("downstream"),
                    "",
                ));
            }
        },
        None => None,
    };
    Ok((priority, slot))
}

/// The tier's own work: one of its workers held for `work` (its capacity is workers over
/// work, known before a run). None for a gate (`--work-ms 0`). How long the request waited
/// for a worker since it `arrived`.
async fn own_work(ledger: &mut Ledger<'_>, arrived: Instant) -> Result<Duration, Refusal> {
    let tier = ledger.tier;
    if tier.work.is_zero() {
        return Ok(Duration::ZERO);
    }
    let Ok(_worker) = tier.workers.acquire().await else {
        ledger.settle(Below::Failed, Duration::ZERO);
        return Err(Refusal(StatusCode::SERVICE_UNAVAILABLE, Some("closed"), ""));
    };
    let start = Instant::now();
    ledger.working_since = Some(start);
    tokio::time::sleep(tier.work).await;
    ledger.working_since = None;
    ledger.spent = start.elapsed();
    tier.counters.worked(ledger.spent, true);
    Ok(start - arrived)
}

/// A slot below (`--below-limit`), waited for in a bounded queue and held until the answer,
/// with how long the request waited for it.
async fn slot_below<'a>(
    ledger: &mut Ledger<'a>,
) -> Result<(Option<SemaphorePermit<'a>>, Duration), Refusal> {
    let tier = ledger.tier;
    let Some(limit) = &tier.below_limit else {
        return Ok((None, Duration::ZERO));
    };
    let Some(ticket) = Waiting::enter(limit) else {
        tier.counters.refused_at_door();
        ledger.settle(Below::Refused, Duration::ZERO);
        return Err(Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            Some("overload"),
            "",
        ));
    };
    let waited_since = Instant::now();
    let slot = limit.slots.acquire().await;
    drop(ticket);
    let Ok(slot) = slot else {
        ledger.settle(Below::Failed, Duration::ZERO);
        return Err(Refusal(StatusCode::SERVICE_UNAVAILABLE, Some("closed"), ""));
    };
    Ok((Some(slot), waited_since.elapsed()))
}

/// The call below for `target` with the budget left, again while it is refused and
/// [`ClientHelp`] allows, settled in `ledger`; the answer relayed up.
async fn call_with_retries(
    ledger: &mut Ledger<'_>,
    target: &str,
    priority: Option<Priority>,
    deadline: Option<axum::Extension<RequestDeadline>>,
) -> Response<Body> {
    let tier = ledger.tier;
    // The refusal the next call retries, and how long its call took.
    let mut refusal: Option<(Reply, Duration)> = None;
    let mut retries = 0;
    loop {
        let Some(mut request) = request_below(target, priority) else {
            ledger.settle(Below::Failed, Duration::ZERO);
            return answer(StatusCode::BAD_REQUEST, None, "bad query\n");
        };
        let budget = match &deadline {
            Some(axum::Extension(d)) => d.propagate(request.headers_mut()),
            None => Duration::from_secs(30),
        };
        if let Some((refused, latency)) = refusal.take() {
            // A retry goes only with budget left, within the retry budget, past the throttle.
            if budget.is_zero() || !may_retry(tier) {
                ledger.settle(Below::Refused, latency);
                return relay(refused);
            }
        } else if budget.is_zero() {
            // No tier below could finish in time: no call (`RequestDeadline::propagate`).
            ledger.settle(Below::Deadline, Duration::ZERO);
            return answer(StatusCode::GATEWAY_TIMEOUT, Some("deadline"), "");
        } else {
            tier.help.first_call();
        }
        tier.counters.called(retries > 0);
        ledger.in_call = true;
        let sent = Instant::now();
        let reply = tokio::time::timeout(budget, call_below(tier, request)).await;
        let latency = sent.elapsed();
        let Ok(reply) = reply else {
            ledger.settle(Below::Deadline, latency);
            return answer(StatusCode::GATEWAY_TIMEOUT, Some("deadline"), "");
        };
        let Some(reply) = reply else {
            ledger.settle(Below::Failed, latency);
            return answer(
                StatusCode::BAD_GATEWAY,
                None,
                "the tier below did not answer\n",
            );
        };
        if let Some(d) = &tier.dagor {
            d.heard(&reply.headers);
        }
        let below = match reply.status.as_u16() {
            200..=299 => Below::Ok,
            503 => Below::Refused,
            504 => Below::Deadline,
            _ => Below::Failed,
        };
        if below != Below::Refused {
            tier.help.accepted();
        } else if retries < tier.help.retries() {
            retries += 1;
            refusal = Some((reply, latency));
            continue;
        }
        ledger.settle(below, latency);
        return relay(reply);
    }
}

/// Whether a refused call may go again now: within the retry budget, then past the throttle
/// (each counted when it says no).
fn may_retry(tier: &Tier) -> bool {
    if !tier.help.may_retry() {
        tier.counters.retry_denied();
        return false;
    }
    if !tier.help.may_send() {
        tier.counters.throttled();
        return false;
    }
    true
}

/// An answer from below, read whole.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
}

/// The call below for `target`, carrying DAGOR's `priority` when there is one.
fn request_below(target: &str, priority: Option<Priority>) -> Option<Request<Body>> {
    let mut request = Request::get(target).body(Body::empty()).ok()?;
    if let Some(p) = priority
        && let Ok(v) = header::HeaderValue::from_str(&p.to_string())
    {
        request
            .headers_mut()
            .insert(super::dagor::PRIORITY_HEADER, v);
    }
    Some(request)
}

/// One call below and its answer read whole; `None` when it brought no answer.
async fn call_below(tier: &Tier, request: Request<Body>) -> Option<Reply> {
    let response = tier.client.request(request).await.ok()?;
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(Body::new(body), MAX_BODY_BYTES)
        .await
        .ok()?;
    Some(Reply {
        status: parts.status,
        headers: parts.headers,
        bytes,
    })
}

/// The answer from below, with the headers that tell the tiers above why it refused.
fn relay(reply: Reply) -> Response<Body> {
    let Reply {
        status,
        headers,
        bytes,
    } = reply;
    let mut r = Response::new(Body::from(bytes));
    *r.status_mut() = status;
    let keep: [HeaderName; 3] = [
        header::RETRY_AFTER,
        HeaderName::from_static(REJECT_HEADER),
        header::CONTENT_TYPE,
    ];
    for name in keep {
        if let Some(v) = headers.get(&name) {
            r.headers_mut().insert(name, v.clone());
        }
    }
    r
}
