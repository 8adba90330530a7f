//! Runs a [`LoadConfig`] on a current-thread tokio runtime: one thread, many connections.

mod client;
mod closed;
mod eager;
mod open;
mod partly_open;

use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::{Duration, Instant};

use seda_control::{AimdWindow, RetryBudget, SeededThrottle};

use crate::http::Limits;
use crate::record::{Recorder, Report};
use crate::{LoadConfig, LoadError, Model, Schedule};

use client::Gate;

/// State shared by the tasks of one run (single-threaded, hence `Rc`/`RefCell`).
pub(crate) struct Ctx {
    pub cfg: LoadConfig,
    pub schedule: Schedule,
    pub start: Instant,
    /// The end of the warm-up: requests intended from here on are recorded.
    pub measure_from: Instant,
    pub end: Instant,
    pub rec: RefCell<Recorder>,
    pub gate: Option<Gate>,
    /// The adaptive throttle and its generator, if the client throttles.
    pub throttle: Option<RefCell<SeededThrottle>>,
    /// The retry budget, if the client's retries have one.
    pub retry_budget: Option<RefCell<RetryBudget>>,
    pub limits: Limits,
    pub stopping: Cell<bool>,
}

impl Ctx {
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Whether a request intended at `t` is measured (not part of the warm-up).
    pub fn measured(&self, t: Instant) -> bool {
        t >= self.measure_from
    }
}

/// Runs the load described by `config` to its end and returns what was measured.
///
/// Builds its own current-thread runtime on the calling thread (pinned to `config.cpu` if
/// given), so call it from a plain thread, not from inside another runtime.
pub fn run(config: LoadConfig) -> Result<Report, LoadError> {
    config.validate()?;
    if let Some(cpu) = config.cpu {
        crate::affinity::pin_to_cpu(cpu)?;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadError::Io {
            context: "building the tokio runtime".into(),
            source: e,
        })?;
    let local = tokio::task::LocalSet::new();
    let report = local.block_on(&rt, run_local(config))?;
    // Dropping the set cancels the users still running and closes their connections.
    drop(local);
    Ok(report)
}

async fn run_local(cfg: LoadConfig) -> Result<Report, LoadError> {
    let schedule = cfg.effective_schedule()?;
    let rec = Recorder::new(cfg.workload.classes(), cfg.goodput_target)
        .keep_interval_histograms(cfg.keep_interval_histograms);
    let gate = cfg
        .client
        .aimd
        .clone()
        .map(|c| Gate::new(AimdWindow::new(c)));
    let seed = cfg.seed.rotate_left(17);
    let throttle = match cfg
        .client
        .throttle
        .clone()
        .map(|t| SeededThrottle::new(t, seed))
    {
        Some(Ok(t)) => Some(RefCell::new(t)),
        Some(Err(e)) => return Err(LoadError::BadConfig(format!("the throttle: {e}"))),
        None => None,
    };
    let retry_budget = match cfg.client.retry_budget.clone().map(RetryBudget::new) {
        Some(Ok(b)) => Some(RefCell::new(b)),
        Some(Err(e)) => return Err(LoadError::BadConfig(format!("the retry budget: {e}"))),
        None => None,
    };
    let limits = Limits {
        max_header_bytes: cfg.client.max_header_bytes,
        max_body_bytes: cfg.client.max_body_bytes,
    };
    let progress = cfg.progress && std::io::stderr().is_terminal();
    let start = Instant::now();
    let ctx = Rc::new(Ctx {
        measure_from: start + cfg.warmup,
        end: start + cfg.warmup + cfg.duration,
        cfg,
        schedule,
        start,
        rec: RefCell::new(rec),
        gate,
        throttle,
        retry_budget,
        limits,
        stopping: Cell::new(false),
    });
    let bar = progress.then(|| progress_bar(ctx.cfg.warmup + ctx.cfg.duration));
    tokio::task::spawn_local(ticker(ctx.clone(), bar.clone()));
    match ctx.cfg.model.clone() {
        Model::Closed(m) => {
            tokio::task::spawn_local(closed::controller(ctx.clone(), closed::Users::Closed(m)));
        }
        Model::Eager(m) => {
            tokio::task::spawn_local(closed::controller(ctx.clone(), closed::Users::Eager(m)));
        }
        Model::Open(m) => {
            tokio::task::spawn_local(open::pacer(ctx.clone(), m));
        }
        Model::PartlyOpen(m) => {
            tokio::task::spawn_local(partly_open::pacer(ctx.clone(), m));
        }
    }
    tokio::time::sleep_until(ctx.end.into()).await;
    ctx.stopping.set(true);
    let elapsed = ctx.measure_from.elapsed();
    if let Some(bar) = bar {
        // Leave the last line on the terminal.
        bar.abandon();
    }
    let model = ctx.cfg.describe();
    let classes = ctx.cfg.workload.classes();
    // For the last interval, which the report closes.
    ctx.rec.borrow_mut().aimd_window = ctx.gate.as_ref().map(Gate::window);
    let rec = ctx
        .rec
        .replace(Recorder::new(classes, ctx.cfg.goodput_target));
    Ok(rec.report(model, elapsed))
}

/// A progress bar over the whole run (warm-up included), redrawn by the ticker. Only on a
/// terminal: the caller passes none otherwise, so CI logs stay quiet.
fn progress_bar(total: std::time::Duration) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total.as_millis().try_into().unwrap_or(u64::MAX)),
        indicatif::ProgressDrawTarget::stderr_with_hz(4),
    );
    let style = indicatif::ProgressStyle::with_template("{bar:20} {elapsed:>4}/{duration:4} {msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// Closes an interval every `interval` and shows the progress line.
async fn ticker(ctx: Rc<Ctx>, bar: Option<indicatif::ProgressBar>) {
    let interval = ctx.cfg.interval;
    let mut k: u32 = 1;
    loop {
        let Some(at) = interval.checked_mul(k).map(|d| ctx.measure_from + d) else {
            return;
        };
        if at >= ctx.end {
            return;
        }
        tokio::time::sleep_until(at.into()).await;
        let mut rec = ctx.rec.borrow_mut();
        rec.aimd_window = ctx.gate.as_ref().map(Gate::window);
        let line = rec.close_interval(at - ctx.measure_from).progress_line();
        drop(rec);
        if let Some(bar) = &bar {
            bar.set_position(
                ctx.start
                    .elapsed()
                    .as_millis()
                    .try_into()
                    .unwrap_or(u64::MAX),
            );
            bar.set_message(line);
        }
        k += 1;
    }
}

/// The work, in units of "arrivals at rate 1", until the next arrival: 1 for constant arrivals,
/// an exponential draw with mean 1 for Poisson arrivals.
fn unit_gap(arrivals: crate::Arrivals, rng: &mut rand::rngs::SmallRng) -> f64 {
    use rand::Rng;
    match arrivals {
        crate::Arrivals::Constant => 1.0,
        crate::Arrivals::Poisson => -(1.0 - rng.random::<f64>()).ln(),
    }
}

/// Drives an arrival process following the schedule: calls `arrive(intended_time)` for each
/// arrival until the end of the run. Shared by the open and partly-open models.
///
/// The rate is taken as constant between the schedule's points, and over each millisecond of a
/// ramp. The time to the next arrival is a unit gap (1, or an exponential draw for Poisson
/// arrivals) divided by the rate, consumed segment by segment: a gap begun at 0.1/s is mostly
/// left when a step to 1000/s comes, and finishes within a millisecond at the new rate (for
/// Poisson arrivals this is the exact time-change construction of a non-homogeneous process).
pub(crate) async fn arrivals(
    ctx: &Ctx,
    kind: crate::Arrivals,
    seed: u64,
    mut arrive: impl FnMut(Instant),
) {
    use rand::SeedableRng;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    // Arrivals have been generated up to `cursor`; `debt` of the next unit gap is left.
    let mut cursor = ctx.start;
    let mut debt = unit_gap(kind, &mut rng);
    let mut without_yield = 0u32;
    let mut last_wake = ctx.start;
    let timer = if ctx.cfg.precise_pacing {
        crate::timer::PreciseTimer::new().ok()
    } else {
        None
    };
    loop {
        if cursor >= ctx.end || ctx.stopping.get() {
            return;
        }
        let offset = cursor - ctx.start;
        let rate = ctx.schedule.level_at(offset);
        ctx.rec.borrow_mut().level = rate;
        let boundary = if ctx.schedule.ramping_at(offset) {
            Some(offset + Duration::from_millis(1))
        } else {
            ctx.schedule.next_point_after(offset)
        }
        .map(|b| ctx.start + b);
        let gap_s = if rate > 0.0 {
            debt.max(0.0) / rate
        } else {
            f64::INFINITY
        };
        let reaches = |b: Instant| gap_s >= (b - cursor).as_secs_f64();
        match boundary {
            Some(b) if reaches(b) => {
                debt -= (b - cursor).as_secs_f64() * rate;
                cursor = b;
                continue;
            }
            None if !gap_s.is_finite() => return,
            _ => {}
        }
        // Clamped: rounding can leave a debt a hair below zero.
        let next = cursor + Duration::from_secs_f64(gap_s.clamp(0.0, 1e9));
        if next >= ctx.end {
            return;
        }
        let now = Instant::now();
        if next > now {
            without_yield = 0;
            // Wake at most once per quantum: at high rates a wake-up per arrival would cost
            // more than the requests; an arrival is then sent at most one quantum late.
            let wake = next.max(last_wake + PACING_QUANTUM);
            match &timer {
                Some(t) if t.sleep_until(wake).await.is_ok() => {}
                _ => tokio::time::sleep_until(wake.into()).await,
            }
            last_wake = Instant::now();
        } else {
            // Behind schedule: keep up, but let the connections run now and then.
            without_yield += 1;
            if without_yield >= 64 {
                without_yield = 0;
                tokio::task::yield_now().await;
            }
        }
        arrive(next);
        cursor = next;
        debt = unit_gap(kind, &mut rng);
    }
}

/// The shortest time between two wake-ups of a pacer.
const PACING_QUANTUM: Duration = Duration::from_micros(100);

/// A seed for entity `i` derived from the run's seed.
pub(crate) fn seed_for(seed: u64, i: u64) -> u64 {
    seed ^ i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
