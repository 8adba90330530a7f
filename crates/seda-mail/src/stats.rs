//! The mail service's own figures, under `"service"` in the admin address's `/_seda/stats`:
//! what each request type's handlers cost, and what the emulated processor did. One type for
//! the server that writes them and the lab that prices a run with them.

use std::collections::BTreeMap;

use seda::processor::ProcessorSnapshot;
use serde::{Deserialize, Serialize};

use crate::service::MailService;

/// The service's section of `/_seda/stats`. Request types are keyed by
/// [`RequestKind::name`](crate::RequestKind::name).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceStats {
    /// CPU seconds each request type's handlers have used since start (on the emulated
    /// processor, where there is one), answered or not.
    pub handler_cpu_s: BTreeMap<String, f64>,
    /// The part of `handler_cpu_s` spent on requests the handlers answered.
    pub answered_cpu_s: BTreeMap<String, f64>,
    /// Requests of each type the handlers answered.
    pub answered: BTreeMap<String, u64>,
    /// The emulated processor (`None`: the handlers run on the real CPU).
    pub processor: Option<ProcessorSnapshot>,
}

impl ServiceStats {
    /// The figures of `service` now.
    pub fn of(service: &MailService) -> ServiceStats {
        let name = |k: &&'static str| (*k).to_string();
        let answered = service.answered_cpu_s();
        ServiceStats {
            handler_cpu_s: service
                .handler_cpu_s()
                .iter()
                .map(|(k, v)| (name(k), *v))
                .collect(),
            answered_cpu_s: answered
                .iter()
                .map(|(k, (cpu, _))| (name(k), *cpu))
                .collect(),
            answered: answered.iter().map(|(k, (_, n))| (name(k), *n)).collect(),
            processor: service.processor().map(|p| p.snapshot()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_reads_back_and_a_renamed_field_fails() {
        let stats = ServiceStats {
            handler_cpu_s: BTreeMap::from([("login".into(), 0.25), ("search".into(), 1.5)]),
            answered_cpu_s: BTreeMap::from([("login".into(), 0.2)]),
            answered: BTreeMap::from([("login".into(), 40)]),
            processor: Some(ProcessorSnapshot {
                cores: 2.0,
                busy_core_s: 3.75,
                running: 1,
            }),
        };
        let value = serde_json::to_value(&stats).expect("serializes");
        let back: ServiceStats = serde_json::from_value(value.clone()).expect("reads back");
        assert_eq!(back, stats);
        let text = serde_json::to_string(&stats).expect("serializes");
        assert_eq!(
            serde_json::from_str::<ServiceStats>(&text).expect("parses"),
            stats
        );

        let mut renamed = value;
        let processor = renamed["processor"].as_object_mut().expect("object");
        let busy = processor.remove("busy_core_s").expect("busy_core_s");
        processor.insert("busy_s".into(), busy);
        assert!(serde_json::from_value::<ServiceStats>(renamed).is_err());
    }
}
