//! The `/_seda/stats` document: one type for the admin address that writes it and for the
//! programs that read it (the lab, `seda mail`'s reports), so that a field renamed on one side
//! is a compile error or a failed read on the other, never a value that silently goes missing.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

/// Everything `/_seda/stats` shows. A part the server does not have is `null`; every part is
/// written, so a reader that misses one was given another document, and fails.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StatsDocument {
    /// The HTTP front end's counters.
    #[serde(deserialize_with = "present")]
    pub frontend: Option<FrontendStats>,
    /// Every stage and pool of the runtime.
    #[serde(deserialize_with = "present")]
    pub runtime: Option<seda::RuntimeSnapshot>,
    /// The service's own figures, in the service's own type (the mail service's
    /// `seda_mail::ServiceStats`): read them with [`StatsDocument::service_as`].
    #[serde(deserialize_with = "present")]
    pub service: Option<serde_json::Value>,
    /// Admission layers outside any stage (`seda proxy`'s routes).
    #[serde(deserialize_with = "present")]
    pub layers: Option<serde_json::Value>,
}

impl StatsDocument {
    /// The service's section read as `T` (`None`: the server has none).
    ///
    /// # Errors
    ///
    /// The section is not a `T`: the server is another service, or `T` and the server differ
    /// on a field.
    pub fn service_as<T: DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        self.service.clone().map(serde_json::from_value).transpose()
    }
}

/// An `Option` that must be in the document, as `null` when empty (serde reads a missing
/// `Option` field as `None` unless told otherwise; a renamed part would then read as absent).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_reads_back_and_a_missing_part_fails() {
        let rt = seda::Runtime::start().expect("runtime");
        let sink = rt
            .stage(seda::Stage::builder("s").handler(seda::handler::each(|_: u64, _| {})))
            .expect("stage");
        sink.enqueue(1).expect("admitted");
        let doc = StatsDocument {
            frontend: None,
            runtime: Some(rt.stats()),
            service: Some(json!({"answered": {"login": 3}})),
            layers: None,
        };
        let value = serde_json::to_value(&doc).expect("serializes");
        let back: StatsDocument = serde_json::from_value(value.clone()).expect("reads back");
        assert_eq!(back, doc);
        #[derive(Deserialize, Debug, PartialEq)]
        struct Service {
            answered: std::collections::BTreeMap<String, u64>,
        }
        let service: Option<Service> = back.service_as().expect("the service's type");
        assert_eq!(service.expect("present").answered["login"], 3);

        let mut missing = value.clone();
        missing.as_object_mut().expect("object").remove("runtime");
        let err = serde_json::from_value::<StatsDocument>(missing).expect_err("runtime missing");
        assert!(err.to_string().contains("runtime"), "{err}");
        let mut renamed = value;
        let object = renamed.as_object_mut().expect("object");
        let runtime = object.remove("runtime").expect("runtime");
        object.insert("stages".into(), runtime);
        assert!(serde_json::from_value::<StatsDocument>(renamed).is_err());
        rt.shutdown();
    }
}

/// Extra figures for the admin address's `/_seda/stats` (a service's own counters, e.g. its
/// cache's), given to [`HttpServer`](crate::HttpServer) and written as the document's service
/// section.
pub type ExtraStats = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// A snapshot of the front end's counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FrontendStats {
    /// The `Retry-After` a refusal gets now, seconds, at least: the configured base while
    /// refusals are few, up to 24 x it while they outnumber admissions; each refusal is told
    /// up to half as much again, within 24 x the base (spread so that refused clients do not
    /// return together).
    pub retry_after_s: u32,
    /// Connections open now.
    pub open_connections: usize,
    /// Open HTTP/1 connections parked between requests: idle keep-alive connections that hold
    /// only their socket and task (hyper's buffers are freed until the next bytes arrive).
    pub parked_connections: usize,
    /// Connections accepted and served since start.
    pub accepted_connections: u64,
    /// Connections answered 503 and closed because `max_connections` were open.
    pub refused_connections: u64,
    /// Requests whose head was parsed.
    pub requests: u64,
    /// Requests the first stage did not admit (answered 503).
    pub rejected_requests: u64,
    /// Admitted requests dropped without an answer (answered 503).
    pub unanswered_requests: u64,
    /// Requests whose client went away before the answer.
    pub cancelled_requests: u64,
    /// Requests answered 504 because their deadline (`grpc-timeout`, `x-seda-deadline-ms`)
    /// was spent on arrival or passed before they were served (not counted as rejected or
    /// unanswered).
    #[serde(default)]
    pub deadline_missed: u64,
    /// Connections cut off because a request head took too long (slowloris).
    pub header_timeouts: u64,
    /// Keep-alive connections closed after the idle timeout.
    pub idle_closed: u64,
    /// Requests answered 413 because of their body size.
    pub body_too_large: u64,
    /// Connections that ended with an I/O or protocol error.
    pub connection_errors: u64,
}
