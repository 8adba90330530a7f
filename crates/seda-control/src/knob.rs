//! Knobs: a controller's output that a stage's handler reads, typed.
//!
//! Some controllers act through the handler rather than on admission: WC03's degradation
//! controller sets a *quality* that the handler uses to decide how much work to do (later: an
//! early-termination threshold, a pool target). The controller owns a [`KnobCell`], an atomic
//! it writes; the handler holds a [`Knob<K>`] typed by what it reads ([`Quality`]...). The
//! stage builder binds the handle to the cell of the stage's controller when the stage is
//! built, and building fails if the controller has no such knob, so a configuration that swaps
//! the degradation controller for another is refused at start instead of leaving the handler
//! at full quality.
//!
//! Reading is one atomic load (two before binding settles), so handlers may read per event.

use std::error::Error;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// What a knob carries: its name and the type a handler reads.
pub trait KnobKind: 'static {
    /// The name a controller publishes the knob under.
    const NAME: &'static str;
    /// What a handler reads.
    type Value: Copy;
    /// The value before the controller's first decision.
    const INITIAL: f64;
    /// The value from the cell's number.
    fn decode(raw: f64) -> Self::Value;
}

/// The quality a handler should deliver, in `(0, 1]`: WC03 Section 3.4's degradation knob.
#[derive(Debug, Clone, Copy)]
pub struct Quality;

impl KnobKind for Quality {
    const NAME: &'static str = "quality";
    type Value = f64;
    const INITIAL: f64 = 1.0;
    fn decode(raw: f64) -> f64 {
        raw
    }
}

/// The controller's side of a knob: a named number it writes and readers load.
#[derive(Debug, Clone)]
pub struct KnobCell {
    name: &'static str,
    bits: Arc<AtomicU64>,
}

impl KnobCell {
    /// A cell for knob `K`, at its initial value.
    pub fn new<K: KnobKind>() -> Self {
        KnobCell {
            name: K::NAME,
            bits: Arc::new(AtomicU64::new(K::INITIAL.to_bits())),
        }
    }

    /// The knob's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Publishes `value`.
    pub fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }

    /// The last value published.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }
}

/// The reader's side of a knob: create it, move a clone into the handler, and give it to the
/// stage builder (`StageBuilder::knob`), which binds it to the controller's cell.
pub struct Knob<K> {
    slot: Arc<OnceLock<KnobCell>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Knob<K> {
    fn clone(&self) -> Self {
        Knob {
            slot: self.slot.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K: KnobKind> fmt::Debug for Knob<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Knob")
            .field("name", &K::NAME)
            .field("bound", &self.is_bound())
            .finish()
    }
}

impl<K: KnobKind> Default for Knob<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: KnobKind> Knob<K> {
    /// An unbound handle; it reads `K::INITIAL` until bound.
    pub fn new() -> Self {
        Knob {
            slot: Arc::new(OnceLock::new()),
            _kind: PhantomData,
        }
    }

    /// The controller's current value.
    pub fn get(&self) -> K::Value {
        K::decode(self.slot.get().map_or(K::INITIAL, KnobCell::get))
    }

    /// Whether it is bound to a controller's cell.
    pub fn is_bound(&self) -> bool {
        self.slot.get().is_some()
    }

    /// The untyped form a stage builder keeps until it has the stage's controller.
    pub fn slot(&self) -> KnobSlot {
        KnobSlot {
            name: K::NAME,
            slot: self.slot.clone(),
        }
    }
}

/// A [`Knob`] without its type, waiting to be bound to a controller's cell.
#[derive(Debug, Clone)]
pub struct KnobSlot {
    name: &'static str,
    slot: Arc<OnceLock<KnobCell>>,
}

impl KnobSlot {
    /// The knob's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Binds it to `controller`'s knob of the same name.
    pub fn bind(
        &self,
        controller: Option<&dyn crate::AdmissionController>,
    ) -> Result<(), KnobError> {
        let cell = controller.and_then(|c| c.knob(self.name));
        let Some(cell) = cell else {
            return Err(KnobError::Missing {
                knob: self.name,
                controller: controller.map(|c| c.name()),
            });
        };
        self.slot
            .set(cell)
            .map_err(|_| KnobError::AlreadyBound { knob: self.name })
    }
}

/// Why a knob could not be bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnobError {
    /// The stage's controller publishes no knob of that name (or the stage has none).
    Missing {
        /// The knob.
        knob: &'static str,
        /// The stage's controller, if it has one.
        controller: Option<&'static str>,
    },
    /// The handle is already bound to another stage's controller.
    AlreadyBound {
        /// The knob.
        knob: &'static str,
    },
}

impl fmt::Display for KnobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnobError::Missing {
                knob,
                controller: Some(c),
            } => write!(
                f,
                "the handler reads the `{knob}` knob, which controller `{c}` does not have"
            ),
            KnobError::Missing {
                knob,
                controller: None,
            } => write!(
                f,
                "the handler reads the `{knob}` knob, but the stage has no admission controller"
            ),
            KnobError::AlreadyBound { knob } => {
                write!(f, "the `{knob}` knob handle is already bound to a stage")
            }
        }
    }
}

impl Error for KnobError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AdmissionController, DegradationConfig, DegradingAdmission, ResponseTimeConfig};
    use std::time::Duration;

    #[test]
    fn a_bound_knob_reads_what_the_controller_writes() {
        let t = Duration::from_secs(1);
        let rt = ResponseTimeConfig {
            nreq: 10,
            ..ResponseTimeConfig::new(t)
        };
        let mut c = DegradingAdmission::new(DegradationConfig::new(t), rt).unwrap();
        let q = Knob::<Quality>::new();
        assert_eq!(q.get(), 1.0);
        q.slot().bind(Some(&c)).unwrap();
        for i in 0..10 {
            c.on_complete(Duration::from_millis(i), 0, 5 * t, 5 * t);
        }
        assert_eq!(q.get(), 0.5);
        assert_eq!(
            q.slot().bind(Some(&c)),
            Err(KnobError::AlreadyBound { knob: "quality" })
        );
    }

    #[test]
    fn a_controller_without_the_knob_is_an_error() {
        let c = crate::SelectiveDropper::default();
        let e = Knob::<Quality>::new().slot().bind(Some(&c)).unwrap_err();
        assert_eq!(
            e,
            KnobError::Missing {
                knob: "quality",
                controller: Some("selective_dropper")
            }
        );
        assert!(Knob::<Quality>::new().slot().bind(None).is_err());
    }
}
