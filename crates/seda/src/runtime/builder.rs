//! Builds a [`Runtime`]: its configuration, its global control, and the control thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::control::control_loop;
use super::{Inner, Registry, Runtime};
use crate::config::{Config, ConfigError};
use crate::error::BuildError;
use crate::global::GlobalControl;
use crate::shared::Shared;

/// Builds a [`Runtime`]: [`Runtime::builder`], then settings, then [`start`](Self::start).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use seda::{Config, GlobalControlConfig, Runtime};
///
/// let config = Config::from_toml("[runtime]\ntick_ms = 50")?;
/// let rt = Runtime::builder()
///     .config(config)
///     .global(GlobalControlConfig::new(Duration::from_millis(250), "front"))
///     .start()?;
/// assert_eq!(rt.configuration().runtime.tick_ms, 50);
/// rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    config: Config,
}

impl RuntimeBuilder {
    /// Uses `config` (from [`Config::from_file`] or code).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Global control toward a p90 target (FAIR07 Section 4.2.1; see [`crate::global`]).
    pub fn global(mut self, global: crate::GlobalControlConfig) -> Self {
        self.config.runtime.global = Some(global);
        self
    }

    /// Starts the control thread and the domains of the configuration.
    ///
    /// # Errors
    ///
    /// [`BuildError::Config`] when the global control settings are invalid
    /// ([`ConfigError::Runtime`]), a domain's pool settings are ([`ConfigError::Domain`]), or
    /// the control thread cannot be spawned ([`ConfigError::ControlThread`]).
    pub fn start(self) -> Result<Runtime, BuildError> {
        let registry = Arc::new(Registry::default());
        let shared = Arc::new(Shared::new());
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let tick = Duration::from_millis(self.config.runtime.tick_ms.max(1));
        let period = Duration::from_millis(self.config.runtime.stats_period_ms.max(1));
        let global = match &self.config.runtime.global {
            Some(g) => {
                if let Some((setting, reason)) = g.problem() {
                    return Err(ConfigError::Runtime { setting, reason }.into());
                }
                Some(Arc::new(Mutex::new(GlobalControl::new(g.clone()))))
            }
            None => None,
        };
        let control = {
            let registry = registry.clone();
            let shared = shared.clone();
            let stop = stop.clone();
            let global = global.clone();
            std::thread::Builder::new()
                .name("seda-control".into())
                .spawn(move || {
                    control_loop(&registry, &shared, &stop, global.as_deref(), tick, period)
                })
                .map_err(ConfigError::ControlThread)?
        };
        let rt = Runtime {
            inner: Arc::new(Inner {
                shared,
                config: self.config.clone(),
                registry,
                started: Instant::now(),
                control: Mutex::new(Some(control)),
                stop,
                report: Mutex::new(None),
                global,
            }),
        };
        for (name, settings) in &self.config.domains {
            rt.domain(name, settings.clone())?;
        }
        Ok(rt)
    }
}
