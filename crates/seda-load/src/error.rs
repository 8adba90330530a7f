//! The error type of the load generator's setup (bad URL, bad schedule, bad option).

use std::fmt;

/// Why a load run could not be set up or started.
///
/// Errors that happen *during* a run (a refused connection, a server sending garbage, a timeout)
/// are not returned: they are counted in the report.
#[derive(Debug)]
pub enum LoadError {
    /// A target URL could not be used.
    BadUrl {
        /// The URL as given.
        url: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A load schedule could not be parsed or is inconsistent.
    BadSchedule(String),
    /// A workload description could not be parsed.
    BadWorkload(String),
    /// An option is out of range or options contradict each other.
    BadConfig(String),
    /// An I/O error while setting up (reading a file, building the runtime).
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::BadUrl { url, reason } => write!(f, "bad URL {url:?}: {reason}"),
            LoadError::BadSchedule(s) => write!(f, "bad load schedule: {s}"),
            LoadError::BadWorkload(s) => write!(f, "bad workload: {s}"),
            LoadError::BadConfig(s) => write!(f, "bad option: {s}"),
            LoadError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
