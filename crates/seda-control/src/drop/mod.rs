//! Dropping and bounding queued work: Sandstorm's queue threshold and FAIR07's early selective
//! dropping. (folly's CoDel, which also drops at dequeue, is with the other peers in `peers/`.)

pub mod dropper;
mod threshold;

pub use threshold::QueueThreshold;
