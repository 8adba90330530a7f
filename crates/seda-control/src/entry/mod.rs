//! What a registry entry is: the types every lever's list is made of, in a module that imports
//! no controller.
//!
//! The controllers' modules build their entries from these types and the lists in
//! [`catalogue`](crate::catalogue) name the controllers' modules, so keeping the types here (and
//! not in the catalogue) leaves the imports one-way: controllers -> `entry` <- `catalogue` ->
//! controllers, with no circle through the catalogue.

mod params;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

pub use params::Params;

use crate::{AdmissionController, CatalogueError, InvalidConfig};

/// What a controller acts on, which is also the folder its module lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// Sets an admission rate or queue bound from response times (`rate/`).
    Rate,
    /// Limits the requests in flight (the peers' concurrency limits, `peers/`).
    Limit,
    /// Drops queued requests that waited too long (`drop/`, `peers/codel.rs`).
    Drop,
}

/// Reads a controller's parameters and builds it.
pub(crate) type BuildFn =
    fn(&mut Params<'_>) -> Result<Box<dyn AdmissionController>, InvalidConfig>;

/// The parameters that aim a controller at a response-time target.
pub(crate) type AimFn = fn(Duration) -> Vec<(&'static str, f64)>;

/// One controller of the catalogue.
pub struct Entry {
    /// Its name in configuration files and on the command line.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// The paper or peer it comes from.
    pub source: &'static str,
    /// What it acts on.
    pub role: Role,
    /// Whether side-by-side comparisons run it (the lab's `controllers` scenario); variants
    /// and controllers that need a differently shaped workload (classes, a degradable
    /// handler) have their own scenarios.
    pub compared: bool,
    pub(crate) build: BuildFn,
    pub(crate) aim: AimFn,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// Builds the controller with `params` (names with units: `target_s`, `nreq`...); absent
    /// parameters take the controller's defaults.
    pub fn build(
        &self,
        params: &BTreeMap<String, f64>,
    ) -> Result<Box<dyn AdmissionController>, CatalogueError> {
        let mut p = Params::new(self.name, params);
        let built = (self.build)(&mut p);
        // Shape errors and unknown names first: a value replaced by its default may be what
        // the controller refused.
        p.finish()?;
        built.map_err(|source| CatalogueError::Invalid {
            controller: self.name,
            source,
        })
    }

    /// The parameters that aim the controller at a response-time `target` (empty for one
    /// that takes no target, such as Vegas, which finds its own).
    pub fn aimed(&self, target: Duration) -> BTreeMap<String, f64> {
        (self.aim)(target)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// Builds the controller aimed at `target`, with `extra` parameters on top.
    pub fn build_aimed(
        &self,
        target: Duration,
        extra: &BTreeMap<String, f64>,
    ) -> Result<Box<dyn AdmissionController>, CatalogueError> {
        let mut p = self.aimed(target);
        p.extend(extra.iter().map(|(k, v)| (k.clone(), *v)));
        self.build(&p)
    }

    /// Whether [`Entry::aimed`] gives it any parameter.
    pub fn takes_target(&self) -> bool {
        !(self.aim)(Duration::from_secs(1)).is_empty()
    }

    /// The parameters it takes, in the order it reads them.
    pub fn parameters(&self) -> Vec<&'static str> {
        let empty = BTreeMap::new();
        let mut p = Params::new(self.name, &empty);
        let _ = (self.build)(&mut p);
        p.names().to_vec()
    }
}

/// Aims a controller at nothing: it takes no target.
pub(crate) fn no_target(_: Duration) -> Vec<(&'static str, f64)> {
    Vec::new()
}

/// Aims a controller by its `target_s`.
pub(crate) fn target_s(target: Duration) -> Vec<(&'static str, f64)> {
    vec![("target_s", target.as_secs_f64())]
}
