//! Integration tests of the load generator against real servers on 127.0.0.1: a scriptable test
//! server (always) and nginx (when installed; otherwise those tests print SKIP and pass).

mod common;
mod models;
mod nginx;
mod omission;
mod overload;
mod retry;
