//! The service: one stage per request type, sessions, and the handlers that turn a
//! [`MailRequest`] into a [`MailResponse`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use seda::{
    BuildError, CancelReason, EmulatedProcessor, RejectReason, Runtime, Sink, Stage, handler,
};
use seda_control::{SharedController, SharedRetryAfter};
use tokio::sync::oneshot;

use crate::cost::CostTable;
use crate::html;
use crate::request::{MailEvent, MailRequest, MailResponse, RequestKind};
use crate::search_cost::{SearchCosts, SearchJob};
use crate::search_gate::{CountCutsOnly, SearchConnections, SearchGate};
use crate::session::{Refused, Session, SessionLimits, Sessions};
use crate::store::{MAX_PAGE, MAX_RESULTS, Moved, Page, SearchField, Sort, Store, StoreError};

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

struct Core {
    store: Arc<dyn Store>,
    sessions: Sessions,
    page_size: u32,
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
            let c = core.clone();
            let processor = options.processor.clone();
            let costs = options.costs.clone();
            let cpu = cpu.clone();
            let search_costs = search_costs.clone();
            let retry = retry.clone();
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
            let sink = rt.stage(
                builder
                    .threads(options.threads.max(1))
                    .threshold(options.threshold.max(1))
                    .batch(1)
                    .handler(handler::each(move |ev: MailEvent, cx| {
                        let start = seda::thread_cpu_time();
                        let began = Instant::now();
                        // In a terminable search stage, a search predicted to run past the
                        // threshold is refused before it runs, as it would be cut after
                        // running that long (see `SearchCosts`).
                        let search = cx
                            .termination_threshold()
                            .filter(|_| kind == RequestKind::Search)
                            .and_then(|t| Some((c.search_job(&ev.request)?, t)));
                        let refused = search
                            .as_ref()
                            .is_some_and(|(job, t)| search_costs.would_run_past(job, *t));
                        let cancel = &ev.request.meta.cancel;
                        // A search holds one of the searches' connections from its statement
                        // to the end of its work on the processor (the scan's time).
                        let slot = gate.as_ref().filter(|_| !refused).map(|g| g.enter(cancel));
                        let mut response = if refused {
                            MailResponse::predicted_too_long(retry.refused())
                        } else if slot.as_ref().is_some_and(|s| s.is_none()) {
                            // Cut (or cancelled) while it waited for a connection.
                            MailResponse::unavailable(RETRY_AFTER_S)
                        } else {
                            c.respond(kind, &ev.request)
                        };
                        let mut used = seda::thread_cpu_time().saturating_sub(start);
                        let mut cut_while_held = false;
                        if let Some(p) = processor.as_ref().filter(|_| !refused) {
                            // The emulated processor: the request's stated cost, the real work
                            // done. A terminator's cut ends it, as it would have ended the
                            // work on a real processor at the same moment.
                            // A search's cost grows with the mailbox it scanned, read only here
                            // (and only once: the terminable stage's job already has it).
                            let rows = if kind == RequestKind::Search && response.status == 200 {
                                search
                                    .as_ref()
                                    .map(|(job, _)| job.messages())
                                    .or_else(|| c.mailbox_messages(&ev.request))
                                    .unwrap_or(0)
                            } else {
                                0
                            };
                            let cost = if response.status == 503 {
                                Duration::ZERO
                            } else {
                                costs.cost(kind, rows)
                            };
                            used =
                                p.run(cost, || cancel.reason() == Some(CancelReason::Terminated));
                            cut_while_held = used < cost;
                        }
                        drop(slot);
                        if refused {
                            // Counted terminated by the stage, as if cut.
                            cancel.terminate_now();
                        } else if (response.status == 503 || cut_while_held)
                            && cancel.checkpoint() == Err(CancelReason::Terminated)
                        {
                            // The store gave the request up (503), or the cut came while it
                            // held the processor: the terminator cut it; say so, and the stage counts
                            // it terminated.
                            response = MailResponse::terminated(retry.refused());
                        }
                        let answered = response.status != 503;
                        cpu[kind.index()].add(used, answered);
                        if let Some((job, _)) = search.filter(|_| !refused) {
                            search_costs.record(&job, used, began.elapsed(), answered);
                        }
                        response.headers.push(server_timing(used));
                        ev.respond(response);
                    }))
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
        request.meta.class = self.class_of(&request);
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
            return request.meta.class;
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

fn not_found() -> MailResponse {
    MailResponse::error(404, "No such page.")
}

fn store_error(e: StoreError) -> MailResponse {
    match e {
        StoreError::Cancelled => MailResponse::unavailable(RETRY_AFTER_S),
        e => {
            eprintln!("seda-mail: {e}");
            MailResponse::error(500, "The mail store failed; try again later.")
        }
    }
}

fn bad(message: &str) -> MailResponse {
    MailResponse::error(400, message)
}

fn id_param(req: &MailRequest, name: &str) -> Result<i64, MailResponse> {
    req.param(name)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|&v| v > 0)
        .ok_or_else(|| bad(&format!("`{name}` must be a positive number.")))
}

impl Core {
    fn session(&self, req: &MailRequest) -> Option<Session> {
        let sid = req.cookies.get("sid")?;
        self.sessions.get(sid, Instant::now())
    }

    fn respond(&self, kind: RequestKind, req: &MailRequest) -> MailResponse {
        let out = if kind == RequestKind::Login {
            self.login(req)
        } else {
            match self.session(req) {
                None => Ok(MailResponse::see_other("/login")),
                Some(s) => match kind {
                    RequestKind::ListFolders => self.list_folders(&s, req),
                    RequestKind::ListMessages => self.list_messages(&s, req),
                    RequestKind::ShowMessage => self.show_message(&s, req),
                    RequestKind::Delete => self.delete(&s, req),
                    RequestKind::Refile => self.refile(&s, req),
                    RequestKind::Search => self.search(&s, req),
                    RequestKind::Login => self.login(req),
                },
            }
        };
        out.unwrap_or_else(|r| r)
    }

    fn login(&self, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        match (req.method.as_str(), req.path.as_str()) {
            ("POST", "/logout") => {
                if let Some(sid) = req.cookies.get("sid") {
                    self.sessions.end(sid);
                }
                Ok(MailResponse::see_other("/login")
                    .with_header("set-cookie", "sid=; Path=/; Max-Age=0".into()))
            }
            ("POST", _) => {
                let (Some(user), Some(password)) = (req.form.get("user"), req.form.get("password"))
                else {
                    let mut r = MailResponse::html(html::login_page(Some(
                        "Enter a user name and a password.",
                    )));
                    r.status = 400;
                    return Ok(r);
                };
                if user.len() > 64 || password.len() > 64 {
                    return Err(bad("User names and passwords have at most 64 bytes."));
                }
                if self.sessions.may_try(user, Instant::now()).is_err() {
                    return Err(MailResponse::error(
                        429,
                        "Too many failed logins for this user; wait a minute.",
                    )
                    .with_header("retry-after", "60".into()));
                }
                match self.store.login(user, password, &req.meta) {
                    Ok(Some((id, class))) => {
                        match self.sessions.start(id, user, class, Instant::now()) {
                            Ok(sid) => Ok(MailResponse::see_other("/folders").with_header(
                                "set-cookie",
                                format!("sid={sid}; Path=/; HttpOnly; SameSite=Lax"),
                            )),
                            Err(Refused::Full) => Err(MailResponse::unavailable(RETRY_AFTER_S)),
                            Err(_) => Err(MailResponse::error(500, "Cannot start a session.")),
                        }
                    }
                    Ok(None) => {
                        self.sessions.failed(user, Instant::now());
                        let mut r =
                            MailResponse::html(html::login_page(Some("Wrong user or password.")));
                        r.status = 403;
                        Ok(r)
                    }
                    Err(e) => Err(store_error(e)),
                }
            }
            _ => Ok(MailResponse::html(html::login_page(None))),
        }
    }

    fn list_folders(&self, s: &Session, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        let folders = self.store.folders(s.user, &req.meta).map_err(store_error)?;
        Ok(MailResponse::html(html::folders_page(&s.name, &folders)))
    }

    fn list_messages(&self, s: &Session, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        let folder = id_param(req, "f")?;
        let sort = match req.param("sort") {
            None | Some("") => Sort::Date,
            Some(v) => Sort::from_name(v).ok_or_else(|| bad("Sort by date, sender or subject."))?,
        };
        let page_no = match req.param("page") {
            None | Some("") => 0,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|&p| p <= MAX_PAGE_NO)
                .ok_or_else(|| bad("`page` must be a page number."))?,
        };
        // The UI's links carry the message their page follows (or precedes): a keyset page
        // costs one index seek however deep it is. A bare page number still works.
        let cursor = |name: &str| match req.param(name) {
            None | Some("") => Ok(None),
            Some(_) => id_param(req, name).map(Some),
        };
        let page = match (cursor("after")?, cursor("before")?) {
            (Some(id), _) => Page::After(id),
            (None, Some(id)) => Page::Before(id),
            (None, None) => Page::Offset(page_no.saturating_mul(self.page_size)),
        };
        match self
            .store
            .messages(s.user, folder, sort, page, self.page_size, &req.meta)
            .map_err(store_error)?
        {
            Some((f, rows)) => Ok(MailResponse::html(html::messages_page(
                &f,
                &rows,
                sort,
                page_no,
                self.page_size,
            ))),
            None => Err(MailResponse::error(404, "No such folder.")),
        }
    }

    fn show_message(&self, s: &Session, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        let id = id_param(req, "id")?;
        let Some(m) = self
            .store
            .message(s.user, id, &req.meta)
            .map_err(store_error)?
        else {
            return Err(MailResponse::error(404, "No such message."));
        };
        let folders = self.store.folders(s.user, &req.meta).map_err(store_error)?;
        Ok(MailResponse::html(html::message_page(&m, &folders)))
    }

    fn moved(&self, m: Moved) -> Result<MailResponse, MailResponse> {
        match m {
            Moved::Moved { from, .. }
            | Moved::Purged { from }
            | Moved::Unchanged { folder: from } => {
                Ok(MailResponse::see_other(&format!("/folder?f={from}")))
            }
            Moved::NoMessage => Err(MailResponse::error(404, "No such message.")),
            Moved::NoFolder => Err(MailResponse::error(404, "No such folder.")),
        }
    }

    fn delete(&self, s: &Session, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        let id = id_param(req, "id")?;
        // The folder the client saw the message in (the message page's form sends it): a
        // retried delete then cannot purge what its first attempt moved to Trash.
        let from = match req.param("from") {
            None | Some("") => None,
            Some(_) => Some(id_param(req, "from")?),
        };
        let m = self
            .store
            .delete(s.user, id, from, &req.meta)
            .map_err(store_error)?;
        self.moved(m)
    }

    fn refile(&self, s: &Session, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        let id = id_param(req, "id")?;
        let to = id_param(req, "to")?;
        let m = self
            .store
            .refile(s.user, id, to, &req.meta)
            .map_err(store_error)?;
        self.moved(m)
    }

    fn search(&self, s: &Session, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        let (q, field) = search_params(req)?;
        let rows = self
            .store
            .search(s.user, q, field, MAX_RESULTS, &req.meta)
            .map_err(store_error)?;
        let label = match field {
            SearchField::Headers => "subject and sender",
            SearchField::Body => "body text",
        };
        Ok(MailResponse::html(html::search_page(q, label, &rows)))
    }

    /// The search `req` asks for, as [`SearchCosts`] sees it: `None` for one the handler
    /// refuses anyway (no session, bad parameters) or whose mailbox cannot be read.
    fn search_job(&self, req: &MailRequest) -> Option<SearchJob> {
        let (q, field) = search_params(req).ok()?;
        Some(SearchJob::new(q, field, self.mailbox_messages(req)?))
    }

    /// The messages in the mailbox of `req`'s session (`None`: no session, or the store could
    /// not read it): what a search of it scans.
    fn mailbox_messages(&self, req: &MailRequest) -> Option<u64> {
        let s = self.session(req)?;
        let folders = self.store.folders(s.user, &req.meta).ok()?;
        Some(folders.iter().map(|f| f.count.max(0) as u64).sum())
    }
}

/// A search's text and where it looks.
fn search_params(req: &MailRequest) -> Result<(&str, SearchField), MailResponse> {
    let q = req.param("q").unwrap_or("").trim();
    if q.is_empty() || q.chars().count() > MAX_QUERY_CHARS {
        return Err(bad("Search for 1 to 200 characters."));
    }
    let field = match req.param("in") {
        None | Some("" | "headers") => SearchField::Headers,
        Some("body") => SearchField::Body,
        Some(_) => return Err(bad("Search in `headers` or `body`.")),
    };
    Ok((q, field))
}
