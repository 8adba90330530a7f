//! The shapes of load the scenarios offer, built once: open Poisson arrivals, closed users, and
//! the client the lab's users share.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use seda_load::{Arrivals, ClientConfig, Closed, LoadConfig, Model, Open, Target};

/// Open Poisson arrivals at `rate_per_s` to `url`, with up to 2,000 connections open and
/// 10,000 arrivals waiting for one.
pub(crate) fn poisson(url: &str, rate_per_s: f64) -> Result<LoadConfig> {
    let model = Model::Open(Open {
        rate_per_s,
        arrivals: Arrivals::Poisson,
        max_connections: 2000,
        max_backlog: 10_000,
    });
    Ok(LoadConfig::new(Target::parse(url)?, model)?)
}

/// `users` closed users of `addr`, each thinking `think` (exponential) between a reply and its
/// next request, all started at once.
pub(crate) fn closed_users(addr: SocketAddr, users: usize, think: Duration) -> Result<LoadConfig> {
    let model = Model::Closed(Closed {
        users,
        think,
        think_exponential: true,
        ramp: Duration::ZERO,
    });
    Ok(LoadConfig::new(
        Target::parse(&format!("http://{addr}/"))?,
        model,
    )?)
}

/// The client of the lab's users: it waits `backoff_on_503` after a refusal, gives a request
/// `deadline` (unanswered by then it counts as a timeout), a connection 3 s, and pauses 1 s
/// after an error.
pub(crate) fn users_client(backoff_on_503: Duration, deadline: Duration) -> ClientConfig {
    ClientConfig {
        backoff_on_503: Some(backoff_on_503),
        deadline,
        connect_timeout: Duration::from_secs(3),
        error_pause: Duration::from_secs(1),
        ..ClientConfig::default()
    }
}
