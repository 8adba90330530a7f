//! The `/_seda/stats` document: one type for the admin address that writes it and for the
//! programs that read it (the lab, `seda mail`'s reports), so that a field renamed on one side
//! is a compile error or a failed read on the other, never a value that silently goes missing.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::server::FrontendStats;

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
