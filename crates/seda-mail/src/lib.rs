//! Arashi, the web e-mail service of the SEDA papers, on a real database.
//!
//! Each request type (login, list folders, list messages, show message, delete, refile, search)
//! is a [`seda`] stage with its own queue, admission control and worker threads, as in WC03
//! Section 4.1, so the expensive types (search, big folder listings) can be throttled without
//! touching the cheap ones. Handlers run blocking database calls on their stage's workers and
//! render server-side HTML.
//!
//! # A tour
//!
//! ```no_run
//! use std::sync::Arc;
//! use seda_mail::{Corpus, MailRequest, MailService, ServiceOptions, store};
//!
//! // Storage: a path is SQLite; mysql:// and postgres:// URLs pick the other backends.
//! let db = store::open("/tmp/arashi.db", "")?;
//! db.reset()?;
//! db.load(&Corpus::new(10, 1))?; // 10 users, deterministic for seed 1, one transaction
//!
//! let rt = seda::Runtime::start().expect("runtime");
//! let mail = MailService::start(&rt, db, &ServiceOptions::default()).expect("stages");
//! let req = MailRequest::parse("GET", "/login", None, None, b"", std::time::Instant::now())
//!     .expect("small request");
//! let (_kind, reply) = mail.submit(req).map_err(|(_, r)| r.status).expect("admitted");
//! let page = reply.blocking_recv().expect("answered");
//! assert_eq!(page.status, 200);
//! rt.shutdown();
//! # Ok::<(), seda_mail::store::StoreError>(())
//! ```
//!
//! # Main types
//!
//! - [`store::Store`]: the storage trait; [`store::open`] picks SQLite (bundled, WAL),
//!   MariaDB/MySQL or PostgreSQL from a URL.
//! - [`Corpus`]: the deterministic corpus generator (folders of 1 to 12,794 messages).
//! - [`MailRequest`], [`MailResponse`], [`MailEvent`]: what the stages consume and produce,
//!   independent of any transport.
//! - [`MailService`]: the stages, sessions and handlers.
//! - [`MailServer`]: runtime, stages and the shared front end (`seda_http::HttpServer`)
//!   assembled; `server.rs` holds the request path from the front end to the stages.
//!
//! The emulated user (WC03's Markov model) as a `seda-load` workload, and the safe-release
//! soak, are the test bed's: `seda_testbed::mail`.
//!
//! # Overload
//!
//! A stage whose queue is full rejects at enqueue: the client gets 503 with `Retry-After: 5`
//! (spread up to 8, half a wait above it rounded, so that refused clients do not return
//! together).
//! Runtime configuration (stage names `mail.<type>`) can add token buckets or adaptive
//! controllers per type. A request's class comes from the service's own tables
//! ([`admission_class`]): `2 x users.class` for a login of that account, `2 x users.class + 1`
//! for a request of an established session, 0 ([`NEW_SESSION_CLASS`]) otherwise; or, with
//! [`ServiceOptions::trust_class_header`] (a trusted proxy in front), from the `x-seda-class`
//! header or `class` cookie. It travels in the request's [`seda::Meta`]. Session-aware
//! admission (`seda_control::SessionAwareController`, SBAC02), shared by all stages
//! (`seda serve mail --single-admission session_aware,target_s=1`), then serves established
//! sessions before new logins: a login admitted while sessions are turned away would be work
//! wasted.
//!
//! # Cancellation
//!
//! When a client disconnects, the front end cancels the request's token. A queued request is then
//! dropped by its stage (answered 503 through the stage's drop hook); one inside the database is
//! interrupted ([`store::watch`]): SQLite's interrupt handle, PostgreSQL's cancel request,
//! MariaDB's `KILL QUERY`. Writes are single transactions, so an interrupted delete or refile
//! leaves the message exactly where it was.

#![warn(missing_docs)]

mod checkpointer;
pub mod corpus;
pub mod cost;
pub mod html;
mod mailbox;
pub mod password;
mod percent;
mod request;
mod search_cost;
pub mod search_gate;
mod server;
mod service;
pub mod session;
mod stats;
pub mod store;

pub use corpus::Corpus;
pub use percent::{percent_decode, percent_encode};
pub use request::{
    MAX_CLASS, MAX_FIELDS, MAX_FORM_BYTES, MailEvent, MailRequest, MailResponse, RequestKind,
    Responder, parse_cookies, parse_urlencoded,
};
pub use server::{MailServer, MailServerConfig, MailStartError, parse_head, to_hyper};
pub use service::{
    MAX_QUERY_CHARS, MailService, NEW_SESSION_CLASS, RETRY_AFTER_S, ServiceOptions, admission_class,
};
pub use stats::ServiceStats;
