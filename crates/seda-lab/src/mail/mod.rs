//! The e-mail service (Arashi) as the scenarios run it: a seeded SQLite corpus, `seda serve
//! mail` as a pinned child process with a chosen overload control, and the emulated users.
//!
//! One file a concept: how the service protects itself ([`Control`]) and how it runs
//! ([`ServeOptions`]); the running server ([`MailServer`]); the corpus and its audit; the
//! emulated users' load; the capacity by design ([`MailCapacity`]); what the handlers did over a
//! run ([`Work`]); and the price of a run's goodput ([`RunPrice`]).

use std::time::Duration;

mod capacity;
mod control;
mod corpus;
mod options;
mod price;
mod server;
mod users;
mod work;

pub use capacity::{HOW, MailCapacity};
pub use control::Control;
pub use corpus::corpus_audit;
pub(crate) use corpus::{audit_check, audit_clean};
pub use options::ServeOptions;
pub use price::RunPrice;
pub use server::MailServer;
pub use users::users;
pub use work::{TypeWork, Work, load_with_work};

/// Accounts in the lab's corpus (WC03's users each read one account's folders).
pub const CORPUS_USERS: u64 = 100;
/// Virtual cores of the emulated processor the lab runs the service on (`seda serve mail
/// --cores`): the bottleneck of every mail scenario, stated before the run
/// ([`MailCapacity::designed`]). Each request holds it for its cost from WC03's Arashi scaled
/// (`seda_mail::cost`), about 2 ms on the user model's mix, so one core serves about 480
/// requests a second: far more than the load generator's handling of a reply costs, as on
/// WC03's 2003 server, while the handlers' real work stays a few percent of a real core.
pub const CORES: f64 = 1.0;
/// WC03's think time between requests ("aggressively set to 20 ms").
pub const THINK: Duration = Duration::from_millis(20);
/// WC03's wait after a rejection before trying again (our users retry in their session, and
/// wait longer where the service's `Retry-After` asks it).
pub const REJECT_WAIT: Duration = Duration::from_secs(5);
