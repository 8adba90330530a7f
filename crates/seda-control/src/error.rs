//! The typed errors of a controller's configuration.
//!
//! [`InvalidConfig`] is what a controller's constructor returns when a value is out of range; it
//! names the parameter as the configuration file spells it. [`CatalogueError`] is what building
//! a controller by name from a configuration returns: an unknown name, an unknown parameter, a
//! value of the wrong shape, or an [`InvalidConfig`] (kept as the error's source).

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// A controller's parameter out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidConfig {
    /// The parameter, as the configuration file names it (`target_s`, `smoothing`...).
    pub param: &'static str,
    /// What is wrong, with the value.
    pub reason: String,
}

impl InvalidConfig {
    /// `param` is wrong for `reason` (a sentence that names the parameter and its value).
    pub fn new(param: &'static str, reason: impl Into<String>) -> Self {
        InvalidConfig {
            param,
            reason: reason.into(),
        }
    }

    /// `value` checked as `param`'s: a finite number >= 0.
    pub(crate) fn non_negative(param: &'static str, value: f64) -> Result<(), Self> {
        if value.is_finite() && value >= 0.0 {
            return Ok(());
        }
        Err(InvalidConfig::new(
            param,
            format!("{param} must be a number >= 0, got {value}"),
        ))
    }

    /// `d` checked as `param`'s: longer than zero.
    pub(crate) fn positive(param: &'static str, d: Duration) -> Result<(), Self> {
        if d.is_zero() {
            return Err(InvalidConfig::new(
                param,
                format!("{param} must be greater than 0"),
            ));
        }
        Ok(())
    }
}

impl fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl Error for InvalidConfig {}

/// Why a controller could not be built from a name and parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogueError {
    /// No controller of that name.
    UnknownName {
        /// The name asked for.
        name: String,
        /// Every name of the catalogue.
        valid: Vec<&'static str>,
    },
    /// The controller takes no parameter of that name.
    UnknownParam {
        /// The controller.
        controller: &'static str,
        /// The parameter given.
        param: String,
        /// The parameters the controller takes.
        valid: Vec<&'static str>,
    },
    /// A parameter's value has the wrong shape (not finite, a negative duration, a fraction
    /// where a count is needed).
    BadValue {
        /// The controller.
        controller: &'static str,
        /// The parameter.
        param: String,
        /// The value given.
        value: f64,
        /// What was expected ("a finite number", "a number of seconds >= 0"...).
        expected: &'static str,
    },
    /// The parameters have the right shape but the controller refuses them.
    Invalid {
        /// The controller.
        controller: &'static str,
        /// Its constructor's error.
        source: InvalidConfig,
    },
}

impl fmt::Display for CatalogueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogueError::UnknownName { name, valid } => write!(
                f,
                "unknown admission kind `{name}`; valid kinds: {}",
                valid.join(", ")
            ),
            CatalogueError::UnknownParam {
                controller,
                param,
                valid,
            } => {
                let valid = if valid.is_empty() {
                    "none".to_string()
                } else {
                    valid.join(", ")
                };
                write!(
                    f,
                    "unknown parameter `{param}` for admission kind `{controller}`; valid \
                     parameters: {valid}"
                )
            }
            CatalogueError::BadValue {
                controller,
                param,
                value,
                expected,
            } => write!(
                f,
                "parameter `{param}` of `{controller}` must be {expected}, got {value}"
            ),
            CatalogueError::Invalid { controller, source } => {
                write!(f, "`{controller}`: {source}")
            }
        }
    }
}

impl Error for CatalogueError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CatalogueError::Invalid { source, .. } => Some(source),
            _ => None,
        }
    }
}
