//! Configuration: per-stage and per-domain settings from code or a TOML file.
//!
//! ```toml
//! [runtime]
//! tick_ms = 100            # how often controllers run
//! stats_period_ms = 1000   # length of a stats period
//! # global = { target_p90_ms = 100, entry = "parse" }   # global control (crate::global)
//!
//! [domains.io]             # a pool shared by several stages
//! threads = 2
//! max_threads = 8
//!
//! [stages.parse]
//! threads = 2              # initial workers (min_threads, max_threads also)
//! batch = 64               # largest batch handed to the handler
//! threshold = 1000         # queue length limit (admission)
//! order = "lifo"           # or "fifo" (default)
//! rate_limit = { rate_per_s = 500.0, depth = 50.0 }
//! drop_after_ms = 2000     # selective dropping of events queued too long
//! admission = { kind = "response_time", target_s = 0.5 }   # adaptive admission control
//! terminate = { kind = "sert", lower_s = 0.1, upper_s = 2.0 } # early termination (SERT06)
//! pool_controller = { enable = true, delay_ms = 500, threshold = 10, idle_ms = 1000 }
//! sizer = { kind = "seda" } # or fixed, self_tuning (law = "p"/"pi"/"pd"), hill_climbing
//! batch_controller = { enable = true, min = 1, max = 1024, recalc_ms = 100, smooth = 0.5 }
//!
//! [stages.cache]
//! domain = "io"            # or: inline = true
//! ```
//!
//! Settings in the file override those given in code for the same stage; single keys can be
//! overridden again from a command line with [`Config::set`] (`stages.parse.threads=4`).

mod error;
mod pool;
mod stage;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::global::GlobalControlConfig;

pub use error::{ConfigError, OverrideProblem};
pub use pool::{BatchControllerConfig, PoolControllerConfig, PoolSettings};
pub use stage::{AdmissionConfig, RateLimitConfig, StageConfig, TerminateConfig};

/// The whole configuration file.
///
/// New fields may be added: build it with `Default` (or from a file) and set fields.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// Runtime-wide settings.
    #[serde(default)]
    pub runtime: RuntimeConfig,
    /// Shared pools, by name.
    #[serde(default)]
    pub domains: BTreeMap<String, PoolSettings>,
    /// Stage settings, by stage name.
    #[serde(default)]
    pub stages: BTreeMap<String, StageConfig>,
}

/// Runtime-wide settings.
///
/// New fields may be added: build it with `Default` (or from a file) and set fields.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// Period of the control thread, ms (controllers keep their own, longer periods).
    pub tick_ms: u64,
    /// Length of a stats period, ms.
    pub stats_period_ms: u64,
    /// Global control: a p90 target turned into the self-tuning pools' throughput targets.
    pub global: Option<GlobalControlConfig>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            tick_ms: 100,
            stats_period_ms: 1000,
            global: None,
        }
    }
}

impl Config {
    /// Parses a TOML document.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Parse`] (without a path) when the text is not TOML or names a setting,
    /// stage field or value the configuration does not have.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::Config;
    ///
    /// let config = Config::from_toml("[stages.parse]\nthreads = 2")?;
    /// assert_eq!(config.stages["parse"].threads, Some(2));
    /// assert!(Config::from_toml("[stages.parse]\nthreadz = 2").is_err());
    /// # Ok::<(), seda::ConfigError>(())
    /// ```
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: None,
            source: Box::new(source),
        })
    }

    /// Reads and parses a TOML file.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Read`] when the file cannot be read, [`ConfigError::Parse`] (with the
    /// path) as [`from_toml`](Self::from_toml).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: Some(path.to_path_buf()),
            source: Box::new(source),
        })
    }

    /// The TOML document [`Config::from_toml`] reads back to the same value: what a program
    /// that starts a server writes to its `--config`, instead of TOML formatted by hand, whose
    /// misspelt key would only show when the server refused it.
    ///
    /// # Errors
    ///
    /// The serializer's error on a value with no TOML form (none of the settings' types lacks
    /// one today).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        // Through a `toml::Value`, which orders plain values before tables as TOML requires.
        toml::to_string(&toml::Value::try_from(self)?)
    }

    /// Applies one `dotted.key=value` override (the value is TOML: `4`, `true`, `"lifo"`; a bare
    /// word is taken as a string).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Override`] with the [`OverrideProblem`]: no `=`, an empty key part, a
    /// key that passes through a value that is not a table, or a result the configuration
    /// does not accept.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::Config;
    ///
    /// let config = Config::default().set("stages.parse.threads=4")?;
    /// assert_eq!(config.stages["parse"].threads, Some(4));
    /// assert!(config.set("stages.parse.threads").is_err()); // no value
    /// # Ok::<(), seda::ConfigError>(())
    /// ```
    pub fn set(&self, assignment: &str) -> Result<Config, ConfigError> {
        let fail = |problem| ConfigError::Override {
            assignment: assignment.to_string(),
            problem,
        };
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| fail(OverrideProblem::NotAnAssignment))?;
        let path: Vec<&str> = key.trim().split('.').collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(fail(OverrideProblem::EmptyPart));
        }
        let value = parse_value(value.trim());
        let mut doc =
            toml::Value::try_from(self).map_err(|e| fail(OverrideProblem::Serialize(e)))?;
        let mut node = &mut doc;
        for part in &path[..path.len() - 1] {
            let table = node
                .as_table_mut()
                .ok_or_else(|| fail(OverrideProblem::NotATable(part.to_string())))?;
            node = table
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        }
        let last = path[path.len() - 1];
        node.as_table_mut()
            .ok_or_else(|| fail(OverrideProblem::NotATable(key.to_string())))?
            .insert(last.to_string(), value);
        let text = toml::to_string(&doc).map_err(|e| fail(OverrideProblem::Serialize(e)))?;
        toml::from_str(&text).map_err(|e| fail(OverrideProblem::Invalid(Box::new(e))))
    }
}

fn parse_value(text: &str) -> toml::Value {
    let wrapped = format!("v = {text}");
    match toml::from_str::<toml::Table>(&wrapped) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.into())),
        Err(_) => toml::Value::String(text.into()),
    }
}
