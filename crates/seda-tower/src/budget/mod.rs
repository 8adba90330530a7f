//! Deadlines: a request's time budget, read at the door, enforced while it runs, and sent on
//! to the next tier (issue 53, part 2).
//!
//! The AWS Builders' Library's advice on overload is to drop work older than its client's
//! timeout: a reply nobody waits for is wasted work that an overloaded service can least
//! afford. gRPC does it across tiers by sending each call's remaining budget
//! (`grpc-timeout`). The layer does both:
//!
//! - at the door ([`parse`]): the budget from `grpc-timeout` or [`DEADLINE_HEADER`] (the
//!   stricter when both), or the route's default; a request whose budget is spent, or below
//!   what recent response times say it needs ([`recent`]), is answered `504` with
//!   `x-seda-reject: deadline` before the inner service or the controller sees it;
//! - while it runs ([`timer`]): an admitted request whose deadline passes has its inner future
//!   dropped (releasing what it held, an upstream call included) and is answered the same way;
//! - downstream ([`request`]): the handler finds a [`RequestDeadline`] in the request's
//!   extensions and [`RequestDeadline::propagate`] writes what is left into its outgoing
//!   calls' headers.

mod parse;
mod recent;
mod request;
mod state;
mod timer;

pub use parse::{
    BudgetError, DEADLINE_HEADER, GRPC_TIMEOUT, MAX_BUDGET, budget_from_headers, parse_deadline_ms,
    parse_grpc_timeout,
};
pub use request::{PROPAGATION_ALLOWANCE, RequestDeadline};
pub use state::{DEADLINE, DeadlineStats, Deadlines};

pub(crate) use state::{DeadlineState, deadline_response};
pub(crate) use timer::BudgetTimer;

#[cfg(test)]
pub(crate) use parse::MALFORMED_GRPC_TIMEOUTS;
