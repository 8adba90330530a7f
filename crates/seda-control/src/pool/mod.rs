//! Sizing a stage's resources: SEDA's thread-pool controller and its batching controller
//! (AggThrottle). Self-tuning pool sizers belong here.

mod batching;
mod thread_pool;

pub use batching::{
    BATCH_ADJUST_DELAY, BATCH_FACTOR, BatchConfig, BatchController, BatchObservation, BatchState,
};
pub use thread_pool::{
    POOL_CONTROLLER_DELAY_TICKS, PoolAdjustment, PoolObservation, ThreadPoolConfig,
    ThreadPoolController,
};
