//! The bottleneck service's own figures, under `"service"` in `/_seda/stats`: one type for the
//! server that writes them and the lab that reads them (the degradation scenario prices a
//! page with them).

use seda::processor::ProcessorSnapshot;
use serde::{Deserialize, Serialize};

/// The service's section of `/_seda/stats`: its figures under the stage's name
/// ([`STAGE`](super::STAGE), `bottleneck`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckSection {
    /// The one stage's figures.
    pub bottleneck: BottleneckStats,
}

/// What the bottleneck service has done since start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckStats {
    /// Requests handled.
    pub requests: u64,
    /// Pages computed (requests that did the page's work).
    pub pages: u64,
    /// Bytes of the data file read.
    pub bytes_read: u64,
    /// The mean quality the pages were computed at (`None` before the first page).
    pub mean_quality: Option<f64>,
    /// CPU seconds the pages' computation took (on the emulated processor, where there is one).
    pub compute_cpu_s: f64,
    /// The emulated processor (`None`: the pages run on the real CPU).
    pub processor: Option<ProcessorSnapshot>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_reads_back_under_the_stage_name() {
        let section = BottleneckSection {
            bottleneck: BottleneckStats {
                requests: 10,
                pages: 8,
                bytes_read: 4096,
                mean_quality: Some(0.75),
                compute_cpu_s: 0.5,
                processor: Some(ProcessorSnapshot {
                    cores: 1.0,
                    busy_core_s: 0.5,
                    running: 0,
                }),
            },
        };
        let value = serde_json::to_value(&section).expect("serializes");
        assert_eq!(value[super::super::STAGE]["pages"], 8);
        let back: BottleneckSection = serde_json::from_value(value).expect("reads back");
        assert_eq!(back, section);
    }
}
