//! WC03's emulated e-mail users as a load: think time, the wait after a rejection, and the
//! busy users that warm a server up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use seda_load::{ClientConfig, LoadConfig, Model};
use seda_testbed::mail::workload::MailWorkload;

use super::{CORPUS_USERS, REJECT_WAIT, THINK};
use crate::lab::Lab;
use crate::loads;

/// A load of emulated e-mail users against `addr`: WC03's think time and wait after a
/// rejection, both multiplied by `time_scale` (a scenario that shrinks its time scale to fit a
/// faster machine shrinks them too), 1 s intervals, a 3 s connect timeout and a 30 s deadline
/// (a request unanswered by then counts as a timeout).
pub fn users(
    addr: SocketAddr,
    users: usize,
    duration: Duration,
    time_scale: f64,
) -> Result<LoadConfig> {
    let mut cfg = loads::closed_users(addr, users, THINK.mul_f64(time_scale))?;
    cfg.workload = Arc::new(MailWorkload::new(CORPUS_USERS));
    cfg.duration = duration;
    cfg.client = ClientConfig {
        // The service's `Retry-After` is WC03's wait, stretched while it refuses far more
        // than it admits; the users honour it, scaled like every other time.
        retry_after_scale: Some(time_scale),
        ..loads::users_client(REJECT_WAIT.mul_f64(time_scale), Duration::from_secs(30))
    };
    cfg.keep_interval_histograms = true;
    Ok(cfg)
}

/// Serves a short unmeasured load, so that what a scenario measures starts from a warm server:
/// each stage thread's database connection reads the pages it touches the first time through
/// system calls, and sessions and caches fill.
pub(super) fn warm(lab: &Lab, addr: SocketAddr) -> Result<()> {
    let cfg = busy_users(
        addr,
        8,
        lab.pick(Duration::from_secs(1), Duration::from_secs(3)),
    )?;
    lab.load(cfg).context("warming the server up")?;
    Ok(())
}

/// [`users`] without think time (at WC03's time scale): as many requests as the service
/// answers, for warming it up.
fn busy_users(addr: SocketAddr, n: usize, duration: Duration) -> Result<LoadConfig> {
    let mut cfg = users(addr, n, duration, 1.0)?;
    if let Model::Closed(c) = &mut cfg.model {
        c.think = Duration::ZERO;
    }
    Ok(cfg)
}
