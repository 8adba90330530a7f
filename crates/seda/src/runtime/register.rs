//! Adding a stage: the file's settings over the builder's, the final controller (with the
//! handler's knobs bound to it), the stage's pool, and its core.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use seda_control::{BatchController, TokenBucket};

use super::{DEFAULT_BATCH, DEFAULT_THRESHOLD, Runtime};
use crate::Event;
use crate::config::ConfigError;
use crate::error::BuildError;
use crate::pool::Pool;
use crate::queue::Queue;
use crate::sink::Sink;
use crate::stage::{CoreParts, Mode, StageBuilder, StageCore, Termination, admission_of};

impl Runtime {
    /// Adds a stage and returns its sink. Settings from the configuration file for a stage of
    /// the same name override those in the builder.
    ///
    /// # Errors
    ///
    /// - [`BuildError::ShutDown`] once the runtime is shut down;
    /// - [`BuildError::MissingHandler`] when the builder has no handler;
    /// - [`BuildError::DuplicateStage`] when a stage of that name exists;
    /// - [`BuildError::UnknownDomain`] when the stage names a domain not declared;
    /// - [`BuildError::Config`] when the file's admission or termination settings for the
    ///   stage are invalid;
    /// - [`BuildError::Knob`] when the handler reads a knob its controller does not have.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{BuildError, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// rt.stage(Stage::builder("echo").handler(handler::each(|_: u8, _cx| {})))?;
    /// let again = rt.stage(Stage::builder("echo").handler(handler::each(|_: u8, _cx| {})));
    /// assert!(matches!(again, Err(BuildError::DuplicateStage(_))));
    /// rt.shutdown();
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn stage<E: Event>(&self, builder: StageBuilder<E>) -> Result<Sink<E>, BuildError> {
        if self.inner.report.lock().is_some() {
            return Err(BuildError::ShutDown);
        }
        let StageBuilder {
            name,
            handler,
            config,
            predicates,
            controller,
            terminator,
            knobs,
            on_drop,
        } = builder;
        let handler = handler.ok_or_else(|| BuildError::MissingHandler(name.clone()))?;
        let config = match self.inner.config.stages.get(&name) {
            Some(file) => config.overlaid(file),
            None => config,
        };
        config.validate(&name)?;
        let controller = match &config.admission {
            Some(a) => Some(a.build().map_err(|source| ConfigError::Admission {
                stage: name.clone(),
                source,
            })?),
            None => controller.or(self.entry_dropper(&name)?),
        };
        let terminator = match &config.terminate {
            Some(t) => Some(t.build().map_err(|source| ConfigError::Terminate {
                stage: name.clone(),
                source,
            })?),
            None => terminator,
        };
        let mut stages = self.inner.registry.stages.write();
        if stages.iter().any(|s| s.name() == name) {
            return Err(BuildError::DuplicateStage(name));
        }
        // The controller is final now (the file may have replaced the builder's): the handler's
        // knobs must be its, or the stage is refused.
        for knob in &knobs {
            knob.bind(controller.as_deref())
                .map_err(|source| BuildError::Knob {
                    stage: name.clone(),
                    source,
                })?;
        }
        let (mode, pool) = if config.inline == Some(true) {
            (Mode::Inline, None)
        } else if let Some(domain) = &config.domain {
            let pool = self.inner.registry.domains.read().get(domain).cloned();
            let pool = pool.ok_or_else(|| BuildError::UnknownDomain {
                stage: name.clone(),
                domain: domain.clone(),
            })?;
            (Mode::Domain(domain.clone()), Some(pool))
        } else {
            let pool = Pool::new(
                name.clone(),
                config.pool().to_pool_config(),
                config.pool().controller_enabled(),
                &config.pool().sizer_config(),
            );
            self.inner.registry.pools.write().push(pool.clone());
            (Mode::Queued, Some(pool))
        };
        let threshold = match (config.threshold, &mode) {
            (Some(0), _) | (None, Mode::Inline) => None,
            (Some(t), _) => Some(t),
            (None, _) => Some(DEFAULT_THRESHOLD),
        };
        let batch_controller = config.batch_config().map(BatchController::new);
        let batch_max = match &batch_controller {
            Some(bc) => bc.target(),
            None => config.batch.unwrap_or(DEFAULT_BATCH),
        };
        let rate = config
            .rate_limit
            .as_ref()
            .map(|r| TokenBucket::new(r.rate_per_s, r.depth));
        let core = Arc::new(StageCore::new(CoreParts {
            id: stages.len() + 1,
            name: name.clone(),
            queue: Queue::new(threshold, config.order.unwrap_or_default()),
            mode,
            pool: pool.clone(),
            handler,
            admission: admission_of(predicates, rate, controller),
            batch_max,
            batch_controller,
            drop_after: config.drop_after_ms.map(Duration::from_millis),
            on_drop,
            termination: terminator.map(Termination::new),
            shared: self.inner.shared.clone(),
        }));
        stages.push(core.clone());
        drop(stages);
        if let Some(pool) = pool {
            pool.attach(core.clone());
        }
        Ok(Sink { core })
    }

    /// Global control's selective dropper, if `name` is its entry stage (see `global.rs`).
    fn entry_dropper(
        &self,
        name: &str,
    ) -> Result<Option<Box<dyn seda_control::AdmissionController>>, BuildError> {
        let Some(g) = &self.inner.config.runtime.global else {
            return Ok(None);
        };
        let Some(threshold) = g.dropper_threshold().filter(|_| g.entry == name) else {
            return Ok(None);
        };
        let params = BTreeMap::from([("threshold_s".to_string(), threshold.as_secs_f64())]);
        seda_control::build_admission(seda_control::catalogue::SELECTIVE_DROPPER, &params)
            .map(Some)
            .map_err(|source| {
                ConfigError::Admission {
                    stage: name.to_string(),
                    source,
                }
                .into()
            })
    }
}
