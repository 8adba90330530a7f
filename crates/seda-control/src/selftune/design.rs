//! Controller gains from a fitted model (FAIR07 Section 4.3.4).
//!
//! The loop of FAIR07 Figure 4-8: the controller sees `e(k) = r(k) - y(k-1)` (a unit delay in the
//! feedback path) and outputs the thread change `u(k)`; the plant is `y(k) = A*y(k-1) + B*u(k)`.
//!
//! - **P with a pre-compensator** (equations 25 to 33): `K_p = A / B` and the reference scaled
//!   by `1 / A`, so `u(k) = (r(k) - A*y(k-1)) / B`. On the model this is dead-beat: the output
//!   reaches the target in one period with no steady error.
//! - **PI** (equations 34 to 48) and **PD** (equations 50 to 54): the closed loop's two poles are
//!   placed at `r e^(+-j theta)`. Matching the characteristic polynomials gives the thesis's
//!   gains: PI `K_p = (A - r^2) / B`, `K_i = (r^2 + 1 - 2 r cos theta) / B` (46, 47); PD
//!   `K_d = -r^2 / B`, `K_p = (A - 2 r cos theta) / B - K_d` (53, 54). The thesis solves for
//!   `r` and `theta` from the settling time through equations 48 and 52; we use the standard
//!   second-order rules its reference on feedback control of computing systems gives, which
//!   are explicit: `r = exp(-4 / k_s)` for a settling time of `k_s` periods and
//!   `theta = pi * ln r / ln M_p` for a largest overshoot `M_p`.

use super::arx::ArxEstimate;

/// Which control law a self-tuning pool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Law {
    /// Proportional control with the pre-compensator (FAIR07's best performer).
    P,
    /// Proportional-integral control with pole placement.
    Pi,
    /// Proportional-derivative control with pole placement.
    Pd,
}

impl Law {
    /// Every law, in the order reports list them.
    pub const ALL: [Law; 3] = [Law::P, Law::Pi, Law::Pd];

    /// The law's short name (`p`, `pi`, `pd`).
    pub fn name(self) -> &'static str {
        match self {
            Law::P => "p",
            Law::Pi => "pi",
            Law::Pd => "pd",
        }
    }
}

/// Gains of one law for one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gains {
    /// Proportional gain.
    pub kp: f64,
    /// Integral gain (PI only).
    pub ki: f64,
    /// Derivative gain (PD only).
    pub kd: f64,
    /// Reference pre-compensation (P only: `1 / A`; 1 otherwise).
    pub precomp: f64,
}

/// The closed loop's desired poles from a settling time and an overshoot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoleSpec {
    /// Periods until the output stays within 2% of the target (`k_s`).
    pub settle_periods: f64,
    /// Largest overshoot as a fraction of the step (`M_p`, in `(0, 1)`).
    pub overshoot: f64,
}

impl Default for PoleSpec {
    /// Settle within 5 periods with at most 10% overshoot.
    fn default() -> Self {
        PoleSpec {
            settle_periods: 5.0,
            overshoot: 0.1,
        }
    }
}

impl PoleSpec {
    /// `(r, theta)`: magnitude and angle of the desired pole pair.
    pub fn poles(&self) -> (f64, f64) {
        let ks = self.settle_periods.max(1.0);
        let mp = self.overshoot.clamp(1e-3, 0.99);
        let r = (-4.0 / ks).exp();
        let theta =
            (std::f64::consts::PI * r.ln() / mp.ln()).clamp(0.0, std::f64::consts::FRAC_PI_2);
        (r, theta)
    }
}

/// The gains of `law` for the model `m`, or `None` when `b` is too small to invert.
pub fn gains(law: Law, m: ArxEstimate, spec: PoleSpec) -> Option<Gains> {
    if m.b.abs().is_nan() || m.b.abs() <= f64::EPSILON || m.a.abs() <= f64::EPSILON {
        return None;
    }
    let (r, theta) = spec.poles();
    let (a, b) = (m.a, m.b);
    Some(match law {
        Law::P => Gains {
            kp: a / b,
            ki: 0.0,
            kd: 0.0,
            precomp: 1.0 / a,
        },
        Law::Pi => Gains {
            kp: (a - r * r) / b,
            ki: (r * r + 1.0 - 2.0 * r * theta.cos()) / b,
            kd: 0.0,
            precomp: 1.0,
        },
        Law::Pd => {
            let kd = -r * r / b;
            Gains {
                kp: (a - 2.0 * r * theta.cos()) / b - kd,
                ki: 0.0,
                kd,
                precomp: 1.0,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the law on its own model from `y0` toward `target` and returns the outputs.
    fn run(law: Law, m: ArxEstimate, y0: f64, target: f64, n: usize) -> Vec<f64> {
        let g = gains(law, m, PoleSpec::default()).unwrap();
        let (mut y, mut integral, mut e_prev) = (y0, 0.0, 0.0);
        let mut out = Vec::new();
        for _ in 0..n {
            let e = g.precomp * target - y;
            integral += g.ki * e;
            let u = g.kp * e + integral + g.kd * (e - e_prev);
            e_prev = e;
            y = m.a * y + m.b * u;
            out.push(y);
        }
        out
    }

    #[test]
    fn p_with_precompensator_is_deadbeat_on_its_model() {
        let m = ArxEstimate { a: 0.98, b: 30.0 };
        let ys = run(Law::P, m, 100.0, 400.0, 3);
        assert!((ys[0] - 400.0).abs() < 1e-9, "{ys:?}");
    }

    #[test]
    fn pi_and_pd_settle_within_the_spec() {
        let m = ArxEstimate { a: 1.0, b: 25.0 };
        for law in [Law::Pi, Law::Pd] {
            let ys = run(law, m, 100.0, 400.0, 30);
            let settled = ys[8..].iter().all(|y| (y - 400.0).abs() <= 0.05 * 300.0);
            // PD has no integrator: on a plant with a = 1 it still reaches the target, since
            // the plant integrates.
            assert!(settled, "{law:?}: {ys:?}");
        }
    }

    #[test]
    fn poles_inside_the_unit_circle() {
        let (r, theta) = PoleSpec::default().poles();
        assert!(r > 0.0 && r < 1.0);
        assert!((0.0..=std::f64::consts::FRAC_PI_2).contains(&theta));
    }

    #[test]
    fn zero_gain_model_has_no_gains() {
        assert_eq!(
            gains(Law::P, ArxEstimate { a: 1.0, b: 0.0 }, PoleSpec::default()),
            None
        );
    }
}
