//! What was wrong with a configuration, and where: [`ConfigError`], and why an override
//! could not be applied.

use std::fmt;
use std::path::PathBuf;

/// A configuration error: what was wrong and where, with the error that caused it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, or a setting of an unknown name or the wrong type.
    Parse {
        /// The file, if the text came from one.
        path: Option<PathBuf>,
        /// The parser's error (it names the setting and the line).
        source: Box<toml::de::Error>,
    },
    /// A `key.path=value` override that cannot be applied.
    Override {
        /// The override as given.
        assignment: String,
        /// What is wrong with it.
        problem: OverrideProblem,
    },
    /// A stage's settings are out of range or contradict each other.
    Stage {
        /// The stage.
        stage: String,
        /// The setting, as the file names it (`rate_limit.depth`...).
        setting: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
    /// A domain's pool settings are out of range or contradict each other.
    Domain {
        /// The domain.
        domain: String,
        /// The setting, as the file names it under `[domains.NAME]` (`sizer.kind`...).
        setting: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
    /// A stage's terminator cannot be built from its settings.
    Terminate {
        /// The stage.
        stage: String,
        /// The catalogue's error.
        source: seda_control::CatalogueError,
    },
    /// A stage's admission controller cannot be built from its settings.
    Admission {
        /// The stage.
        stage: String,
        /// The catalogue's error.
        source: seda_control::CatalogueError,
    },
    /// A runtime-wide setting is out of range.
    Runtime {
        /// The setting, as the file names it (`runtime.global.target_p90_ms`...).
        setting: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
    /// The runtime's control thread could not be started.
    ControlThread(std::io::Error),
}

/// Why an override cannot be applied.
#[derive(Debug)]
#[non_exhaustive]
pub enum OverrideProblem {
    /// It has no `=`.
    NotAnAssignment,
    /// Its key has an empty part (`stages..threads`).
    EmptyPart,
    /// A part of its key names a value that is not a table.
    NotATable(String),
    /// The configuration could not be turned into a document to edit.
    Serialize(toml::ser::Error),
    /// The configuration with the override is not valid.
    Invalid(Box<toml::de::Error>),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            ConfigError::Parse {
                path: Some(path),
                source,
            } => write!(f, "{}: invalid configuration: {source}", path.display()),
            ConfigError::Parse { path: None, source } => {
                write!(f, "invalid configuration: {source}")
            }
            ConfigError::Override {
                assignment,
                problem,
            } => match problem {
                OverrideProblem::NotAnAssignment => write!(
                    f,
                    "override `{assignment}` is not of the form key.path=value"
                ),
                OverrideProblem::EmptyPart => {
                    write!(f, "override `{assignment}`: the key has an empty part")
                }
                OverrideProblem::NotATable(part) => {
                    write!(f, "override `{assignment}`: `{part}` is not a table")
                }
                OverrideProblem::Serialize(e) => {
                    write!(f, "override `{assignment}`: cannot apply: {e}")
                }
                OverrideProblem::Invalid(e) => {
                    write!(f, "override `{assignment}`: invalid configuration: {e}")
                }
            },
            ConfigError::Stage {
                stage,
                setting,
                reason,
            } => write!(f, "stage `{stage}`: {setting}: {reason}"),
            ConfigError::Domain {
                domain,
                setting,
                reason,
            } => write!(f, "domain `{domain}`: {setting}: {reason}"),
            ConfigError::Admission { stage, source } => {
                write!(f, "stage `{stage}`: admission: {source}")
            }
            ConfigError::Terminate { stage, source } => {
                write!(f, "stage `{stage}`: terminate: {source}")
            }
            ConfigError::Runtime { setting, reason } => write!(f, "{setting}: {reason}"),
            ConfigError::ControlThread(e) => write!(f, "cannot start the control thread: {e}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } => Some(source),
            ConfigError::Parse { source, .. } => Some(source.as_ref()),
            ConfigError::Override { problem, .. } => match problem {
                OverrideProblem::Serialize(e) => Some(e),
                OverrideProblem::Invalid(e) => Some(e.as_ref()),
                _ => None,
            },
            ConfigError::Admission { source, .. } | ConfigError::Terminate { source, .. } => {
                Some(source)
            }
            ConfigError::ControlThread(e) => Some(e),
            ConfigError::Stage { .. }
            | ConfigError::Domain { .. }
            | ConfigError::Runtime { .. } => None,
        }
    }
}
