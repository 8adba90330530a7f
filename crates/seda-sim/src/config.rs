//! What to simulate: a graph of stages (each with c servers, a FIFO queue and an admission
//! controller; stage 0 receives the sources' requests) fed by sources of load.

use seda_control::{AdmissionController, AimdWindowConfig};

use crate::Dist;
use crate::levers::Levers;

/// How a source generates requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Population {
    /// `users` closed-loop users, active in `[start_s, end_s)`: each sends, waits for the reply
    /// (or its timeout), thinks, and sends again. A refused user waits `reject_wait` (WC03's
    /// e-mail users wait 5 s) or, if `None`, a think time.
    Closed {
        /// Number of users.
        users: u32,
        /// Think time between a reply and the next request.
        think: Dist,
        /// Wait after a rejection; `None` for a think time.
        reject_wait: Option<Dist>,
        /// When the users arrive.
        start_s: f64,
        /// When they leave (a user leaves at its first send after this).
        end_s: f64,
    },
    /// Open arrivals at `rate_per_s` in `[start_s, end_s)`: Poisson, or evenly spaced.
    Open {
        /// Mean arrival rate.
        rate_per_s: f64,
        /// Poisson (exponential gaps) or constant gaps.
        poisson: bool,
        /// First arrival not before this.
        start_s: f64,
        /// No arrival after this.
        end_s: f64,
    },
    /// Partly-open: sessions arrive Poisson at `session_rate_per_s`; after each reply a session
    /// stays with probability `stay`, thinking `think` before its next request; a refused or
    /// timed-out session leaves.
    PartlyOpen {
        /// Session arrival rate.
        session_rate_per_s: f64,
        /// Probability of another request after a reply.
        stay: f64,
        /// Think time within a session.
        think: Dist,
        /// First session not before this.
        start_s: f64,
        /// No session after this.
        end_s: f64,
    },
    /// The thesis's partly-open clients (FAIR07 Section 5.2): `clients` clients, active in
    /// `[start_s, end_s)`; each sends its next request when its reply arrives (after `think`)
    /// or when `patience` has passed since its last send without a reply, whichever is first, so
    /// a client has more than one request outstanding, and the offered load grows, when the
    /// server falls behind. A refused request counts as a reply.
    Eager {
        /// Number of clients.
        clients: u32,
        /// The expected time: past it without a reply the client sends again.
        patience: Dist,
        /// Think time after a reply.
        think: Dist,
        /// When the clients arrive.
        start_s: f64,
        /// When they leave.
        end_s: f64,
    },
}

/// A source of requests.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    /// How requests are generated.
    pub population: Population,
    /// The requests' class (0 is the lowest).
    pub class: u8,
    /// The client gives up after this long (the request's deadline); `None` waits forever.
    pub timeout_s: Option<f64>,
    /// An SSM-style AIMD window in the client stub (SSM04): requests beyond it are refused at the
    /// client without being sent.
    pub window: Option<AimdWindowConfig>,
}

impl SourceConfig {
    /// A source of class 0 with no timeout and no window.
    pub fn new(population: Population) -> Self {
        SourceConfig {
            population,
            class: 0,
            timeout_s: None,
            window: None,
        }
    }
}

/// The simulated stage.
#[derive(Debug, Clone, PartialEq)]
pub struct StageConfig {
    /// Servers (worker threads), each serving one request at a time.
    pub servers: u32,
    /// Service time of one request. A request whose client has given up still costs its full
    /// service time if served (SSM04's wasted work).
    pub service: Dist,
    /// Largest queue length; `None` for unbounded.
    pub queue_cap: Option<usize>,
    /// Drop at dequeue requests whose deadline (client timeout) has passed (SSM04: "service only
    /// requests that have not timed out").
    pub drop_expired: bool,
}

/// A further stage of the graph, with its admission controller and its routes.
pub struct StageNode {
    /// The stage.
    pub stage: StageConfig,
    /// Its admission controller; `None` admits everything.
    pub admission: Option<Box<dyn AdmissionController>>,
    /// After service here, go to stage `i` with probability `p` for each `(p, i)`; the rest of
    /// the probability leaves the system. Stage 0 is `SimConfig::stage`, stage `k` is
    /// `more_stages[k - 1]`.
    pub next: Vec<(f64, usize)>,
}

impl std::fmt::Debug for StageNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageNode")
            .field("stage", &self.stage)
            .field("admission", &self.admission.as_ref().map(|a| a.name()))
            .field("next", &self.next)
            .finish()
    }
}

/// A whole run.
pub struct SimConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Virtual time simulated.
    pub duration_s: f64,
    /// Whole-run totals leave out completions and arrivals before this.
    pub warmup_s: f64,
    /// Width of the metric buckets.
    pub bucket_s: f64,
    /// Period of the controller's `tick`.
    pub tick_s: f64,
    /// A completion within this counts as goodput.
    pub target_s: f64,
    /// The stage.
    pub stage: StageConfig,
    /// The sources.
    pub sources: Vec<SourceConfig>,
    /// The stage's admission controller; `None` admits everything.
    pub admission: Option<Box<dyn AdmissionController>>,
    /// Routes after service at stage 0 (see [`StageNode::next`]); empty: requests leave.
    pub next: Vec<(f64, usize)>,
    /// Further stages: sources send to stage 0, routes carry requests on. A request completes
    /// when it leaves the graph; a rejection or drop at any stage ends it.
    pub more_stages: Vec<StageNode>,
    /// Stage 0's controller follows every request it admitted until it leaves the graph: it
    /// hears the end-to-end response time at the exit (or a drop when a later stage refuses the
    /// request), not its own stage's completions. A single front-door controller, as in WC03
    /// Figure 11's single-stage admission control.
    pub entry_control: bool,
    /// Share of each service time that a quality knob scales (WC03 Section 3.4). When the
    /// admission controller reports a `quality` in its state (as `degradation` does), service
    /// times become `s x (1 - degradable + degradable x quality)`, updated every tick.
    pub degradable: f64,
    /// Stage 0's resource and termination levers (pool sizing, an emulated plant, a terminator).
    pub levers: Levers,
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("seed", &self.seed)
            .field("duration_s", &self.duration_s)
            .field("stage", &self.stage)
            .field("sources", &self.sources)
            .field("admission", &self.admission.as_ref().map(|a| a.name()))
            .field("levers", &self.levers)
            .finish_non_exhaustive()
    }
}

impl SimConfig {
    /// A run of `duration_s` with the given stage and sources: seed 1, no warm-up, 0.1 s buckets,
    /// 10 ms ticks, goodput target 1 s, no admission control.
    pub fn new(duration_s: f64, stage: StageConfig, sources: Vec<SourceConfig>) -> Self {
        SimConfig {
            seed: 1,
            duration_s,
            warmup_s: 0.0,
            bucket_s: 0.1,
            tick_s: 0.01,
            target_s: 1.0,
            stage,
            sources,
            admission: None,
            next: Vec::new(),
            more_stages: Vec::new(),
            entry_control: false,
            degradable: 1.0,
            levers: Levers::new(),
        }
    }

    /// Checks the configuration; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        pos("duration_s", self.duration_s)?;
        pos("bucket_s", self.bucket_s)?;
        pos("tick_s", self.tick_s)?;
        pos("target_s", self.target_s)?;
        if !(self.warmup_s.is_finite() && self.warmup_s >= 0.0) {
            return Err(format!("warmup_s must be >= 0, got {}", self.warmup_s));
        }
        if self.duration_s / self.bucket_s > 50_000_000.0 {
            return Err("too many metric buckets: raise bucket_s".into());
        }
        if !(0.0..=1.0).contains(&self.degradable) {
            return Err(format!(
                "degradable must be in [0, 1], got {}",
                self.degradable
            ));
        }
        let n = 1 + self.more_stages.len();
        if n > 60_000 {
            return Err(format!("at most 60000 stages, got {n}"));
        }
        self.validate_stages(n)?;
        let users: u64 = self
            .sources
            .iter()
            .map(|s| match s.population {
                Population::Closed { users, .. } => u64::from(users),
                Population::Eager { clients, .. } => u64::from(clients),
                _ => 0,
            })
            .sum();
        if users > 100_000_000 {
            return Err(format!(
                "at most 100000000 closed users in all, got {users}"
            ));
        }
        self.levers.validate()?;
        if self.sources.len() > u16::MAX as usize {
            return Err("too many sources".into());
        }
        for s in &self.sources {
            validate_source(s)?;
        }
        Ok(())
    }

    /// Each stage's servers, service time and routes (to stages that exist, adding up to at
    /// most 1, never back to the entry under `entry_control`).
    fn validate_stages(&self, n: usize) -> Result<(), String> {
        let all = std::iter::once((&self.stage, &self.next))
            .chain(self.more_stages.iter().map(|m| (&m.stage, &m.next)));
        for (i, (stage, next)) in all.enumerate() {
            if stage.servers == 0 || stage.servers > 10_000_000 {
                return Err(format!(
                    "stage {i}: servers must be in 1..=10000000, got {}",
                    stage.servers
                ));
            }
            stage
                .service
                .validate()
                .map_err(|e| format!("stage {i}: {e}"))?;
            if next
                .iter()
                .any(|&(p, to)| !(p.is_finite() && p >= 0.0) || to >= n)
            {
                return Err(format!(
                    "stage {i}: routes need probabilities >= 0 and stages < {n}"
                ));
            }
            if self.entry_control && next.iter().any(|&(_, to)| to == 0) {
                return Err(format!(
                    "stage {i}: with entry_control no route may lead back to stage 0"
                ));
            }
            if next.iter().map(|(p, _)| p).sum::<f64>() > 1.0 + 1e-9 {
                return Err(format!(
                    "stage {i}: route probabilities add up to more than 1"
                ));
            }
        }
        Ok(())
    }
}

/// `v` is a positive finite number, or a message naming `name`.
fn pos(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be > 0, got {v}"))
    }
}

/// One source's timeout, think times and window (`start_s <= end_s`), by population.
fn validate_source(s: &SourceConfig) -> Result<(), String> {
    if let Some(t) = s.timeout_s {
        pos("timeout_s", t)?;
    }
    match &s.population {
        Population::Closed {
            think,
            reject_wait,
            start_s,
            end_s,
            ..
        } => {
            think.validate()?;
            if let Some(w) = reject_wait {
                w.validate()?;
            }
            if !(start_s.is_finite() && end_s >= start_s) {
                return Err("a closed source needs start_s <= end_s".into());
            }
        }
        Population::Open {
            rate_per_s,
            start_s,
            end_s,
            ..
        } => {
            pos("rate_per_s", *rate_per_s)?;
            if !(start_s.is_finite() && end_s >= start_s) {
                return Err("an open source needs start_s <= end_s".into());
            }
        }
        Population::PartlyOpen {
            session_rate_per_s,
            stay,
            think,
            start_s,
            end_s,
        } => {
            pos("session_rate_per_s", *session_rate_per_s)?;
            think.validate()?;
            if !(0.0..=1.0).contains(stay) {
                return Err(format!("stay must be in [0, 1], got {stay}"));
            }
            if !(start_s.is_finite() && end_s >= start_s) {
                return Err("a partly-open source needs start_s <= end_s".into());
            }
        }
        Population::Eager {
            patience,
            think,
            start_s,
            end_s,
            ..
        } => {
            think.validate()?;
            patience.validate()?;
            if patience.mean_s() <= 0.0 {
                return Err("eager clients need a patience > 0".into());
            }
            if !(start_s.is_finite() && end_s >= start_s) {
                return Err("an eager source needs start_s <= end_s".into());
            }
        }
    }
    Ok(())
}
