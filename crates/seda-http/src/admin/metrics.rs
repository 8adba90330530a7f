//! `/metrics`: the runtime's counters and histograms in the Prometheus text format (0.0.4).
//!
//! Nothing is recorded for Prometheus on the hot path: at scrape time a [`Collector`] reads the
//! counters and log-linear histograms every stage already keeps (one relaxed atomic add per
//! event) and renders them. The histograms become *classic* histograms with the fixed
//! [`BUCKETS_S`], so replicas of a service aggregate (summaries do not). A bucket's count is
//! exact up to the one ~3% wide log-linear bucket that straddles its bound.
//!
//! Names follow Prometheus's conventions: `seda_stage_*` with a `stage` label, counters end in
//! `_total`, times are `_seconds`, the process metrics are client_golang's `process_*`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use seda::stats::Histogram;

use super::AdminSources;
use super::process;

/// Upper bounds of every histogram's buckets, seconds (plus `+Inf`): from 100 us to a minute,
/// about 2.5x apart, covering a cached file (tens of us) to a flash crowd's queueing (seconds).
pub const BUCKETS_S: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// The `Content-Type` of the answer.
pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A registry holding the one collector that renders everything at scrape time.
pub(crate) fn registry(sources: Arc<AdminSources>) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(SedaCollector(sources)));
    r
}

/// Renders the registry as Prometheus text.
pub(crate) fn render(registry: &Registry) -> String {
    let mut out = String::with_capacity(64 * 1024);
    if prometheus_client::encoding::prometheus_text::encode(&mut out, registry).is_err() {
        // Writing into a String cannot fail; say so in the body if it ever did.
        out.clear();
        let _ = writeln!(out, "# the metrics could not be encoded");
    }
    out
}

#[derive(Clone)]
struct SedaCollector(Arc<AdminSources>);

impl std::fmt::Debug for SedaCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SedaCollector")
    }
}

/// Per-bucket (not cumulative) counts of `h` at [`BUCKETS_S`]; the encoder accumulates them.
fn buckets(h: &Histogram) -> [(f64, u64); BUCKETS_S.len()] {
    let mut below = 0;
    BUCKETS_S.map(|le| {
        let at = h.count_at_most(Duration::from_secs_f64(le));
        let n = at.saturating_sub(below);
        below = below.max(at);
        (le, n)
    })
}

type Family<'a, T> = (&'a str, &'a str, Option<Unit>, MetricType, Vec<T>);

/// Writes one family with a `stage` label per sample.
fn gauge_family<V: prometheus_client::encoding::EncodeGaugeValue>(
    enc: &mut DescriptorEncoder<'_>,
    fam: Family<'_, (&str, V)>,
) -> Result<(), std::fmt::Error> {
    let (name, help, unit, kind, samples) = fam;
    if samples.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit.as_ref(), kind)?;
    for (stage, v) in &samples {
        let labels = [("stage", *stage)];
        m.encode_family(&labels)?.encode_gauge(v)?;
    }
    Ok(())
}

fn counter_family(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: Vec<(Vec<(&str, &str)>, u64)>,
) -> Result<(), std::fmt::Error> {
    if samples.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in &samples {
        m.encode_family(labels)?
            .encode_counter::<NoLabelSet, _, u64>(v, None)?;
    }
    Ok(())
}

impl Collector for SedaCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let src = &self.0;
        if let Some(frontend) = &src.frontend {
            encode_frontend(&mut enc, &frontend())?;
        }
        if let Some(rt) = &src.runtime {
            encode_runtime(&mut enc, rt)?;
        }
        if let Some(layers) = &src.layers {
            encode_layers(&mut enc, &layers())?;
        }
        process::encode(&mut enc)
    }
}

fn encode_runtime(
    enc: &mut DescriptorEncoder<'_>,
    rt: &seda::Runtime,
) -> Result<(), std::fmt::Error> {
    let stats = rt.stats();
    encode_stage_counters(enc, &stats.stages)?;
    encode_stage_gauges(enc, &stats)?;
    encode_controllers(enc, &stats.stages)?;
    encode_stage_histograms(enc, rt)
}

/// Each stage's event counters since start: arrivals, admissions, rejections and drops by
/// reason, terminations, completions, failures, batches.
fn encode_stage_counters(
    enc: &mut DescriptorEncoder<'_>,
    stages: &[seda::stats::StageSnapshot],
) -> Result<(), std::fmt::Error> {
    let per_stage =
        |f: &dyn Fn(&seda::stats::StageSnapshot) -> u64| -> Vec<(Vec<(&str, &str)>, u64)> {
            stages
                .iter()
                .map(|s| (vec![("stage", s.name.as_str())], f(s)))
                .collect()
        };
    counter_family(
        enc,
        "seda_stage_arrivals",
        "Enqueue attempts (admitted + rejected).",
        per_stage(&|s| s.totals.counters.arrivals),
    )?;
    counter_family(
        enc,
        "seda_stage_admitted",
        "Events that entered the stage.",
        per_stage(&|s| s.totals.counters.admitted),
    )?;
    let by_reason =
        |pick: &dyn Fn(
            &seda::stats::StageSnapshot,
        )
            -> &std::collections::BTreeMap<std::borrow::Cow<'static, str>, u64>| {
            stages
                .iter()
                .flat_map(|s| {
                    pick(s).iter().map(move |(r, n)| {
                        (vec![("stage", s.name.as_str()), ("reason", r.as_ref())], *n)
                    })
                })
                .collect::<Vec<_>>()
        };
    counter_family(
        enc,
        "seda_stage_rejected",
        "Events turned away at enqueue, by reason.",
        by_reason(&|s| &s.totals.counters.rejected),
    )?;
    counter_family(
        enc,
        "seda_stage_dropped",
        "Admitted events dropped before handling (expired, cancelled, shed, closed), by reason.",
        by_reason(&|s| &s.totals.counters.dropped),
    )?;
    counter_family(
        enc,
        "seda_stage_terminated",
        "Admitted events whose handler gave them up after the stage's terminator cut them \
         (early termination, SERT06).",
        per_stage(&|s| s.totals.counters.terminated),
    )?;
    counter_family(
        enc,
        "seda_stage_completed",
        "Events handled.",
        per_stage(&|s| s.totals.counters.completed),
    )?;
    counter_family(
        enc,
        "seda_stage_failed",
        "Events lost because their handler panicked.",
        per_stage(&|s| s.totals.counters.failed),
    )?;
    counter_family(
        enc,
        "seda_stage_batches",
        "Batches handed to the handler.",
        per_stage(&|s| s.totals.counters.batches),
    )?;
    Ok(())
}

/// Each stage's state now: queue length and threshold, threads (and the sizer's target and
/// busy threads), batch size.
fn encode_stage_gauges(
    enc: &mut DescriptorEncoder<'_>,
    stats: &seda::RuntimeSnapshot,
) -> Result<(), std::fmt::Error> {
    let stages = &stats.stages;
    let gauge = |f: &dyn Fn(&seda::stats::StageSnapshot) -> Option<u64>| -> Vec<(&str, u64)> {
        stages
            .iter()
            .filter_map(|s| f(s).map(|v| (s.name.as_str(), v)))
            .collect()
    };
    gauge_family(
        enc,
        (
            "seda_stage_queue_length",
            "Events waiting in the stage's queue.",
            None,
            MetricType::Gauge,
            gauge(&|s| Some(s.queue_len as u64)),
        ),
    )?;
    gauge_family(
        enc,
        (
            "seda_stage_queue_threshold",
            "The queue's admission threshold (stages with one).",
            None,
            MetricType::Gauge,
            gauge(&|s| s.threshold.map(|t| t as u64)),
        ),
    )?;
    gauge_family(
        enc,
        (
            "seda_stage_threads",
            "Worker threads of the stage's pool (0 when inline).",
            None,
            MetricType::Gauge,
            gauge(&|s| Some(s.threads as u64)),
        ),
    )?;
    gauge_family(
        enc,
        (
            "seda_stage_threads_target_max",
            "The most threads the pool's controller may grow to (its target's cap).",
            None,
            MetricType::Gauge,
            gauge(&|s| Some(s.threads_max as u64)),
        ),
    )?;
    gauge_family(
        enc,
        (
            "seda_stage_threads_target",
            "The thread count the pool's sizer asks for (self-tuning, hill climbing, fixed).",
            None,
            MetricType::Gauge,
            gauge(&|s| s.threads_target.map(|t| t as u64)),
        ),
    )?;
    // Per stage, from its pool (the sizer measures it each period; stages sharing a pool
    // show the same value).
    let busy: Vec<(&str, f64)> = stages
        .iter()
        .filter_map(|s| Some((s.name.as_str(), stats.pool_of(s)?.sizing.busy_threads?)))
        .collect();
    gauge_family(
        enc,
        (
            "seda_stage_busy_threads",
            "Threads of the stage's pool running a handler, on average over the sizer's last \
             period (pools with a sizer).",
            None,
            MetricType::Gauge,
            busy,
        ),
    )?;
    gauge_family(
        enc,
        (
            "seda_stage_batch_size",
            "The batch-size target.",
            None,
            MetricType::Gauge,
            gauge(&|s| Some(s.batch_size as u64)),
        ),
    )?;
    Ok(())
}

/// Each stage's queueing, service and response-time histograms, rendered into fixed buckets
/// at scrape time from the runtime's log-linear ones.
fn encode_stage_histograms(
    enc: &mut DescriptorEncoder<'_>,
    rt: &seda::Runtime,
) -> Result<(), std::fmt::Error> {
    let hist = rt.histograms();
    type Pick = fn(&seda::stats::StageHistograms) -> &Histogram;
    let kinds: [(&str, &str, Pick); 3] = [
        (
            "seda_stage_queueing",
            "Time from enqueue to dequeue.",
            |h| &h.queueing,
        ),
        (
            "seda_stage_service",
            "Handler time per event (a batch's time divided over its events).",
            |h| &h.service,
        ),
        (
            "seda_stage_response",
            "Time from the request's birth to the end of this stage (admitted events only).",
            |h| &h.response,
        ),
    ];
    for (name, help, pick) in kinds {
        let mut m =
            enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
        for (stage, h) in &hist {
            let h = pick(h);
            let labels = [("stage", stage.as_str())];
            m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                h.sum_s(),
                h.count(),
                &buckets(h),
                None,
            )?;
        }
    }
    Ok(())
}

fn encode_controllers(
    enc: &mut DescriptorEncoder<'_>,
    stages: &[seda::stats::StageSnapshot],
) -> Result<(), std::fmt::Error> {
    let with: Vec<_> = stages
        .iter()
        .filter_map(|s| s.controller.as_ref().map(|c| (s, c)))
        .collect();
    if with.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(
        "seda_controller_state",
        "Each admission controller's state (rate, limit, threshold, quality, model \
         parameters), one sample per named value.",
        None,
        MetricType::Gauge,
    )?;
    for (s, c) in with {
        for (key, v) in &c.state {
            let labels = [
                ("stage", s.name.as_str()),
                ("controller", c.name.as_ref()),
                ("key", key.as_ref()),
            ];
            m.encode_family(&labels)?.encode_gauge(v)?;
        }
    }
    Ok(())
}

/// Tower admission layers (the proxy's routes): `seda_layer_*` with a `layer` label, and
/// their controllers' state beside the stages' in `seda_controller_state`.
fn encode_layers(
    enc: &mut DescriptorEncoder<'_>,
    layers: &[(String, seda_tower::LayerStats)],
) -> Result<(), std::fmt::Error> {
    let per_layer = |v: fn(&seda_tower::LayerStats) -> u64| {
        layers
            .iter()
            .map(|(name, s)| (vec![("layer", name.as_str())], v(s)))
            .collect::<Vec<_>>()
    };
    counter_family(
        enc,
        "seda_layer_admitted",
        "Requests the layer admitted.",
        per_layer(|s| s.admitted),
    )?;
    counter_family(
        enc,
        "seda_layer_completed",
        "Admitted requests that produced a response.",
        per_layer(|s| s.completed),
    )?;
    counter_family(
        enc,
        "seda_layer_dropped",
        "Admitted requests that failed or were abandoned before a response.",
        per_layer(|s| s.dropped),
    )?;
    let rejected = layers
        .iter()
        .flat_map(|(name, s)| {
            seda_tower::RejectReason::ALL.iter().map(move |r| {
                let n = s
                    .rejected
                    .iter()
                    .find(|(x, _)| x == r)
                    .map_or(0, |(_, n)| *n);
                (vec![("layer", name.as_str()), ("reason", r.as_str())], n)
            })
        })
        .collect();
    counter_family(
        enc,
        "seda_layer_rejected",
        "Requests the layer rejected (503), by reason.",
        rejected,
    )?;
    // Deadlines (504): refused at the door or cut while running, for layers that read them.
    let deadline = |v: fn(&seda_tower::DeadlineStats) -> u64| {
        layers
            .iter()
            .filter_map(|(name, s)| Some((vec![("layer", name.as_str())], v(s.deadline.as_ref()?))))
            .collect::<Vec<_>>()
    };
    if layers.iter().any(|(_, s)| s.deadline.is_some()) {
        counter_family(
            enc,
            "seda_layer_deadline_refused",
            "Requests the layer refused (504) because their deadline had passed or would be missed.",
            deadline(|d| d.refused_passed + d.refused_predicted),
        )?;
        counter_family(
            enc,
            "seda_layer_deadline_cut",
            "Admitted requests cut (504) when their deadline passed while they ran.",
            deadline(|d| d.cut),
        )?;
    }
    if layers.iter().all(|(_, s)| s.state.is_empty()) {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(
        "seda_layer_controller_state",
        "Each layer's admission controller's state, one sample per named value.",
        None,
        MetricType::Gauge,
    )?;
    for (name, s) in layers {
        for (key, v) in &s.state {
            let labels = [
                ("layer", name.as_str()),
                ("controller", s.controller),
                ("key", *key),
            ];
            m.encode_family(&labels)?.encode_gauge(v)?;
        }
    }
    Ok(())
}

fn encode_frontend(
    enc: &mut DescriptorEncoder<'_>,
    f: &crate::FrontendStats,
) -> Result<(), std::fmt::Error> {
    let one = |v: u64| vec![(Vec::<(&str, &str)>::new(), v)];
    let counters: [(&str, &str, u64); 10] = [
        (
            "seda_http_connections_accepted",
            "Connections accepted.",
            f.accepted_connections,
        ),
        (
            "seda_http_connections_refused",
            "Connections answered 503 because max_connections were open.",
            f.refused_connections,
        ),
        (
            "seda_http_requests",
            "Requests whose head was parsed.",
            f.requests,
        ),
        (
            "seda_http_requests_rejected",
            "Requests the first stage did not admit (503).",
            f.rejected_requests,
        ),
        (
            "seda_http_requests_unanswered",
            "Admitted requests dropped without an answer (503).",
            f.unanswered_requests,
        ),
        (
            "seda_http_requests_cancelled",
            "Requests whose client left before the answer.",
            f.cancelled_requests,
        ),
        (
            "seda_http_requests_deadline_missed",
            "Requests whose deadline was spent on arrival or passed unserved (504).",
            f.deadline_missed,
        ),
        (
            "seda_http_header_timeouts",
            "Connections cut because a request head took too long.",
            f.header_timeouts,
        ),
        (
            "seda_http_idle_closed",
            "Keep-alive connections closed after the idle timeout.",
            f.idle_closed,
        ),
        (
            "seda_http_connection_errors",
            "Connections that ended with an I/O or protocol error.",
            f.connection_errors,
        ),
    ];
    for (name, help, v) in counters {
        counter_family(enc, name, help, one(v))?;
    }
    let mut m = enc.encode_descriptor(
        "seda_http_connections_open",
        "Connections open now.",
        None,
        MetricType::Gauge,
    )?;
    m.encode_gauge(&(f.open_connections as u64))?;
    let mut m = enc.encode_descriptor(
        "seda_http_retry_after_seconds",
        "The Retry-After a refusal gets now (stretched while refusals outnumber admissions).",
        None,
        MetricType::Gauge,
    )?;
    m.encode_gauge(&u64::from(f.retry_after_s))?;
    Ok(())
}
