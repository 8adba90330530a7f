//! The runtime's errors, in one file as tokio's `mpsc/error.rs` has them: [`BuildError`], why a
//! stage could not be added or a stage or pool looked up, and [`Rejected`], an enqueue turned
//! away with its event(s) back.
//!
//! Match it with a `_` arm (it is `#[non_exhaustive]`), and do not depend on the text of its
//! messages, which say what was wrong and what to do about it.

use std::fmt;

use seda_control::RejectReason;

use crate::config::ConfigError;

/// Why a stage could not be added or looked up.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// Another stage already has this name.
    DuplicateStage(String),
    /// The builder has no handler.
    MissingHandler(String),
    /// The stage names a domain that was not declared.
    UnknownDomain {
        /// The stage.
        stage: String,
        /// The domain it asked for.
        domain: String,
    },
    /// No stage of that name.
    NoSuchStage(String),
    /// The stage exists, but its events are of another type than the one asked for
    /// ([`Runtime::sink`](crate::Runtime::sink)).
    WrongEventType {
        /// The stage.
        stage: String,
        /// The type its events are.
        actual: &'static str,
        /// The type asked for.
        asked: &'static str,
    },
    /// No pool (a stage's own or a domain) of that name.
    NoSuchPool(String),
    /// The runtime is shut down.
    ShutDown,
    /// Invalid settings.
    Config(ConfigError),
    /// The handler reads a knob (`StageBuilder::knob`) that the stage's controller, as the
    /// code or the configuration file chose it, does not have.
    Knob {
        /// The stage.
        stage: String,
        /// Which knob, and the controller.
        source: seda_control::KnobError,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateStage(n) => write!(f, "a stage named `{n}` already exists"),
            BuildError::MissingHandler(n) => {
                write!(
                    f,
                    "stage `{n}` has no handler: call .handler(...) on its builder"
                )
            }
            BuildError::UnknownDomain { stage, domain } => write!(
                f,
                "stage `{stage}` runs on domain `{domain}`, which is not declared: add \
                 [domains.{domain}] to the configuration or call Runtime::domain first"
            ),
            BuildError::NoSuchStage(n) => write!(f, "no stage named `{n}`"),
            BuildError::WrongEventType {
                stage,
                actual,
                asked,
            } => write!(
                f,
                "stage `{stage}` takes events of type `{actual}`, not `{asked}`: ask for its \
                 sink with that type"
            ),
            BuildError::NoSuchPool(n) => write!(
                f,
                "no pool named `{n}`: name a stage with its own pool or a declared domain"
            ),
            BuildError::ShutDown => f.write_str("the runtime is shut down"),
            BuildError::Config(e) => e.fmt(f),
            BuildError::Knob { stage, source } => write!(f, "stage `{stage}`: {source}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Config(e) => e.source(),
            BuildError::Knob { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<ConfigError> for BuildError {
    fn from(e: ConfigError) -> Self {
        BuildError::Config(e)
    }
}

/// An enqueue that was turned away: the event(s) come back with the reason.
///
/// Like crossbeam's `SendError<T>`, nothing is lost: the caller decides what to do (answer 503,
/// degrade, retry elsewhere, or wait with [`Sink::enqueue_timeout`](crate::Sink::enqueue_timeout)).
pub struct Rejected<T> {
    /// What was not enqueued.
    pub event: T,
    /// Why.
    pub reason: RejectReason,
}

impl<T> Rejected<T> {
    /// The event(s) back, discarding the reason.
    pub fn into_inner(self) -> T {
        self.event
    }
}

impl<T> fmt::Debug for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "enqueue rejected: {}", self.reason)
    }
}

impl<T> std::error::Error for Rejected<T> {}
