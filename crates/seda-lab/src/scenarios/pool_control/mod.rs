//! `pool-control` (FAIR07 Figures 5-2 to 5-6): pool sizers on the real runtime, on plants
//! where threads matter.
//!
//! Each plant is one stage whose handler waits on a backend, fed by a producer that keeps its
//! queue from running dry: an emulated backend (a sleep, stated as such:
//! `seda_testbed::bottleneck::EmulatedBackend`), or the e-mail store on PostgreSQL (skipped, and
//! said so, where no PostgreSQL listens). First a sweep of fixed pools finds the best fixed
//! size and its throughput `B`. Then every sizer runs three phases from eight threads: the
//! self-tuning pool (P, PI, PD) is given a throughput target of 0.4 B, then 0.8 B (the step of
//! Figures 5-2 to 5-4), then 1.5 B, more than any pool gives, where it must find the most it can (the knee of the contended
//! plant). SEDA's heuristic and hill climbing take no target; they run the same three phases.
//! The best fixed size runs again beside the sizers, and each sizer's share is of the mean of
//! the two readings beside it ([`Best`]).

mod metrics;
mod plant;
mod report;

use std::time::Duration;

use anyhow::Result;
use seda::SizerConfig;
use seda_control::catalogue::sizers::{self, FIXED, HILL_CLIMBING, SEDA};
use seda_control::selftune::Law;
use serde_json::{Map, Value, json};

use crate::figure::fmt;
use crate::lab::Lab;
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::scenario::Scenario;
use metrics::Figures;
use plant::{PLANTS, Plant, Run, Work};

/// The scenario.
pub(crate) struct PoolControl;

/// The sizers compared, by the names the summary uses.
const SIZERS: [&str; 5] = ["p", "pi", "pd", SEDA, HILL_CLIMBING];

/// Targets of the three phases, as shares of the sweep's best fixed pool's throughput.
const PHASES: [f64; 3] = [0.4, 0.8, 1.5];

/// Threads every sizer starts with (about the first phase's target on the emulated plants).
const INITIAL_THREADS: usize = 8;

/// The quick form's control period: eight of its emulated backend's 20 ms waits
/// ([`Plant::quick`]). A pool started at once completes in bursts, one per wait, so a period
/// that is not a whole number of waits (150 ms of 40 ms) counted 3 or 4 bursts by chance, and
/// read as +-13% noise in every steady error and model error; the full form's 1 s period holds
/// 25 of its 40 ms waits and barely sees it.
const QUICK_PERIOD: Duration = Duration::from_millis(160);

fn sizer(name: &str, period: Duration) -> SizerConfig {
    let period_ms = Some(period.as_millis().try_into().unwrap_or(u64::MAX));
    let base = match name {
        "p" => SizerConfig::self_tuning(Law::P),
        "pi" => SizerConfig::self_tuning(Law::Pi),
        "pd" => SizerConfig::self_tuning(Law::Pd),
        HILL_CLIMBING | FIXED => SizerConfig::new(name),
        _ => SizerConfig::new(SEDA),
    };
    SizerConfig { period_ms, ..base }
}

/// The best fixed pool `(threads, events/s)`, and every size's `(threads, events/s)`.
type Sweep = ((usize, f64), Vec<(f64, f64)>);

/// The period a fixed pool's throughput is read at.
fn fixed_period(lab: &Lab) -> Duration {
    lab.pick(QUICK_PERIOD, Duration::from_millis(100))
}

/// The throughput (events/s) of a fixed pool of `n` threads run for `length`, and its
/// periods.
fn fixed(
    lab: &Lab,
    plant: Plant,
    work: &Work,
    n: usize,
    length: Duration,
) -> Result<(f64, Vec<plant::Sample>)> {
    let period = fixed_period(lab);
    let run = plant::run(
        work,
        sizer(FIXED, period),
        n,
        &[(length, None)],
        period,
        lab.server_cpu,
    )?;
    let (y, _) = metrics::plateau(&run.samples);
    lab.log(format!(
        "{}: fixed pool of {n}: {y:.0} events/s",
        plant.name
    ));
    Ok((y, run.samples))
}

/// How long a size of the sweep runs.
fn sweep_length(lab: &Lab) -> Duration {
    lab.pick(Duration::from_millis(640), Duration::from_secs(5))
}

/// How long a reading of the best fixed pool beside the sizers runs: in the full form as
/// long as the sizers' last phase is measured (its second half), so that both average over as
/// many periods of a plant that moves by up to 15% from one period to the next.
fn reference_length(lab: &Lab) -> Duration {
    lab.pick(Duration::from_millis(960), Duration::from_secs(30))
}

/// Sizes of the sweep within this share of the most throughput tie, and the fewest threads of
/// them is the best fixed pool: on the io plant's plateau 24, 32 and 48 threads all read
/// 594/s, and the largest reading, by a fraction of an event, picked 48.
const SWEEP_TIE: f64 = 0.01;

/// Runs a fixed pool of every size of the plant's sweep, in increasing order.
fn sweep(lab: &Lab, plant: Plant, work: &Work) -> Result<Sweep> {
    let mut points = Vec::new();
    for &n in lab.pick(plant.sizes.0, plant.sizes.1) {
        points.push((n as f64, fixed(lab, plant, work, n, sweep_length(lab))?.0));
    }
    let most = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let best = points
        .iter()
        .copied()
        .find(|p| p.1 >= (1.0 - SWEEP_TIE) * most)
        .unwrap_or((0.0, 0.0));
    Ok(((best.0 as usize, best.1), points))
}

fn figures(name: &str, run: &Run, best: f64) -> Figures {
    // The self-tuning laws (`p`, `pi`, `pd`) are labels, not sizer names: targeted.
    let targeted = sizers::entry(name).is_none_or(|e| e.targeted);
    let phase = |i| metrics::phase(&run.samples, i);
    let (y, threads) = metrics::plateau(phase(2));
    Figures {
        steady_error: targeted.then(|| metrics::steady_error(phase(1))).flatten(),
        step_throughput_of_target: targeted
            .then(|| metrics::step_throughput_of_target(phase(1)))
            .flatten(),
        tracking_error: targeted
            .then(|| metrics::tracking_error(phase(1)))
            .flatten(),
        settle_periods: targeted
            .then(|| metrics::settle_periods(phase(1)))
            .flatten(),
        thread_overshoot: targeted
            .then(|| metrics::thread_overshoot(phase(1)))
            .flatten(),
        fraction_of_best_fixed: y / best,
        throughput_per_s: y,
        threads,
        arx_error: run.arx_error,
    }
}

impl Scenario for PoolControl {
    fn name(&self) -> &'static str {
        "pool-control"
    }

    fn about(&self) -> &'static str {
        "P, PI, PD, SEDA's heuristic and hill climbing sizing a pool on emulated-backend plants \
         (one with an interior optimum) and the e-mail store on PostgreSQL: steps of a \
         throughput target, and the most each finds"
    }

    /// P's step is judged by its throughput over the target, not by its steady error, whose
    /// ideal is zero (a relative spread of 0.006 and 0.042 reads 85%, both within the 5%
    /// goal); the ARX error, a share of the plant's noise and the model's misses at the knee,
    /// stays in the summary and the checks.
    fn headline(&self) -> &'static [&'static str] {
        &[
            "p/io/fraction_of_best_fixed",
            "p/contended/fraction_of_best_fixed",
            "p/contended/step_throughput_of_target",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let period = lab.pick(QUICK_PERIOD, Duration::from_secs(1));
        // Quick: 3, 8 and 12 periods (4, 8 and 8 took 60-63 s); the steps measured for
        // settling are the second and third. The last phase's share of the best fixed pool is
        // its second half: with 8 periods that was 4, where one period still paying for a move
        // weighs a quarter (on the contended plant, P read 0.94 of the best fixed pool with
        // 12.0 threads in a quick run on 2026-12-07; PI 0.92 with 13 in a CI pre-check).
        let phase_lens = lab.pick(
            [480, 1280, 1920].map(Duration::from_millis),
            [20, 30, 30].map(Duration::from_secs),
        );
        let mut summary = Map::new();
        let mut data = Map::new();
        let mut skipped = Vec::new();
        let mut all: Vec<PlantRows<'_>> = Vec::new();
        let plants = PLANTS.map(|p| lab.pick(p.quick(), p));
        for plant in plants {
            if let Some(why) = lab.skipping(plant.missing())? {
                lab.log(format!("{}: skipped: {why}", plant.name));
                skipped.push(json!({"plant": plant.name, "why": why}));
                continue;
            }
            let work = plant.open()?;
            let (swept, sweep_points) = sweep(lab, plant, &work)?;
            // The best fixed pool is read again beside the sizers ([`Best`]): the plants drift
            // over minutes (the PostgreSQL plant's best fixed pool read 2,183/s in a sweep and
            // 1,362/s twenty minutes on), and the sweep's best is the largest of several noisy
            // readings, which overstates it. The quick form reads it only after the last sizer,
            // to stay under a minute.
            // Each reading also gives the plant's noise at the sizers' period.
            let group = (period.as_secs_f64() / fixed_period(lab).as_secs_f64()).round() as usize;
            let reference = || {
                let (y, samples) = fixed(lab, plant, &work, swept.0, reference_length(lab))?;
                anyhow::Ok((y, metrics::noise(&samples, group)))
            };
            let mut best = Best {
                threads: swept.0,
                swept: swept.1,
                readings: Vec::new(),
                noises: Vec::new(),
            };
            if lab.quick {
                best.readings.push(swept.1);
            } else {
                best.read(reference()?);
            }
            let mut runs = Vec::new();
            for (i, name) in SIZERS.into_iter().enumerate() {
                let phases: Vec<(Duration, Option<f64>)> = PHASES
                    .iter()
                    .zip(phase_lens)
                    .map(|(f, l)| (l, Some(f * swept.1)))
                    .collect();
                let run = plant::run(
                    &work,
                    sizer(name, period),
                    INITIAL_THREADS,
                    &phases,
                    period,
                    lab.server_cpu,
                )?;
                runs.push((name, run));
                if !lab.quick || i + 1 == SIZERS.len() {
                    best.read(reference()?);
                }
            }
            let mut rows = Vec::new();
            for (i, (name, run)) in runs.iter().enumerate() {
                let f = figures(name, run, best.beside(i));
                lab.log(format!(
                    "{}: {name}: {:.0} events/s ({:.2} of best fixed) with {:.1} threads",
                    plant.name, f.throughput_per_s, f.fraction_of_best_fixed, f.threads
                ));
                summary
                    .entry(name.to_string())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .map(|m| m.insert(plant.name.to_string(), json!(f)));
                rows.push((*name, f));
            }
            summary.insert(
                format!("best_fixed_{}", plant.name),
                json!({
                    "threads": best.threads,
                    "sweep_per_s": best.swept,
                    "readings_per_s": best.readings,
                    "noise": best.noise(),
                }),
            );
            plot(lab, plant, &runs)?;
            data.insert(
                plant.name.to_string(),
                json!({
                    "plant": plant,
                    "sweep": sweep_points,
                    "runs": runs.iter().map(|(n, r)| (n.to_string(), json!(r))).collect::<Map<_, _>>(),
                }),
            );
            all.push((plant, best, rows));
        }
        let checks = checks(&all, Goals { quick: lab.quick });
        Ok(Outcome {
            paper: "FAIR07 Figures 5-2 to 5-6".into(),
            config: json!({
                "period_s": period.as_secs_f64(),
                "phase_s": phase_lens.map(|l| l.as_secs_f64()),
                "initial_threads": INITIAL_THREADS,
                "phase_targets_of_best_fixed": PHASES,
                "max_threads": plant::MAX_THREADS,
                "plants": plants,
                "skipped": skipped,
            }),
            summary,
            data: Value::Object(data),
            checks,
            report: report::markdown(&all, period, &phase_lens),
        })
    }
}

fn plot(lab: &Lab, plant: Plant, runs: &[(&str, Run)]) -> Result<()> {
    let line = |name: &str, run: &Run, y: &dyn Fn(&plant::Sample) -> f64| {
        Series::new(name, run.samples.iter().map(|s| (s.t_s, y(s))).collect())
    };
    let mut throughput: Vec<Series> = runs
        .iter()
        .map(|(n, r)| line(n, r, &|s| s.throughput_per_s))
        .collect();
    if let Some((_, r)) = runs.first() {
        throughput.push(line("target", r, &|s| s.target_per_s.unwrap_or(f64::NAN)));
    }
    lab.plot(
        &format!("throughput-{}", plant.name),
        &LineChart::over_time(
            format!(
                "{} plant: throughput (events/s) against the target",
                plant.name
            ),
            "events/s",
            throughput,
        ),
    )?;
    lab.plot(
        &format!("threads-{}", plant.name),
        &LineChart::over_time(
            format!("{} plant: threads", plant.name),
            "threads",
            runs.iter()
                .map(|(n, r)| line(n, r, &|s| s.threads as f64))
                .collect(),
        ),
    )
}

/// The best fixed pool: its threads, its throughput in the sweep, and its readings beside the
/// sizers (events/s): in the full form one before the first sizer and one after each, in the
/// quick form the sweep's and one after the last sizer.
#[derive(Debug, Clone)]
struct Best {
    threads: usize,
    swept: f64,
    readings: Vec<f64>,
    /// The plant's noise in each reading beside the sizers ([`metrics::noise`]).
    noises: Vec<f64>,
}

impl Best {
    fn read(&mut self, (per_s, noise): (f64, Option<f64>)) {
        self.readings.push(per_s);
        self.noises.extend(noise);
    }

    /// The plant's noise at the best fixed size, the mean over the readings beside the
    /// sizers: the floor under the ARX model's one-step error.
    fn noise(&self) -> Option<f64> {
        (!self.noises.is_empty()).then(|| crate::averages::mean(self.noises.iter().copied()))
    }

    /// The throughput sizer `i`'s share is of: the mean of the two readings beside it (the
    /// last two where there are fewer readings than sizers).
    fn beside(&self, i: usize) -> f64 {
        let after = (i + 1).min(self.readings.len() - 1);
        (self.readings[after - 1] + self.readings[after]) / 2.0
    }
}

/// A plant, its best fixed pool, and every sizer's figures.
type PlantRows<'a> = (Plant, Best, Vec<(&'a str, Figures)>);
type Results<'a> = [PlantRows<'a>];

/// How a goal of the self-tuning pool is checked in this form. A goal is enforced where the
/// run can decide it and reported (observed) where it cannot. The full form checks each goal
/// as FAIR07 and the issue state it on the emulated plants, whose own noise from period to
/// period is under 1.5%, and on PostgreSQL only when that plant held still: the noise at its
/// best fixed size (the floor under every share and error measured on it) at most
/// [`STEADY_ENOUGH`]. On 2026-12-05 it read 0.023 and every goal held there; in the two full
/// forms of 2026-12-06 it read 0.070 and 0.103, the readings of the best pool beside the
/// sizers moved by a fifth, and the shares read 0.87-1.27 (P 0.97 and 0.93, hill climbing 1.06
/// and 0.99, SEDA's heuristic 1.04 and 0.76). The quick form's readings last a few periods,
/// so it checks with tolerances on the emulated plants and only reports the PostgreSQL plant
/// (its quick sweep's two readings of one pool seconds apart were up to 1.7 x apart) and the
/// step (a quick phase is eight periods: one overshoot of two threads, corrected a thread a
/// period, settles in its last; one run of eight on 2026-12-06).
#[derive(Debug, Clone, Copy)]
struct Goals {
    quick: bool,
}

impl Goals {
    /// Share of the best fixed pool each law reaches: the goal, 0.95, in both forms (quick
    /// release runs read 0.99-1.00 on both emulated plants, eight on 2026-12-06).
    fn fraction(self) -> f64 {
        0.95
    }

    /// Thread overshoot past the final pool: the goal, 0.2 (quick runs: at most 0.073).
    fn overshoot(self) -> f64 {
        0.2
    }

    /// The ARX model's one-step error: the goal, 0.1 (FAIR07 Figure 4-7; quick runs read
    /// 0.021-0.055 on io and 0.070-0.078 on the contended plant).
    fn arx(self) -> f64 {
        0.1
    }

    /// A check of `goal` on `plant`, whose noise at its best fixed size is `noise`: enforced
    /// where this form decides it (see [`Goals`]), observed where it does not.
    fn check(
        self,
        (plant, noise): (&Plant, Option<f64>),
        goal: Goal,
        claim: String,
        passed: bool,
        detail: String,
    ) -> Check {
        let emulated = matches!(plant.backend, plant::Backend::Emulated { .. });
        let decided = match (self.quick, goal) {
            (true, Goal::Step) => false,
            (true, _) => emulated,
            (false, _) => emulated || noise.is_some_and(|n| n <= STEADY_ENOUGH),
        };
        if decided {
            Check::new(claim, passed, detail)
        } else {
            Check::observed(claim, passed, detail)
        }
    }
}

/// The most a plant's throughput may stray from period to period at a fixed size for a full
/// run on it to decide goals of 5% ([`metrics::noise`]).
const STEADY_ENOUGH: f64 = 0.05;

/// What a check of [`Goals`] is about.
#[derive(Debug, Clone, Copy)]
enum Goal {
    /// A law's share of the best fixed pool and its thread overshoot.
    Share,
    /// P's ARX model's one-step error.
    Arx,
    /// P's step: settling and steady error.
    Step,
}

/// The goals (see [`Goals`] for how each form checks them) and the heuristic's
/// overshoot of the knee.
fn checks(all: &Results<'_>, goals: Goals) -> Vec<Check> {
    let get = |plant: &str, sizer: &str| {
        all.iter()
            .find(|(p, ..)| p.name == plant)
            .and_then(|(_, _, rows)| rows.iter().find(|(n, _)| *n == sizer))
            .map(|(_, f)| *f)
            .unwrap_or_default()
    };
    let mut checks = Vec::new();
    let p_knee = get("contended", "p");
    let seda_knee = get("contended", "seda");
    let knee = PLANTS
        .iter()
        .find_map(|p| match p.backend {
            plant::Backend::Emulated { knee, .. } if p.name == "contended" => Some(knee),
            _ => None,
        })
        .unwrap_or(0);
    checks.push(Check::new(
        "on a plant with an interior optimum, SEDA's heuristic, which only ever adds threads, \
         runs far past the knee (over 1.5 x), and the self-tuning pool (P) ends with fewer threads",
        seda_knee.threads > 1.5 * knee as f64 && p_knee.threads < seda_knee.threads,
        format!(
            "knee {knee}; P {:.1} threads, SEDA {:.1} threads",
            p_knee.threads, seda_knee.threads
        ),
    ));
    checks.push(Check::new(
        "on a plant with an interior optimum, the self-tuning pool (P) finds more throughput \
         than SEDA's heuristic",
        p_knee.throughput_per_s > seda_knee.throughput_per_s,
        format!(
            "P {:.0}/s, SEDA {:.0}/s",
            p_knee.throughput_per_s, seda_knee.throughput_per_s
        ),
    ));
    let (fraction, overshoot, arx) = (goals.fraction(), goals.overshoot(), goals.arx());
    for (plant, best, _) in all {
        for law in ["p", "pi", "pd"] {
            let f = get(plant.name, law);
            checks.push(goals.check(
                (plant, best.noise()),
                Goal::Share,
                format!(
                    "{}: {law} reaches >= {fraction} of the best fixed pool with thread \
                     overshoot <= {overshoot} (the goal: 0.95 and 0.2)",
                    plant.name
                ),
                f.fraction_of_best_fixed >= fraction
                    && f.thread_overshoot.is_some_and(|o| o <= overshoot),
                format!(
                    "{:.2} of best fixed, overshoot {}",
                    f.fraction_of_best_fixed,
                    fmt(f.thread_overshoot)
                ),
            ));
        }
        let p = get(plant.name, "p");
        checks.push(goals.check(
            (plant, best.noise()),
            Goal::Arx,
            format!(
                "{}: the ARX model's one-step prediction error is <= {arx} (the goal: 0.1, \
                 FAIR07 Figure 4-7)",
                plant.name
            ),
            p.arx_error.is_some_and(|e| e <= arx),
            format!(
                "P's model: {}; the plant's own noise at the best fixed size: {}",
                fmt(p.arx_error),
                fmt(best.noise())
            ),
        ));
        checks.push(goals.check(
            (plant, best.noise()),
            Goal::Step,
            format!(
                "{}: P follows the step within 3 periods with steady error <= 5% (settling \
                 judged on 3-period means)",
                plant.name
            ),
            p.settle_periods.is_some_and(|k| k <= 3) && p.steady_error.is_some_and(|e| e <= 0.05),
            format!(
                "{}, steady error {} (tracking error {})",
                p.settle_periods.map_or("never settled".into(), |k| format!(
                    "settled after {k} periods"
                )),
                fmt(p.steady_error),
                fmt(p.tracking_error)
            ),
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::Best;

    fn best(readings: &[f64]) -> Best {
        Best {
            threads: 12,
            swept: readings[0],
            readings: readings.to_vec(),
            noises: Vec::new(),
        }
    }

    /// The quick form enforces the goals only where its few periods decide them: the emulated
    /// plants' shares and model error; the full form every goal on the emulated plants, and on
    /// PostgreSQL when that plant held still.
    #[test]
    fn each_form_enforces_what_it_decides() {
        use super::Goal::{Arx, Share, Step};
        let (io, postgres) = (&super::PLANTS[0], &super::PLANTS[2]);
        let enforced = |quick, plant, noise, goal| {
            super::Goals { quick }
                .check((plant, noise), goal, String::new(), true, String::new())
                .enforced
        };
        assert!(enforced(true, io, Some(0.0), Share) && enforced(true, io, Some(0.0), Arx));
        assert!(!enforced(true, io, Some(0.0), Step));
        assert!(!enforced(true, postgres, Some(0.02), Share));
        assert!(enforced(false, io, None, Step) && enforced(false, io, None, Share));
        assert!(enforced(false, postgres, Some(0.023), Share));
        assert!(enforced(false, postgres, Some(0.023), Step));
        assert!(!enforced(false, postgres, Some(0.070), Share));
        assert!(!enforced(false, postgres, None, Arx));
    }

    /// The full form reads the best fixed pool before the first sizer and after each: a sizer's
    /// share is of the two readings on either side of it, not of a drift minutes away.
    #[test]
    fn each_sizer_is_compared_with_the_readings_beside_it() {
        let full = best(&[100.0, 110.0, 120.0, 130.0, 140.0, 150.0]);
        let beside: Vec<f64> = (0..5).map(|i| full.beside(i)).collect();
        assert_eq!(beside, [105.0, 115.0, 125.0, 135.0, 145.0]);
        let quick = best(&[100.0, 120.0]);
        assert!((0..5).all(|i| quick.beside(i) == 110.0));
    }
}
