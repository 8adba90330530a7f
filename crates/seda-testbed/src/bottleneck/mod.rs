//! The CPU-bound bottleneck service of WC03 Section 4.5 (Figures 12 and 13): one stage with a
//! quality knob.
//!
//! ```text
//! front end --HttpRequest--> bottleneck (queued; reads quality x size x work bytes of a data
//!                                        file, checksums them quality x rounds times, plus a
//!                                        fixed base; answers an HTML page)
//! ```
//!
//! The stage reads its quality from its admission controller's state (`quality`, published by
//! the `degradation` controller of seda-control); without one it works at full quality. Which
//! controller runs is a [`Control`]: none, degradation alone (WC03 Figure 12), or degradation
//! that re-enables admission control at the lowest quality (Figure 13). A `[stages.bottleneck]`
//! section of the configuration file overrides it, as for any stage.
//!
//! `GET /hold?ms=N` is the synthetic sized request of the early-termination experiments
//! ([`hold`]): it holds a worker for N ms (`&cores=C`: N ms of work on C emulated cores shared
//! by the holds running at once); a `[stages.bottleneck.terminate]` section makes the stage
//! terminable.
//!
//! `GET /` or `GET /page` answers a page; `?size=F` (F in [`SIZE_RANGE`]) fixes the request's
//! share of the mean amount of data, otherwise it is drawn from a seeded sequence, uniform in
//! `[0.5, 1.5)`. The page and the [`QUALITY_HEADER`] header state the quality used.
//!
//! # Plants where threads matter
//!
//! On a two-core machine a CPU-bound stage is saturated by two threads, so pool sizers have
//! nothing to find. Two settings put an [`EmulatedBackend`] in front of the page (a sleep, not
//! real I/O; FAIR07 Section 5.1's stages block on I/O the same way):
//! - `backend_ms`: each request waits this long for the backend, so throughput grows with
//!   threads until the CPU work saturates the core;
//! - `backend_channels`: the backend serves that many requests at once, the rest wait, so
//!   throughput stops growing at that many threads;
//! - `backend_knee`: the backend is a bounded resource that thrashes past this many requests
//!   at once: the wait is `backend_ms x (active / knee)^2` above the knee, so throughput
//!   (`n / wait`) peaks at `knee` threads and falls beyond: an interior optimum;
//! - `backend_spread`: each wait is drawn uniformly within this share of it on either side
//!   (the same mean), as a real backend's calls vary.
//!
//! The defaults ([`BottleneckConfig::default`]) cost about 11 ms per request at full quality,
//! half of it in the quality-independent base (as `seda sim degrade`, where half of each
//! service time scales with the knob), so degrading can at most about double the capacity.
//! Measured on the 2-core lab machine while other builds ran: `taskset -c 0 seda serve
//! bottleneck` and `seda load --cpu 1 -c 1 -d 5s http://127.0.0.1:PORT/` gave 83 pages/s, and
//! the stage's `service` time in `/_seda/stats` a mean of 11.1 ms (p50 10.4 ms).

mod backend;
pub mod hold;
mod page;
mod server;
mod stats;
mod work;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};

pub use backend::EmulatedBackend;
pub use page::{QUALITY_HEADER, SIZE_RANGE};
use seda_http::HttpRequest;
pub use server::{BottleneckServeConfig, BottleneckServer};
pub use stats::{BottleneckSection, BottleneckStats};
use work::DataFile;
pub use work::Plan;

/// The region of the file the base work checksums over and over (it is `base_kb` of
/// checksumming, not of reading).
const BASE_CHUNK: usize = 64 * 1024;

/// Name of the service's stage (the key of `[stages.bottleneck]` in a configuration file).
pub const STAGE: &str = "bottleneck";

/// The service's settings (`[bottleneck]` in a configuration file).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BottleneckConfig {
    /// Mean KiB read from the data file per request at quality 1 (each request reads
    /// `quality x size x work_kb`, `size` in [0.5, 1.5)).
    pub work_kb: f64,
    /// Checksum passes over the data read, at quality 1 (`quality x rounds`, at least 1).
    pub rounds: u32,
    /// KiB checksummed per request whatever the quality (passes over the file's first 64 KiB):
    /// the page's fixed cost, which bounds what degrading can gain.
    pub base_kb: f64,
    /// Seed of the data file's content and of the requests' sizes.
    pub seed: u64,
    /// Where to create the data file (default: a fresh file in the temporary directory);
    /// it is removed when the service stops.
    pub file: Option<PathBuf>,
    /// Worker threads of the stage, fixed (default 1: one CPU-bound stage on one core);
    /// `[stages.bottleneck]` in the runtime's settings may give it a sizer instead.
    pub threads: usize,
    /// An emulated backend's wait per request, ms (0: none; see the module docs).
    pub backend_ms: f64,
    /// Requests the emulated backend serves at once before it thrashes (0: no limit).
    pub backend_knee: usize,
    /// Requests the emulated backend serves at once; the rest wait for one (0: no limit).
    pub backend_channels: usize,
    /// Share of the emulated backend's wait each call's wait is drawn within, on either side
    /// (0: every call alike; at most 1).
    pub backend_spread: f64,
    /// Cores of an emulated processor the page holds after its real work (0: none, the page
    /// costs what its real work costs this machine): `base_ms + work_ms x quality x size` of
    /// it, so the service's capacity at full quality, `cores / (base_ms + work_ms)` pages a
    /// second, is stated rather than measured ([`seda::EmulatedProcessor`]). The lab's
    /// `degrade` runs so, with little real work.
    pub cores: f64,
    /// The page's fixed cost on the emulated processor, ms, whatever the quality.
    pub base_ms: f64,
    /// The page's cost on the emulated processor at quality 1 and size 1 beyond the base, ms.
    pub work_ms: f64,
}

impl Default for BottleneckConfig {
    /// About 11 ms of CPU per request at quality 1 on the lab machine, half of it the base (see
    /// the module's documentation for the measurement).
    fn default() -> Self {
        BottleneckConfig {
            work_kb: 256.0,
            rounds: 16,
            base_kb: 4096.0,
            seed: 1,
            file: None,
            threads: 1,
            backend_ms: 0.0,
            backend_knee: 0,
            backend_channels: 0,
            backend_spread: 0.0,
            cores: 0.0,
            base_ms: 5.5,
            work_ms: 5.5,
        }
    }
}

impl BottleneckConfig {
    /// Checks the settings; the message names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        let kb_max = 1024.0 * 1024.0; // 1 GiB of reading per request is surely a typo
        if !(self.work_kb.is_finite() && self.work_kb > 0.0 && self.work_kb <= kb_max) {
            return Err(format!(
                "work_kb must be in (0, {kb_max}], got {}",
                self.work_kb
            ));
        }
        if !(self.base_kb.is_finite() && self.base_kb >= 0.0 && self.base_kb <= kb_max) {
            return Err(format!(
                "base_kb must be in [0, {kb_max}], got {}",
                self.base_kb
            ));
        }
        if self.rounds == 0 || self.rounds > 100_000 {
            return Err(format!("rounds must be in 1..=100000, got {}", self.rounds));
        }
        if self.threads == 0 {
            return Err("threads must be at least 1".into());
        }
        if !(self.backend_ms.is_finite() && (0.0..=60_000.0).contains(&self.backend_ms)) {
            return Err(format!(
                "backend_ms must be in [0, 60000], got {}",
                self.backend_ms
            ));
        }
        let max_cores = seda::processor::MAX_CORES;
        if !(self.cores.is_finite()
            && (self.cores == 0.0 || (0.01..=max_cores).contains(&self.cores)))
        {
            return Err(format!(
                "cores must be 0 (no emulated processor) or in [0.01, {max_cores}], got {}",
                self.cores
            ));
        }
        for (name, ms) in [("base_ms", self.base_ms), ("work_ms", self.work_ms)] {
            if !(ms.is_finite() && (0.0..=60_000.0).contains(&ms)) {
                return Err(format!("{name} must be in [0, 60000], got {ms}"));
            }
        }
        if !(self.backend_spread.is_finite() && (0.0..=1.0).contains(&self.backend_spread)) {
            return Err(format!(
                "backend_spread must be in [0, 1], got {}",
                self.backend_spread
            ));
        }
        Ok(())
    }

    fn work_bytes(&self) -> usize {
        (self.work_kb * 1024.0).round() as usize
    }

    fn base_bytes(&self) -> usize {
        (self.base_kb * 1024.0).round() as usize
    }
}

/// Which overload control the stage runs (`seda serve bottleneck --control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Nothing: every request is admitted (up to the stage's queue threshold) at quality 1.
    None,
    /// Degradation alone (WC03 Figure 12): quality falls over the target, nothing is refused.
    Degrade,
    /// Degradation that re-enables admission control when the quality is at its lowest and
    /// the target is still missed (WC03 Figure 13).
    DegradeAdmission,
}

impl Control {
    /// The names `--control` accepts, in order.
    pub const NAMES: [&'static str; 3] = ["none", "degrade", "degrade+admission"];

    /// The control called `name` (one of [`NAMES`](Self::NAMES)).
    pub fn from_name(name: &str) -> Option<Control> {
        match name {
            "none" => Some(Control::None),
            "degrade" => Some(Control::Degrade),
            "degrade+admission" => Some(Control::DegradeAdmission),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Control::None => "none",
            Control::Degrade => "degrade",
            Control::DegradeAdmission => "degrade+admission",
        }
    }

    /// The stage's admission controller for a p90 response-time `target`: seda-control's
    /// `degradation` kind with Sandstorm's defaults (halve the quality over target, add 0.01
    /// under it, lowest 0.01), or none.
    pub fn admission(self, target: Duration) -> Option<seda::AdmissionConfig> {
        let reenable = match self {
            Control::None => return None,
            Control::Degrade => 0.0,
            Control::DegradeAdmission => 1.0,
        };
        let params = BTreeMap::from([
            ("target_s".to_string(), target.as_secs_f64()),
            ("reenable_admission".to_string(), reenable),
        ]);
        Some(seda::AdmissionConfig {
            kind: seda_control::catalogue::DEGRADATION.into(),
            params,
        })
    }
}

/// The stage's shared state: the data file, the settings, counters.
#[derive(Debug)]
struct Service {
    file: DataFile,
    config: BottleneckConfig,
    requests: AtomicU64,
    pages: AtomicU64,
    bytes_read: AtomicU64,
    /// Sum of the qualities served, in millionths.
    quality_micros: AtomicU64,
    /// CPU time the pages' computations took (the page's own work, without the front end's
    /// or the runtime's; its stated cost with an emulated processor), in nanoseconds.
    compute_nanos: AtomicU64,
    /// The emulated backend in front of the page, if any.
    backend: EmulatedBackend,
    /// Holds on emulated cores running now (`/hold?...&cores=C`).
    holding: std::sync::atomic::AtomicUsize,
    /// The emulated processor a page holds for its cost ([`BottleneckConfig::cores`]).
    processor: Option<seda::EmulatedProcessor>,
}

impl Service {
    fn handle(&self, req: HttpRequest, quality: f64) {
        let (meta, head, _body, reply) = req.into_parts();
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        if head.method != Method::GET && head.method != Method::HEAD {
            reply.send(page::error(
                StatusCode::METHOD_NOT_ALLOWED,
                "use GET / or GET /page",
            ));
            return;
        }
        if head.uri.path() == "/hold" {
            match hold::parse(head.uri.query()) {
                Err(e) => reply.send(page::error(StatusCode::BAD_REQUEST, &e)),
                // Cut or abandoned: dropped unanswered, the front end says why.
                Ok(h) => hold::hold(&meta, h, &self.holding).is_some_and(|r| reply.send(r)),
            };
            return;
        }
        if !matches!(head.uri.path(), "/" | "/page") {
            reply.send(page::error(
                StatusCode::NOT_FOUND,
                "the pages are / and /page",
            ));
            return;
        }
        let query = match page::parse_query(head.uri.query()) {
            Ok(q) => q,
            Err(e) => {
                reply.send(page::error(StatusCode::BAD_REQUEST, &e));
                return;
            }
        };
        self.backend.call();
        let (drawn, offset) = work::draw(self.config.seed, n, self.file.len());
        let size = query.size.unwrap_or(drawn);
        let plan = work::plan(
            self.config.work_bytes(),
            self.config.rounds,
            quality,
            size,
            offset,
        );
        let cpu = seda::thread_cpu_time();
        let computed = self.compute(quality, size, plan);
        let mut cpu = seda::thread_cpu_time().saturating_sub(cpu);
        if let (Some(p), Ok(c)) = (&self.processor, &computed) {
            // The page's stated cost on the emulated processor, its real work done: what the
            // page cost, as the counters report it.
            let ms = self.config.base_ms + self.config.work_ms * c.quality * size;
            cpu = p.run(Duration::from_secs_f64(ms / 1e3), || false);
        }
        match computed {
            Ok(c) => {
                self.compute_nanos.fetch_add(
                    u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                self.pages.fetch_add(1, Ordering::Relaxed);
                self.bytes_read.fetch_add(
                    (plan.bytes + self.config.base_bytes()) as u64,
                    Ordering::Relaxed,
                );
                self.quality_micros
                    .fetch_add((c.quality * 1e6).round() as u64, Ordering::Relaxed);
                reply.send(page::page(&c));
            }
            Err(e) => {
                reply.send(page::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!(
                        "cannot read the data file {}: {e}",
                        self.file.path().display()
                    ),
                ));
            }
        }
    }

    fn compute(&self, quality: f64, size: f64, plan: Plan) -> std::io::Result<page::Computed> {
        thread_local! {
            // One buffer per worker, reused: a fresh allocation of this size would cost page
            // faults that have nothing to do with the work being measured.
            static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        BUF.with_borrow_mut(|buf| {
            let base_bytes = self.config.base_bytes();
            buf.resize(plan.bytes.max(BASE_CHUNK.min(base_bytes)), 0);
            // The base: the same region every time, its cost independent of the quality.
            let chunk = &mut buf[..BASE_CHUNK.min(base_bytes)];
            self.file.read_at(chunk, 0)?;
            let base_checksum = work::checksum_bytes(chunk, base_bytes);
            let data = &mut buf[..plan.bytes];
            self.file.read_at(data, plan.offset)?;
            let checksum = work::checksum(data, plan.rounds);
            Ok(page::Computed {
                quality: quality.clamp(0.0, 1.0),
                size,
                plan,
                checksum,
                base_checksum,
            })
        })
    }

    fn stats(&self) -> BottleneckStats {
        let pages = self.pages.load(Ordering::Relaxed);
        let q = self.quality_micros.load(Ordering::Relaxed) as f64 / 1e6;
        BottleneckStats {
            requests: self.requests.load(Ordering::Relaxed),
            pages,
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            mean_quality: (pages > 0).then(|| q / pages as f64),
            compute_cpu_s: self.compute_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            processor: self.processor.as_ref().map(|p| p.snapshot()),
        }
    }
}

/// Why the service could not be built.
#[derive(Debug)]
pub enum BottleneckError {
    /// A setting is out of range.
    Config(String),
    /// The data file could not be written.
    File(PathBuf, std::io::Error),
    /// The stage could not be added to the runtime.
    Stage(seda::BuildError),
}

impl std::fmt::Display for BottleneckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BottleneckError::Config(e) => write!(f, "bad [bottleneck] setting: {e}"),
            BottleneckError::File(p, e) => {
                write!(f, "cannot create the data file {}: {e}", p.display())
            }
            BottleneckError::Stage(e) => write!(f, "cannot build the bottleneck stage: {e}"),
        }
    }
}

impl std::error::Error for BottleneckError {}

/// The data file's length: room for the largest read (1.5 x work) and the base's region.
fn file_len(config: &BottleneckConfig) -> u64 {
    let most = (config.work_bytes() as f64 * SIZE_RANGE.1).ceil() as u64;
    most.max(BASE_CHUNK as u64)
}

/// Creates the data file and adds the stage to `runtime` with `control`'s controller (the
/// configuration file's `[stages.bottleneck]` overrides it). Returns the stage's sink and a
/// function giving the service's counters for `/_seda/stats`.
pub fn build(
    runtime: &seda::Runtime,
    config: &BottleneckConfig,
    control: Option<seda::AdmissionConfig>,
) -> Result<(seda::Sink<HttpRequest>, seda_http::ExtraStats), BottleneckError> {
    config.validate().map_err(BottleneckError::Config)?;
    let path = config.file.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("seda-bottleneck-{}.data", std::process::id()))
    });
    let file = DataFile::create(&path, file_len(config), config.seed)
        .map_err(|e| BottleneckError::File(path.clone(), e))?;
    let service = Arc::new(Service {
        file,
        config: config.clone(),
        requests: AtomicU64::new(0),
        pages: AtomicU64::new(0),
        bytes_read: AtomicU64::new(0),
        quality_micros: AtomicU64::new(0),
        compute_nanos: AtomicU64::new(0),
        backend: EmulatedBackend::new(
            Duration::from_secs_f64(config.backend_ms / 1e3),
            config.backend_knee,
        )
        .with_channels(config.backend_channels)
        .with_spread(config.backend_spread, config.seed),
        holding: std::sync::atomic::AtomicUsize::new(0),
        processor: (config.cores > 0.0).then(|| seda::EmulatedProcessor::new(config.cores)),
    });
    // A fixed pool: more threads than cores only time-share a CPU-bound stage.
    let mut stage_config = seda::StageConfig {
        threads: Some(config.threads),
        min_threads: Some(config.threads),
        max_threads: Some(config.threads),
        ..seda::StageConfig::default()
    };
    // With a degradation controller (ours, or one the file names), the handler reads its
    // quality knob: a controller without one refuses the stage instead of leaving the service at
    // full quality. Another kind the file names (admission control alone, as the thesis's
    // baselines run it) serves at full quality.
    let from_file = runtime
        .configuration()
        .stages
        .get(STAGE)
        .and_then(|s| s.admission.as_ref())
        .is_some_and(|a| a.kind == seda_control::catalogue::DEGRADATION);
    let controlled = control.is_some() || from_file;
    stage_config.admission = control;
    let quality = seda::Knob::<seda::Quality>::new();
    let handler_service = service.clone();
    let q = quality.clone();
    let mut builder = seda::Stage::builder(STAGE).config(stage_config);
    if controlled {
        builder = builder.knob(&quality);
    }
    let sink = runtime
        .stage(
            builder.handler(seda::handler::each(move |req: HttpRequest, _| {
                handler_service.handle(req, q.get());
            })),
        )
        .map_err(BottleneckError::Stage)?;
    let stats: seda_http::ExtraStats = Arc::new(move || {
        let section = BottleneckSection {
            bottleneck: service.stats(),
        };
        serde_json::to_value(section).unwrap_or_default()
    });
    Ok((sink, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_round_trip_and_build() {
        for name in Control::NAMES {
            let c = Control::from_name(name).unwrap();
            assert_eq!(c.name(), name);
            match c.admission(Duration::from_secs(5)) {
                None => assert_eq!(c, Control::None),
                Some(a) => {
                    let built = a.build().unwrap();
                    assert_eq!(built.name(), "degradation");
                    let reenable = a.params["reenable_admission"];
                    assert_eq!(reenable == 1.0, c == Control::DegradeAdmission);
                }
            }
        }
        assert_eq!(Control::from_name("degradation"), None);
    }

    #[test]
    fn bad_settings_are_errors() {
        let ok = BottleneckConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            BottleneckConfig {
                work_kb: f64::NAN,
                ..ok.clone()
            },
            BottleneckConfig {
                base_kb: -1.0,
                ..ok.clone()
            },
            BottleneckConfig {
                rounds: 0,
                ..ok.clone()
            },
            BottleneckConfig {
                backend_spread: 1.5,
                ..ok.clone()
            },
            BottleneckConfig {
                backend_spread: f64::NAN,
                ..ok.clone()
            },
            BottleneckConfig {
                cores: 0.001,
                ..ok.clone()
            },
            BottleneckConfig {
                cores: f64::INFINITY,
                ..ok.clone()
            },
            BottleneckConfig {
                work_ms: -1.0,
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
