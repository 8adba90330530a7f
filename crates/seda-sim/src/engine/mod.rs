//! The event loop.

mod clients;
mod event;
mod lever;
mod stage;

use std::time::{Duration, Instant};

use seda_control::AimdWindow;

use crate::config::{Population, SimConfig};
use crate::metrics::Metrics;
use crate::rng::Rng;
use crate::{SimResult, secs_to_ns};
use event::{EventQueue, Kind};
use stage::StageState;

pub(crate) const NONE: u32 = u32::MAX;

/// A request in the system.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Req {
    pub born: u64,
    pub enq: u64,
    pub deadline: u64,
    pub user: u32,
    pub slot: u32,
    pub source: u16,
    pub class: u8,
    /// Stage 0's controller admitted it and follows it to the exit (`SimConfig::entry_control`).
    pub entry_held: bool,
    /// An eager client's request number (to tell its latest request from older ones).
    pub seq: u32,
}

impl Req {
    pub const EMPTY: Req = Req {
        born: 0,
        enq: 0,
        deadline: 0,
        user: NONE,
        slot: NONE,
        source: 0,
        class: 0,
        entry_held: false,
        seq: 0,
    };
}

/// Client-side record of a request with a timeout.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    pub generation: u32,
    pub live: bool,
    pub abandoned: bool,
    pub user: u32,
    pub source: u16,
}

pub(crate) struct Source {
    pub population: Population,
    pub class: u8,
    pub timeout_ns: Option<u64>,
    pub window: Option<AimdWindow>,
    pub start_ns: u64,
    pub end_ns: u64,
}

pub(crate) struct Sim {
    pub now: u64,
    pub end: u64,
    pub target_s: f64,
    pub events: EventQueue,
    pub metrics: Metrics,
    pub stages: Vec<StageState>,
    pub entry_control: bool,
    pub sources: Vec<Source>,
    pub user_source: Vec<u16>,
    pub free_users: Vec<u32>,
    pub slots: Vec<Slot>,
    pub free_slots: Vec<u32>,
    pub rng_service: Rng,
    pub rng_client: Rng,
    /// Per user of an eager source: its latest request number and whether it awaits the reply.
    pub eager: Vec<(u32, bool)>,
    pub levers: lever::LeverState,
}

#[inline]
pub(crate) fn dur(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// A configured source as the engine runs it (times in nanoseconds).
fn source_of(s: crate::config::SourceConfig) -> Source {
    let (start_s, end_s) = match &s.population {
        Population::Closed { start_s, end_s, .. }
        | Population::Open { start_s, end_s, .. }
        | Population::PartlyOpen { start_s, end_s, .. }
        | Population::Eager { start_s, end_s, .. } => (*start_s, *end_s),
    };
    Source {
        population: s.population,
        class: s.class,
        timeout_ns: s.timeout_s.map(secs_to_ns),
        window: s.window.map(AimdWindow::new),
        start_ns: secs_to_ns(start_s.max(0.0)),
        end_ns: secs_to_ns(end_s.max(0.0)),
    }
}

/// One controller tick at `t`: every stage's admission controller ticks; a `quality` in its
/// state scales the degradable share of the stage's service time; the entry stage's state is
/// recorded in the metrics.
fn tick_controllers(sim: &mut Sim, t: u64, degradable: f64) {
    for (i, st) in sim.stages.iter_mut().enumerate() {
        let Some(a) = st.admission.as_mut() else {
            continue;
        };
        a.tick(dur(t));
        let state = a.state();
        if let Some(&(_, q)) = state.iter().find(|(k, _)| *k == "quality") {
            st.service_scale = 1.0 - degradable + degradable * q.clamp(0.0, 1.0);
        }
        if i == 0 {
            sim.metrics.at(t).0.state = state;
        }
    }
}

pub(crate) fn run(cfg: SimConfig) -> Result<SimResult, String> {
    cfg.validate()?;
    let wall = Instant::now();
    let mut rng = Rng::new(cfg.seed);
    let rng_service = rng.fork();
    let rng_client = rng.fork();
    let users: usize = cfg
        .sources
        .iter()
        .map(|s| match s.population {
            Population::Closed { users, .. } => users as usize,
            Population::Eager { clients, .. } => clients as usize,
            _ => 0,
        })
        .sum();
    if users >= NONE as usize {
        return Err("too many users".into());
    }
    let name = cfg.admission.as_ref().map_or("none", |a| a.name());
    let mut stages = vec![StageState::new(cfg.stage, cfg.admission, &cfg.next)];
    stages[0].contention = cfg.levers.contention;
    for node in cfg.more_stages {
        stages.push(StageState::new(node.stage, node.admission, &node.next));
    }
    let controlled = stages.iter().any(|s| s.admission.is_some());
    let mut sim = Sim {
        now: 0,
        end: secs_to_ns(cfg.duration_s),
        target_s: cfg.target_s,
        events: EventQueue::with_capacity(users + 1024),
        metrics: Metrics::new(cfg.bucket_s, cfg.warmup_s),
        stages,
        entry_control: cfg.entry_control,
        sources: Vec::with_capacity(cfg.sources.len()),
        user_source: Vec::with_capacity(users),
        free_users: Vec::new(),
        slots: Vec::new(),
        free_slots: Vec::new(),
        rng_service,
        rng_client,
        eager: Vec::new(),
        levers: lever::LeverState::new(cfg.levers),
    };
    let degradable = cfg.degradable;
    for (i, s) in cfg.sources.into_iter().enumerate() {
        sim.sources.push(source_of(s));
        sim.start_source(i as u16);
    }
    let tick_ns = secs_to_ns(cfg.tick_s).max(1);
    if controlled {
        sim.events.push(0, Kind::Tick, 0, 0);
    }
    if let Some(p) = sim.levers.period_ns {
        sim.events.push(p, Kind::Lever, 0, 0);
    }
    let mut events: u64 = 0;
    while let Some(ev) = sim.events.pop() {
        let t = ev.time();
        if t > sim.end {
            break;
        }
        sim.now = t;
        events += 1;
        match ev.kind {
            Kind::Arrival => sim.on_arrival(ev.a as u16),
            Kind::Session => sim.on_session(ev.a as u16),
            Kind::Send => sim.on_send(ev.a, ev.b as u16),
            Kind::Done => sim.on_done(ev.b as u16, ev.a, ev.c),
            Kind::Cut => sim.on_cut(ev.b as u16, ev.a, ev.c),
            Kind::Patience => sim.on_patience(ev.a, ev.b as u16, ev.c),
            Kind::Lever => {
                sim.on_lever();
                if let Some(p) = sim.levers.period_ns {
                    sim.events.push(t + p, Kind::Lever, 0, 0);
                }
            }
            Kind::Timeout => sim.on_timeout(ev.a, ev.b),
            Kind::Tick => {
                tick_controllers(&mut sim, t, degradable);
                sim.events.push(t + tick_ns, Kind::Tick, 0, 0);
            }
        }
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let stages = sim.stages.iter().map(|s| s.stats.clone()).collect();
    let periods = std::mem::take(&mut sim.levers.periods);
    let arx_error = sim
        .levers
        .pool
        .as_ref()
        .and_then(|p| p.sizer.report().arx_error);
    Ok(SimResult {
        periods,
        arx_error,
        controller: name,
        metrics: sim.metrics,
        events,
        wall_s,
        stages,
    })
}
