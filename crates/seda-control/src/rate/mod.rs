//! Controllers that act on an admission rate or a queue bound, from response times: WC03's
//! response-time controller and our tuned variant, WC03's class-based differentiation and its
//! degradation knob, session-aware admission (SBAC02), and the token bucket they enforce through.

pub mod degradation;
pub mod multiclass;
pub mod response_time;
pub mod session;
mod token_bucket;

pub use token_bucket::TokenBucket;
