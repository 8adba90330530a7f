//! The proxy's integration tests, one module per topic, in one test binary: each binary of
//! this crate links hyper, tokio and the tower layer again, a build cost paid once here.

mod criticality;
mod deadline;
mod forwarding;
mod pool;
mod refusal;
