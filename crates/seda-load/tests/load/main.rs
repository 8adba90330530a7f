//! Integration tests of the load generator against real servers on 127.0.0.1: a scriptable test
//! server (always) and nginx (when installed; otherwise those tests print why and pass, or fail
//! where `SEDA_REQUIRE_PEERS=1`, as in CI).

mod common;
mod models;
mod nginx;
mod omission;
mod overload;
mod retry;
