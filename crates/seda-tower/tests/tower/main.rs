//! The layer's integration tests, one module per topic, in one test binary: each binary of
//! this crate links axum, hyper, tonic and tower again, and as separate binaries they took about
//! 17 s of CPU each to build in release.

mod common;

mod criticality;
mod deadline;
mod grpc;
mod layer;
mod readme;
mod terminate;
