//! Integration tests of the mail service: every request type on every backend, escaping, bad
//! input, consistency under concurrent moves with cancellations and rejections, HTTP.

mod auth;
mod cancel;
mod checkpoint;
mod common;
mod conformance;
mod consistency;
mod culprit;
mod escaping;
mod http;
mod input;
mod listing;
mod types;
