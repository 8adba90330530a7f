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

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use seda_control::{BatchConfig, ThreadPoolConfig};
use serde::Deserialize;

use crate::global::GlobalControlConfig;
use crate::queue::Order;
use crate::sizer::SizerConfig;

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
            ConfigError::Stage { .. } | ConfigError::Runtime { .. } => None,
        }
    }
}

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

/// Thread-pool settings (of a stage's own pool or a domain).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolSettings {
    /// Initial workers.
    pub threads: Option<usize>,
    /// Fewest workers.
    pub min_threads: Option<usize>,
    /// Most workers.
    pub max_threads: Option<usize>,
    /// SEDA's thread-pool controller.
    pub pool_controller: Option<PoolControllerConfig>,
    /// What sizes the pool (SEDA's heuristic by default).
    pub sizer: Option<SizerConfig>,
}

/// SEDA's thread-pool controller settings; absent fields take Sandstorm's defaults.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolControllerConfig {
    /// Whether the controller adds threads (idle retirement always applies).
    #[serde(default = "yes")]
    pub enable: bool,
    /// Sampling period, ms.
    pub delay_ms: Option<u64>,
    /// Queue length that asks for a thread.
    pub threshold: Option<usize>,
    /// Idle time before a worker retires, ms.
    pub idle_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

/// AggThrottle settings; absent fields take Sandstorm's defaults.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BatchControllerConfig {
    /// Whether the controller runs.
    #[serde(default = "yes")]
    pub enable: bool,
    /// Smallest batch.
    pub min: Option<usize>,
    /// Largest batch.
    pub max: Option<usize>,
    /// Shortest time between measurements, ms.
    pub recalc_ms: Option<u64>,
    /// EWMA weight of the previous average.
    pub smooth: Option<f64>,
}

/// A token bucket in front of the queue.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Tokens per second.
    pub rate_per_s: f64,
    /// Largest burst.
    pub depth: f64,
}

/// Settings of one stage. Every field is optional: unset fields keep the value given in code
/// or the default.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StageConfig {
    /// Run on this domain's shared pool.
    pub domain: Option<String>,
    /// Run the handler on the enqueuing thread (no queue, no pool).
    pub inline: Option<bool>,
    /// Initial workers of the stage's own pool (ignored with `domain` or `inline`).
    pub threads: Option<usize>,
    /// Fewest workers of the stage's own pool.
    pub min_threads: Option<usize>,
    /// Most workers of the stage's own pool.
    pub max_threads: Option<usize>,
    /// SEDA's thread-pool controller for the stage's own pool.
    pub pool_controller: Option<PoolControllerConfig>,
    /// What sizes the stage's own pool (SEDA's heuristic by default).
    pub sizer: Option<SizerConfig>,
    /// Largest batch handed to the handler; 0 means everything queued.
    pub batch: Option<usize>,
    /// AggThrottle batch-size search.
    pub batch_controller: Option<BatchControllerConfig>,
    /// Queue length limit; 0 means unbounded.
    pub threshold: Option<usize>,
    /// Dequeue order.
    pub order: Option<Order>,
    /// Token-bucket admission.
    pub rate_limit: Option<RateLimitConfig>,
    /// Drop events that waited longer than this in the queue, ms (selective dropping).
    pub drop_after_ms: Option<u64>,
    /// An adaptive admission controller (response time, multiclass, a peer's limit...).
    pub admission: Option<AdmissionConfig>,
    /// Early termination (SERT06): the stage is terminable, and this terminator chooses the
    /// running time past which its requests are cut.
    pub terminate: Option<TerminateConfig>,
}

/// A terminator by kind (`sert`, `congestion`, `fixed`, `percentile`: see
/// [`seda_control::catalogue::terminators`]), with its numeric parameters:
///
/// ```toml
/// [stages.search.terminate]
/// kind = "sert"
/// lower_s = 0.1
/// upper_s = 2.0
/// ```
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
pub struct TerminateConfig {
    /// The terminator's kind.
    pub kind: String,
    /// Its parameters.
    #[serde(flatten)]
    pub params: BTreeMap<String, f64>,
}

impl TerminateConfig {
    /// A terminator of `kind` with the parameters `params` (name, value).
    pub fn new<'a>(kind: &str, params: impl IntoIterator<Item = (&'a str, f64)>) -> Self {
        let params = params
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        TerminateConfig {
            kind: kind.to_string(),
            params,
        }
    }

    /// Builds the terminator, or says what is wrong with the settings.
    pub fn build(
        &self,
    ) -> Result<Box<dyn seda_control::terminate::Terminator>, seda_control::CatalogueError> {
        seda_control::terminate::build(&self.kind, &self.params)
    }
}

/// An adaptive admission controller by name, with its numeric parameters (units in the names):
///
/// ```toml
/// [stages.work.admission]
/// kind = "response_time"   # see seda_control::catalogue
/// target_s = 1.0
/// ```
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
pub struct AdmissionConfig {
    /// The controller, a name of [`seda_control::catalogue`].
    pub kind: String,
    /// Its parameters.
    #[serde(flatten)]
    pub params: BTreeMap<String, f64>,
}

impl AdmissionConfig {
    /// Builds the controller, or says what is wrong with the settings.
    pub fn build(
        &self,
    ) -> Result<Box<dyn seda_control::AdmissionController>, seda_control::CatalogueError> {
        seda_control::build_admission(&self.kind, &self.params)
    }
}

macro_rules! overlay {
    ($base:expr, $top:expr, $($field:ident),*) => {
        $( if $top.$field.is_some() { $base.$field = $top.$field.clone(); } )*
    };
}

impl PoolSettings {
    /// The thread-pool controller configuration these settings describe.
    pub fn to_pool_config(&self) -> ThreadPoolConfig {
        let d = ThreadPoolConfig::default();
        let pc = self.pool_controller.as_ref();
        ThreadPoolConfig {
            initial_threads: self.threads.unwrap_or(d.initial_threads),
            min_threads: self.min_threads.unwrap_or(d.min_threads),
            max_threads: self.max_threads.unwrap_or(d.max_threads),
            delay: pc
                .and_then(|c| c.delay_ms)
                .map_or(d.delay, Duration::from_millis),
            threshold: pc.and_then(|c| c.threshold).unwrap_or(d.threshold),
            idle_time: pc
                .and_then(|c| c.idle_ms)
                .map_or(d.idle_time, Duration::from_millis),
            ticks_per_add: d.ticks_per_add,
        }
        .normalized()
    }

    /// Whether SEDA's pool controller adds threads (on by default, off under another sizer).
    pub fn controller_enabled(&self) -> bool {
        self.pool_controller.as_ref().is_none_or(|c| c.enable) && self.sizer_config().is_seda()
    }

    /// The pool's sizer settings.
    pub fn sizer_config(&self) -> SizerConfig {
        self.sizer.clone().unwrap_or_default()
    }
}

impl StageConfig {
    /// `self` with every field set in `top` replaced.
    pub fn overlaid(mut self, top: &StageConfig) -> StageConfig {
        overlay!(
            self,
            top,
            domain,
            inline,
            batch,
            batch_controller,
            threshold,
            order,
            rate_limit,
            drop_after_ms,
            admission,
            terminate,
            threads,
            min_threads,
            max_threads,
            pool_controller,
            sizer
        );
        self
    }

    /// The settings of the stage's own pool.
    pub fn pool(&self) -> PoolSettings {
        PoolSettings {
            threads: self.threads,
            min_threads: self.min_threads,
            max_threads: self.max_threads,
            pool_controller: self.pool_controller.clone(),
            sizer: self.sizer.clone(),
        }
    }

    pub(crate) fn batch_config(&self) -> Option<BatchConfig> {
        let c = self.batch_controller.as_ref().filter(|c| c.enable)?;
        let d = BatchConfig::default();
        Some(BatchConfig {
            min_batch: c.min.unwrap_or(d.min_batch),
            max_batch: c.max.unwrap_or(d.max_batch),
            recalc_window: c.recalc_ms.map_or(d.recalc_window, Duration::from_millis),
            smooth: c.smooth.unwrap_or(d.smooth),
        })
    }

    pub(crate) fn validate(&self, stage: &str) -> Result<(), ConfigError> {
        let err = |setting, reason: String| {
            Err(ConfigError::Stage {
                stage: stage.to_string(),
                setting,
                reason,
            })
        };
        if self.domain.is_some() && self.inline == Some(true) {
            return err(
                "domain",
                "`domain` and `inline = true` exclude each other".into(),
            );
        }
        if let Some(r) = &self.rate_limit {
            if !(r.rate_per_s.is_finite() && r.rate_per_s >= 0.0) {
                return err(
                    "rate_limit.rate_per_s",
                    format!("must be >= 0, got {}", r.rate_per_s),
                );
            }
            if !(r.depth.is_finite() && r.depth >= 1.0) {
                return err("rate_limit.depth", format!("must be >= 1, got {}", r.depth));
            }
        }
        if let Some(s) = self.batch_controller.as_ref().and_then(|c| c.smooth)
            && !(0.0..1.0).contains(&s)
        {
            return err(
                "batch_controller.smooth",
                format!("must be in [0, 1), got {s}"),
            );
        }
        if let (Some(min), Some(max)) = (self.min_threads, self.max_threads)
            && min > max
        {
            return err("min_threads", format!("{min} > max_threads {max}"));
        }
        if let Some((setting, reason)) = self.sizer.as_ref().and_then(|s| s.problem()) {
            return err(setting, reason);
        }
        Ok(())
    }
}

impl Config {
    /// Parses a TOML document.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: None,
            source: Box::new(source),
        })
    }

    /// Reads and parses a TOML file.
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
    /// misspelt key would only show when the server refused it. Errors only on a value with no
    /// TOML form (none of the settings' types lacks one today).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        // Through a `toml::Value`, which orders plain values before tables as TOML requires.
        toml::to_string(&toml::Value::try_from(self)?)
    }

    /// Applies one `dotted.key=value` override (the value is TOML: `4`, `true`, `"lifo"`; a bare
    /// word is taken as a string).
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
