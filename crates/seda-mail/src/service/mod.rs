//! The service: one stage per request type, sessions, and the handlers that turn a
//! [`MailRequest`] into a [`MailResponse`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use seda::{BuildError, EmulatedProcessor, RejectReason, Runtime, Sink, Stage, handler};
use seda_control::{SharedController, SharedRetryAfter};
use tokio::sync::oneshot;

use crate::cost::CostTable;
use crate::request::{MailEvent, MailRequest, MailResponse, RequestKind};
use crate::search_cost::SearchCosts;
use crate::search_gate::{CountCutsOnly, SearchConnections, SearchGate};
use crate::session::{SessionLimits, Sessions};
use crate::store::{MAX_PAGE, Store};

mod handlers;
mod stage_handler;

use handlers::{Core, not_found};
use stage_handler::TypeHandler;

/// Seconds a rejected client is told to wait (WC03 Section 4.1: users back off 5 s). A
/// refusal at admission is told longer while refusals outnumber admissions
/// ([`seda_control::RetryAfter`]).
pub const RETRY_AFTER_S: u32 = 5;
/// Longest search text.
pub const MAX_QUERY_CHARS: usize = 200;
/// Deepest page of a folder a request may ask for.
pub const MAX_PAGE_NO: u32 = 100_000;

/// Settings of the request-type stages.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// Worker threads per stage (database calls block on them).
    pub threads: usize,
    /// Queue threshold per stage (admission control; the runtime configuration can override
    /// any stage by its name, `mail.<type>`).
    pub threshold: usize,
    /// Messages per page of a folder.
    pub page_size: u32,
    /// Runs the handlers on an emulated processor whose capacity is stated, not measured
    /// (`None`: off, each request costs what it costs this machine): after its real work, each
    /// request holds it for its cost from [`ServiceOptions::costs`]. The lab runs the service
    /// so, at the scale of WC03's 2003 server, where a request cost far more than the load
    /// generator's handling of its reply, and with a capacity of `cores / mean cost` known
    /// before the run whatever else the machine does.
    pub processor: Option<Arc<EmulatedProcessor>>,
    /// What each request costs on the [`ServiceOptions::processor`].
    pub costs: CostTable,
    /// One admission controller for all request types instead of none (WC03 Section 4.4's
    /// single-stage admission control): every stage consults and feeds the same controller, so
    /// it rejects without regard to type. A stage given its own `admission` in the runtime
    /// configuration uses that one instead.
    pub shared_admission: Option<SharedController>,
    /// Session expiry, the cap per user, the limit on failed logins.
    pub sessions: SessionLimits,
    /// Take a request's class from the `x-seda-class` header or `class` cookie, as a trusted
    /// proxy in front sets it (the lab's load generator plays that proxy). Off by default: a
    /// client that could claim the top class would be shed last, so the class comes from the
    /// session table (see [`MailService::class_of`]).
    pub trust_class_header: bool,
    /// Early termination (SERT06) of the read-only request types ([`RequestKind::is_terminable`]:
    /// list and search): their stages cut requests running past this terminator's threshold,
    /// interrupting the running statement through the store's cancel plumbing. A runtime
    /// configuration's `terminate` for one of these stages overrides it; one for a write stage
    /// is refused.
    pub terminate: Option<seda::TerminateConfig>,
    /// Searches run on a small pool of connections of their own, watched as a contended
    /// resource whose culprits the runtime may cut ([`crate::search_gate`]); `None` (the
    /// default): a search takes a connection like any other request.
    pub search_connections: Option<SearchConnections>,
}

/// The admission class of a request that carries no established session and is no login of a
/// known user: the lowest, turned away first.
pub const NEW_SESSION_CLASS: u8 = 0;

/// The admission class of a request of a user of class `user_class` (`users.class`): a login
/// (a new session) of that user, or, with `established`, a request of one of its sessions.
/// User classes rank first, then established sessions above new ones: `2 x user class + 1` for
/// an established session, `2 x user class` for a login. So a high-class user's login goes
/// before a low-class user's session (the high class keeps its target), and within a class
/// sessions go before logins (work invested in a login is not wasted).
pub fn admission_class(user_class: u8, established: bool) -> u8 {
    2 * user_class.min(crate::MAX_CLASS) + u8::from(established)
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            threads: 2,
            threshold: 64,
            page_size: 25,
            processor: None,
            costs: CostTable::arashi(),
            shared_admission: None,
            sessions: SessionLimits::default(),
            trust_class_header: false,
            terminate: None,
            search_connections: None,
        }
    }
}

/// The `Server-Timing` header (W3C Server Timing) that tells the client what its request
/// cost the handler in CPU time (on the emulated processor, where there is one): a browser's
/// developer tools show it, and the lab prices goodput with it request by request, where a
/// type's mean cost misprices
/// the requests answered in time (a search of a small mailbox costs a tenth of one of a large
/// mailbox, and the large ones are the ones answered late).
fn server_timing(used: Duration) -> (String, String) {
    ("server-timing".into(), seda::server_timing_cpu(used))
}

/// The running service: the sinks of its stages and its sessions.
pub struct MailService {
    core: Arc<Core>,
    sinks: Vec<Sink<MailEvent>>,
    trust_class_header: bool,
    /// The emulated processor, if any.
    processor: Option<Arc<EmulatedProcessor>>,
    /// CPU time each request type's handlers used, in [`RequestKind::index`] order.
    cpu: Arc<[HandlerCpu; RequestKind::ALL.len()]>,
    /// The `Retry-After` of a refusal at admission.
    retry: SharedRetryAfter,
}

/// The CPU time one request type's handlers used (on the emulated processor where there is
/// one), in nanoseconds: all of it, and that of the requests they answered (not cut by a terminator nor given up by the
/// store), with their count. A cut search may have run for the whole target: charged to the
/// searches that were answered, it priced each at 62 ms where they took 11-28.
#[derive(Default)]
struct HandlerCpu {
    all_ns: AtomicU64,
    answered_ns: AtomicU64,
    answered: AtomicU64,
}

impl HandlerCpu {
    fn add(&self, used: Duration, answered: bool) {
        let ns = u64::try_from(used.as_nanos()).unwrap_or(u64::MAX);
        self.all_ns.fetch_add(ns, Ordering::Relaxed);
        if answered {
            self.answered_ns.fetch_add(ns, Ordering::Relaxed);
            self.answered.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for MailService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailService")
            .field("backend", &self.core.store.backend())
            .finish_non_exhaustive()
    }
}

impl MailService {
    /// Adds the seven request-type stages (`mail.login`...) to `rt`.
    pub fn start(
        rt: &Runtime,
        store: Arc<dyn Store>,
        options: &ServiceOptions,
    ) -> Result<Arc<MailService>, BuildError> {
        let sessions = Sessions::new(options.sessions);
        // The operator's classed users, so that their logins are ranked before they have a
        // session (a store that cannot list them ranks every login alike until it logs in).
        match store.classed_users() {
            Ok(users) => {
                for (name, class) in users {
                    sessions.note_class(&name, class);
                }
            }
            Err(e) => eprintln!("seda-mail: cannot read the users' classes: {e}"),
        }
        let core = Arc::new(Core {
            store,
            sessions,
            page_size: options.page_size.clamp(1, MAX_PAGE),
        });
        let mut sinks = Vec::new();
        let cpu: Arc<[HandlerCpu; RequestKind::ALL.len()]> = Arc::default();
        crate::checkpointer::start(&core.store);
        // A search cut or refused for running too long is a refusal like the admission
        // controller's, told the same stretched wait: its retry is predicted and refused before
        // it runs (see `SearchCosts`), so it costs no more than a refusal at the door. (Told
        // the longest wait instead, 120 s, a cut user left a short run for good, and how many
        // did moved `mail-spike`'s rejected share by 28-37% from run to run.)
        let retry = SharedRetryAfter::around(RETRY_AFTER_S);
        let search_costs = Arc::new(SearchCosts::default());
        let gate = options
            .search_connections
            .map(|s| Arc::new(SearchGate::new(s)));
        if let Some(g) = &gate {
            rt.watch(g.resource().clone());
        }
        for kind in RequestKind::ALL {
            let gate = gate.clone().filter(|_| kind == RequestKind::Search);
            let mut builder = Stage::builder(kind.stage_name());
            if let Some(shared) = &options.shared_admission {
                builder = builder.admission(Box::new(shared.clone()));
            }
            refuse_terminable_write(rt, kind)?;
            if let Some(t) = options.terminate.as_ref().filter(|_| kind.is_terminable()) {
                let terminator = t.build().map_err(|source| {
                    BuildError::Config(seda::ConfigError::Terminate {
                        stage: kind.stage_name(),
                        source,
                    })
                })?;
                builder = builder.terminate(terminator);
            } else if gate.as_ref().is_some_and(|g| g.cuts_culprits()) {
                builder = builder.terminate(Box::new(CountCutsOnly));
            }
            let one = TypeHandler {
                kind,
                core: core.clone(),
                processor: options.processor.clone(),
                costs: options.costs.clone(),
                cpu: cpu.clone(),
                search_costs: search_costs.clone(),
                retry: retry.clone(),
                gate,
            };
            let sink = rt.stage(
                builder
                    .threads(options.threads.max(1))
                    .threshold(options.threshold.max(1))
                    .batch(1)
                    .handler(handler::each(move |ev: MailEvent, cx| one.handle(ev, cx)))
                    .on_drop(|ev: MailEvent, _reason| {
                        ev.respond(MailResponse::unavailable(RETRY_AFTER_S));
                    }),
            )?;
            sinks.push(sink);
        }
        Ok(Arc::new(MailService {
            core,
            sinks,
            trust_class_header: options.trust_class_header,
            processor: options.processor.clone(),
            cpu,
            retry,
        }))
    }

    /// The emulated processor the handlers run on, if any ([`ServiceOptions::processor`]).
    pub fn processor(&self) -> Option<&Arc<EmulatedProcessor>> {
        self.processor.as_ref()
    }

    /// CPU seconds each request type's handlers have used since start (on the emulated
    /// processor, where there is one), by type name: what the requests cost the server, whatever their mix (the lab
    /// prices a run's goodput with it).
    pub fn handler_cpu_s(&self) -> BTreeMap<&'static str, f64> {
        self.per_type(|c| c.all_ns.load(Ordering::Relaxed) as f64 / 1e9)
    }

    /// The part of [`Self::handler_cpu_s`] spent on requests the handlers answered (not cut by
    /// a terminator nor given up by the store), and how many they answered, by type name: what
    /// an answered request of each type cost.
    pub fn answered_cpu_s(&self) -> BTreeMap<&'static str, (f64, u64)> {
        self.per_type(|c| {
            let ns = c.answered_ns.load(Ordering::Relaxed);
            (ns as f64 / 1e9, c.answered.load(Ordering::Relaxed))
        })
    }

    fn per_type<T>(&self, read: impl Fn(&HandlerCpu) -> T) -> BTreeMap<&'static str, T> {
        RequestKind::ALL
            .iter()
            .map(|k| (k.name(), read(&self.cpu[k.index()])))
            .collect()
    }

    /// `request` with the class admission control will see: the session's (0 without one),
    /// or, with [`ServiceOptions::trust_class_header`], what the client sent.
    fn classified(&self, mut request: MailRequest) -> MailRequest {
        request.meta.set_class(self.class_of(&request));
        request
    }

    /// The class admission control sees for `request`, from the service's own tables
    /// ([`admission_class`]): for a login, the class of the account it names (the operator's,
    /// from `users.class`: a login attempt for a name gets that name's rank, and a wrong
    /// password costs it one check and counts against the name's failed logins); for a
    /// request of a live session, its user's class as an established session; otherwise
    /// [`NEW_SESSION_CLASS`]. With [`ServiceOptions::trust_class_header`], the one it carries.
    ///
    /// Why: session-aware admission (SBAC02, `seda_control::SessionAwareController`) prefers
    /// higher classes and reads from them which requests are established sessions. A login is
    /// a new session even when it carries a cookie.
    pub fn class_of(&self, request: &MailRequest) -> u8 {
        if self.trust_class_header {
            return request.meta.class();
        }
        if request.method == "POST" && request.path == "/login" {
            let user_class = request
                .form
                .get("user")
                .map_or(0, |name| self.core.sessions.user_class(name));
            return admission_class(user_class, false);
        }
        request
            .cookies
            .get("sid")
            .and_then(|sid| self.core.sessions.class(sid, Instant::now()))
            .map_or(NEW_SESSION_CLASS, |c| admission_class(c, true))
    }

    /// The storage backend.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.core.store
    }

    /// The sink of a request type's stage.
    pub fn sink(&self, kind: RequestKind) -> &Sink<MailEvent> {
        &self.sinks[kind.index()]
    }

    /// Routes a request to its stage. The receiver gets the response; an immediate response
    /// (unknown path: 404; stage rejected it: 503 with `Retry-After`) comes back as `Err`.
    pub fn submit(
        &self,
        request: MailRequest,
    ) -> Result<(RequestKind, oneshot::Receiver<MailResponse>), (Option<RequestKind>, MailResponse)>
    {
        let Some(kind) = RequestKind::route(&request.method, &request.path) else {
            return Err((None, not_found()));
        };
        let (event, rx) = MailEvent::new(self.classified(request));
        match self.sink(kind).enqueue(event) {
            Ok(()) => {
                self.retry.admitted();
                Ok((kind, rx))
            }
            Err(rejected) => Err((Some(kind), self.unadmitted(rejected.reason))),
        }
    }

    /// Routes an event to its stage; when there is no such page (404) or the stage does not
    /// admit it (503 with `Retry-After`), answers it at once. Returns its type, if routed.
    pub fn dispatch(&self, mut event: MailEvent) -> Option<RequestKind> {
        event.request = self.classified(event.request);
        let Some(kind) = RequestKind::route(&event.request.method, &event.request.path) else {
            event.respond(not_found());
            return None;
        };
        match self.sink(kind).enqueue(event) {
            Ok(()) => {
                self.retry.admitted();
            }
            Err(rejected) => {
                let response = self.unadmitted(rejected.reason);
                rejected.event.respond(response);
            }
        }
        Some(kind)
    }

    /// The answer to a request its stage did not admit: 503, with a `Retry-After` stretched
    /// while refusals outnumber admissions.
    fn unadmitted(&self, reason: RejectReason) -> MailResponse {
        let (why, wait) = match reason {
            RejectReason::Closed => ("shutting down", RETRY_AFTER_S),
            _ => ("overloaded", self.retry.refused()),
        };
        MailResponse::unavailable(wait).with_header("x-seda-reject", why.into())
    }
}

/// A runtime configuration that makes a write's stage terminable is refused: a cut write
/// would leave its request half done from the client's view (SERT06 cuts read-only requests).
fn refuse_terminable_write(rt: &Runtime, kind: RequestKind) -> Result<(), BuildError> {
    let name = kind.stage_name();
    let configured = rt
        .configuration()
        .stages
        .get(&name)
        .is_some_and(|s| s.terminate.is_some());
    if configured && !kind.is_terminable() {
        return Err(BuildError::Config(seda::ConfigError::Stage {
            stage: name,
            setting: "terminate",
            reason: "only list and search requests may be terminated, never a write or a \
                     login"
                .into(),
        }));
    }
    Ok(())
}
