//! One request through its request-type stage: the search's prediction and connection gate,
//! the handler, the emulated processor's stated cost, a terminator's cut, and what the request
//! is charged. Apart from `start`, which builds one of these a stage, so that the path a request
//! takes reads in one place.

use std::sync::Arc;
use std::time::{Duration, Instant};

use seda::{CancelReason, Cx, EmulatedProcessor};
use seda_control::SharedRetryAfter;

use super::handlers::Core;
use super::{HandlerCpu, RETRY_AFTER_S, server_timing};
use crate::cost::CostTable;
use crate::request::{MailEvent, MailResponse, RequestKind};
use crate::search_cost::SearchCosts;
use crate::search_gate::SearchGate;

/// What one request-type stage's handler holds.
pub(super) struct TypeHandler {
    pub(super) kind: RequestKind,
    pub(super) core: Arc<Core>,
    pub(super) processor: Option<Arc<EmulatedProcessor>>,
    pub(super) costs: CostTable,
    pub(super) cpu: Arc<[HandlerCpu; RequestKind::ALL.len()]>,
    pub(super) search_costs: Arc<SearchCosts>,
    pub(super) retry: SharedRetryAfter,
    /// The searches' connections (the search stage only).
    pub(super) gate: Option<Arc<SearchGate>>,
}

impl TypeHandler {
    /// Answers `ev` and charges it.
    pub(super) fn handle(&self, ev: MailEvent, cx: &Cx<'_>) {
        let start = seda::thread_cpu_time();
        let began = Instant::now();
        // In a terminable search stage, a search predicted to run past the
        // threshold is refused before it runs, as it would be cut after
        // running that long (see `SearchCosts`).
        let search = cx
            .termination_threshold()
            .filter(|_| self.kind == RequestKind::Search)
            .and_then(|t| Some((self.core.search_job(&ev.request)?, t)));
        let refused = search
            .as_ref()
            .is_some_and(|(job, t)| self.search_costs.would_run_past(job, *t));
        let cancel = ev.request.meta.cancel_token();
        // A search holds one of the searches' connections from its statement
        // to the end of its work on the processor (the scan's time).
        let slot = self
            .gate
            .as_ref()
            .filter(|_| !refused)
            .map(|g| g.enter(cancel));
        let mut response = if refused {
            MailResponse::predicted_too_long(self.retry.refused())
        } else if slot.as_ref().is_some_and(|s| s.is_none()) {
            // Cut (or cancelled) while it waited for a connection.
            MailResponse::unavailable(RETRY_AFTER_S)
        } else {
            self.core.respond(self.kind, &ev.request)
        };
        let mut used = seda::thread_cpu_time().saturating_sub(start);
        let mut cut_while_held = false;
        if let Some(p) = self.processor.as_ref().filter(|_| !refused) {
            // The emulated processor: the request's stated cost, the real work
            // done. A terminator's cut ends it, as it would have ended the
            // work on a real processor at the same moment.
            // A search's cost grows with the mailbox it scanned, read only here
            // (and only once: the terminable stage's job already has it).
            let rows = if self.kind == RequestKind::Search && response.status == 200 {
                search
                    .as_ref()
                    .map(|(job, _)| job.messages())
                    .or_else(|| self.core.mailbox_messages(&ev.request))
                    .unwrap_or(0)
            } else {
                0
            };
            let cost = if response.status == 503 {
                Duration::ZERO
            } else {
                self.costs.cost(self.kind, rows)
            };
            used = p.run(cost, || cancel.reason() == Some(CancelReason::Terminated));
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
            response = MailResponse::terminated(self.retry.refused());
        }
        let answered = response.status != 503;
        self.cpu[self.kind.index()].add(used, answered);
        if let Some((job, _)) = search.filter(|_| !refused) {
            self.search_costs
                .record(&job, used, began.elapsed(), answered);
        }
        response.headers.push(server_timing(used));
        ev.respond(response);
    }
}
