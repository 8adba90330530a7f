//! The result of a run and its human and JSON forms.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Request counts.
///
/// Every request sent ends exactly once: `sent = completed + rejected + timeouts + errors +`
/// requests still in flight when the run ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests written to a connection (or attempted: a failed connect counts), and requests
    /// the client's AIMD window refused.
    pub sent: u64,
    /// Responses with a status below 500.
    pub completed: u64,
    /// Completed within the goodput target.
    pub good: u64,
    /// `503` responses (the server shed the request) and requests the client's own AIMD window
    /// refused ([`refused`](Self::refused)).
    pub rejected: u64,
    /// Of `rejected`, requests refused by the client's AIMD window without being sent
    /// ([`ClientConfig::aimd_reject_when_full`](crate::ClientConfig)).
    pub refused: u64,
    /// Requests whose deadline passed before the response.
    pub timeouts: u64,
    /// Connection and protocol failures, and 5xx other than 503.
    pub errors: u64,
    /// Body bytes received.
    pub bytes: u64,
}

/// Latency percentiles in milliseconds, over completed requests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl Latency {
    pub(crate) fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalStats {
    /// Start of the interval, seconds from the start of the run.
    pub t_s: f64,
    /// Length of the interval in seconds.
    pub duration_s: f64,
    /// Counts within the interval (a request counts where it ended; `sent` where it started).
    #[serde(flatten)]
    pub counts: Counts,
    /// Completed per second.
    pub throughput_per_s: f64,
    /// Completed within the target per second.
    pub goodput_per_s: f64,
    /// Latency of the requests completed in the interval.
    pub latency: Latency,
    /// The scheduled level at the end of the interval (users, or requests/sessions per second).
    pub level: f64,
    /// Active users, sessions or connections at the end of the interval.
    pub active: usize,
    /// The client's AIMD window at the end of the interval, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aimd_window: Option<f64>,
    /// Completed within the target, per class, in the order of [`Report::classes`]: the mix
    /// a span of the run served ([`Report::good_by_class_between`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub good_by_class: Vec<u64>,
    /// Of those, per class, the ones whose server said what they cost (`Server-Timing: cpu`)
    /// and that cost: the server's work that went into goodput
    /// ([`Report::good_server_cpu_between`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub good_server_cpu_by_class: Vec<ServerCpu>,
}

/// Requests whose server said what they cost it, and the CPU-seconds it said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ServerCpu {
    /// Requests that carried a `Server-Timing: cpu` metric.
    pub timed: u64,
    /// The sum of their metrics, seconds.
    pub cpu_s: f64,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Length of the measured run in seconds.
    pub duration_s: f64,
    /// Counts over the run.
    #[serde(flatten)]
    pub counts: Counts,
    /// Requests still outstanding when the run ended (neither completed nor failed).
    pub in_flight_at_end: u64,
    /// Requests that were due but never sent: open-model arrivals that found the backlog full
    /// or were still waiting for a connection when the run ended, and partly-open session
    /// arrivals that found `max_sessions` sessions. Open model: `sent + dropped` = arrivals.
    pub dropped: u64,
    /// Refused requests sent again ([`ClientConfig::retries`](crate::ClientConfig)); each
    /// request counts once in [`counts`](Self::counts), with its last attempt's outcome.
    pub retries: u64,
    /// Retries the client's retry budget did not allow (the request ended refused).
    pub retries_denied: u64,
    /// Completed per second.
    pub throughput_per_s: f64,
    /// Completed within the goodput target per second.
    pub goodput_per_s: f64,
    /// The goodput target.
    pub goodput_target_ms: f64,
    /// Latency of completed requests.
    pub latency: Latency,
    /// Responses by status code.
    pub statuses: BTreeMap<String, u64>,
    /// Errors by kind (connect, io, protocol, ...).
    pub error_kinds: BTreeMap<String, u64>,
    /// Number of clients (users, connections or session slots).
    pub clients: usize,
    /// Jain's index over clients' completed requests.
    pub jain_completed: Option<f64>,
    /// Jain's index over clients' sent requests.
    pub jain_sent: Option<f64>,
}

/// One request class (URL type).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassStats {
    /// The class name.
    pub name: String,
    /// Counts for the class.
    #[serde(flatten)]
    pub counts: Counts,
    /// Latency of its completed requests.
    pub latency: Latency,
}

/// One client (user, connection or session slot).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ClientStats {
    /// The client's index.
    pub id: usize,
    /// Requests sent.
    pub sent: u64,
    /// Responses below 500.
    pub completed: u64,
    /// `503` responses.
    pub rejected: u64,
}

/// Everything a run measured; `Display` gives the human summary, `serde_json` the JSON form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The loop model and its parameters, as text.
    pub model: String,
    /// Whole-run figures.
    pub summary: Summary,
    /// Per-interval figures.
    pub series: Vec<IntervalStats>,
    /// Per-class figures.
    pub classes: Vec<ClassStats>,
    /// Per-client counts.
    pub clients: Vec<ClientStats>,
    /// Each interval's latency histogram, in the order of `series`, when
    /// [`LoadConfig::keep_interval_histograms`](crate::LoadConfig) asked for them.
    #[serde(skip)]
    pub interval_histograms: Vec<Histogram<u64>>,
}

impl Report {
    /// Latency of the requests completed in the intervals that start in `[from_s, to_s)`;
    /// `None` when the histograms were not kept or nothing completed there.
    pub fn latency_between(&self, from_s: f64, to_s: f64) -> Option<Latency> {
        let mut merged: Option<Histogram<u64>> = None;
        for (i, h) in self.series.iter().zip(&self.interval_histograms) {
            if i.t_s >= from_s && i.t_s < to_s {
                match &mut merged {
                    None => merged = Some(h.clone()),
                    Some(m) => m.add(h).ok()?,
                }
            }
        }
        merged.filter(|h| !h.is_empty()).map(|h| Latency::of(&h))
    }

    /// Requests of each class completed within the target in the intervals that start in
    /// `[from_s, to_s)`: the mix a span of the run served (a spike's, say, where admission
    /// control turned some types away more than others).
    pub fn good_by_class_between(&self, from_s: f64, to_s: f64) -> BTreeMap<String, u64> {
        let mut out: BTreeMap<String, u64> =
            self.classes.iter().map(|c| (c.name.clone(), 0)).collect();
        for i in self
            .series
            .iter()
            .filter(|i| i.t_s >= from_s && i.t_s < to_s)
        {
            for (class, n) in self.classes.iter().zip(&i.good_by_class) {
                *out.entry(class.name.clone()).or_default() += n;
            }
        }
        out
    }

    /// Per class, the requests completed within the target whose server said what they cost,
    /// and that cost, in the intervals that start in `[from_s, to_s)`.
    pub fn good_server_cpu_between(&self, from_s: f64, to_s: f64) -> BTreeMap<String, ServerCpu> {
        let mut out: BTreeMap<String, ServerCpu> = BTreeMap::new();
        for i in self
            .series
            .iter()
            .filter(|i| i.t_s >= from_s && i.t_s < to_s)
        {
            for (class, c) in self.classes.iter().zip(&i.good_server_cpu_by_class) {
                let e = out.entry(class.name.clone()).or_default();
                e.timed += c.timed;
                e.cpu_s += c.cpu_s;
            }
        }
        out
    }

    /// Requests completed within `limit` in the intervals that start in `[from_s, to_s)` (to
    /// the histogram's precision): the goodput against a target other than the run's, such as
    /// one that changed while the run went on. 0 when the histograms were not kept.
    pub fn completed_within_between(&self, from_s: f64, to_s: f64, limit: Duration) -> u64 {
        let us = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX);
        self.series
            .iter()
            .zip(&self.interval_histograms)
            .filter(|(i, _)| i.t_s >= from_s && i.t_s < to_s)
            .map(|(_, h)| h.count_between(0, us))
            .sum()
    }
}

impl IntervalStats {
    /// The one-line progress display.
    pub fn progress_line(&self) -> String {
        format!(
            "t={:>6.1}s level={:<8.1} active={:<6} {:>9.0} req/s  good {:>9.0}/s  p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms  rej {} to {} err {}",
            self.t_s + self.duration_s,
            self.level,
            self.active,
            self.throughput_per_s,
            self.goodput_per_s,
            self.latency.p50_ms,
            self.latency.p99_ms,
            self.latency.max_ms,
            self.counts.rejected,
            self.counts.timeouts,
            self.counts.errors
        )
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.summary;
        let c = &s.counts;
        let l = &s.latency;
        writeln!(f, "model       {}", self.model)?;
        writeln!(f, "duration    {:.2} s", s.duration_s)?;
        writeln!(
            f,
            "requests    sent {}  completed {}  rejected(503) {}  timeouts {}  errors {}  in flight at end {}  dropped {}",
            c.sent,
            c.completed,
            c.rejected - c.refused,
            c.timeouts,
            c.errors,
            s.in_flight_at_end,
            s.dropped
        )?;
        if c.refused > 0 {
            writeln!(
                f,
                "refused     {} by the client (its AIMD window or throttle), never sent",
                c.refused
            )?;
        }
        if s.retries + s.retries_denied > 0 {
            writeln!(
                f,
                "retries     {} sent ({:.1}% of requests sent), {} denied by the retry budget",
                s.retries,
                100.0 * s.retries as f64 / c.sent.max(1) as f64,
                s.retries_denied
            )?;
        }
        writeln!(
            f,
            "throughput  {:.1} req/s   goodput {:.1} req/s (within {} ms)   {:.2} MB/s",
            s.throughput_per_s,
            s.goodput_per_s,
            s.goodput_target_ms,
            c.bytes as f64 / 1e6 / s.duration_s.max(1e-9)
        )?;
        writeln!(
            f,
            "latency ms  mean {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
            l.mean_ms, l.p50_ms, l.p90_ms, l.p99_ms, l.p999_ms, l.max_ms
        )?;
        writeln!(
            f,
            "fairness    {} clients, Jain's index completed {} sent {}",
            s.clients,
            opt(s.jain_completed),
            opt(s.jain_sent)
        )?;
        if !s.statuses.is_empty() {
            let st: Vec<String> = s.statuses.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            writeln!(f, "statuses    {}", st.join(" "))?;
        }
        if !s.error_kinds.is_empty() {
            let ek: Vec<String> = s
                .error_kinds
                .iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect();
            writeln!(f, "errors      {}", ek.join(" "))?;
        }
        if self.classes.len() > 1 {
            writeln!(
                f,
                "{:<24} {:>10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>10}",
                "class", "sent", "completed", "rej", "err", "p50 ms", "p99 ms", "max ms"
            )?;
            for k in &self.classes {
                writeln!(
                    f,
                    "{:<24} {:>10} {:>10} {:>8} {:>8} {:>10.3} {:>10.3} {:>10.3}",
                    k.name,
                    k.counts.sent,
                    k.counts.completed,
                    k.counts.rejected,
                    k.counts.errors + k.counts.timeouts,
                    k.latency.p50_ms,
                    k.latency.p99_ms,
                    k.latency.max_ms
                )?;
            }
        }
        Ok(())
    }
}
