//! Recording: HDR histograms per interval and for the whole run, counts, per-class and
//! per-client tables, and Jain's fairness index.

mod report;

pub use report::{
    ClassStats, ClientStats, Counts, IntervalStats, Latency, Report, ServerCpu, Summary,
};

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Largest latency recorded exactly (one hour, in µs); larger values are clamped.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Jain's fairness index `(Σx)² / (n·Σx²)`: 1 when all `xs` are equal, `1/n` when one takes
/// everything. `None` for no values or all zeros.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || squares == 0.0 {
        None
    } else {
        Some(sum * sum / (xs.len() as f64 * squares))
    }
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A response other than 503 arrived (a 5xx other than 503 is counted as an error), with
    /// the CPU time the server said it cost (`Server-Timing: cpu;dur=...`), if it said.
    Response {
        status: u16,
        bytes: u64,
        server_cpu_us: Option<u64>,
    },
    /// The per-request deadline passed first.
    Timeout,
    /// Connection or protocol failure.
    Error(&'static str),
    /// The client's AIMD window was full and refused the request without sending it.
    Refused,
}

fn new_histogram() -> Histogram<u64> {
    // 3 significant digits from 1 µs to an hour: about 180 KB per histogram.
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("constant, valid histogram bounds")
}

/// Counts and a latency histogram over some span.
struct Window {
    counts: Counts,
    hist: Histogram<u64>,
}

impl Window {
    fn new() -> Window {
        Window {
            counts: Counts::default(),
            hist: new_histogram(),
        }
    }

    /// Counts `outcome`; whether it completed within `good_us`.
    fn done(&mut self, outcome: Outcome, latency_us: u64, good_us: u64) -> bool {
        let c = &mut self.counts;
        let mut good = false;
        match outcome {
            Outcome::Response { status: 503, .. } => c.rejected += 1,
            Outcome::Response { status, bytes, .. } if status >= 500 => {
                c.errors += 1;
                c.bytes += bytes;
            }
            Outcome::Response { bytes, .. } => {
                c.completed += 1;
                c.bytes += bytes;
                if latency_us <= good_us {
                    c.good += 1;
                    good = true;
                }
                self.hist
                    .saturating_record(latency_us.clamp(1, MAX_LATENCY_US));
            }
            Outcome::Timeout => c.timeouts += 1,
            Outcome::Error(_) => c.errors += 1,
            Outcome::Refused => {
                c.rejected += 1;
                c.refused += 1;
            }
        }
        good
    }

    fn latency(&self) -> Latency {
        Latency::of(&self.hist)
    }
}

/// Everything recorded during a run. Single-threaded: the driver shares it through `Rc`.
pub(crate) struct Recorder {
    good_us: u64,
    total: Window,
    current: Window,
    current_start: Duration,
    series: Vec<IntervalStats>,
    classes: Vec<(String, Window)>,
    /// Completed within the target per class in the current interval.
    current_good_by_class: Vec<u64>,
    /// Of those, the ones whose server said what they cost, and that cost.
    current_good_cpu_by_class: Vec<ServerCpu>,
    clients: Vec<ClientStats>,
    statuses: BTreeMap<u16, u64>,
    error_kinds: BTreeMap<&'static str, u64>,
    in_flight: u64,
    dropped: u64,
    retries: u64,
    retries_denied: u64,
    queued: u64,
    /// The scheduled level (users or rate) now, for the series.
    pub level: f64,
    /// Users, sessions or connections active now, for the series.
    pub active: usize,
    /// The client's AIMD window now, for the series.
    pub aimd_window: Option<f64>,
    /// Each closed interval's histogram, when asked for ([`Recorder::keep_interval_histograms`]).
    kept: Option<Vec<Histogram<u64>>>,
}

impl Recorder {
    pub(crate) fn new(classes: Vec<String>, goodput_target: Duration) -> Recorder {
        Recorder {
            current_good_by_class: vec![0; classes.len()],
            current_good_cpu_by_class: vec![ServerCpu::default(); classes.len()],
            good_us: goodput_target.as_micros().min(u128::from(u64::MAX)) as u64,
            total: Window::new(),
            current: Window::new(),
            current_start: Duration::ZERO,
            series: Vec::new(),
            classes: classes.into_iter().map(|n| (n, Window::new())).collect(),
            clients: Vec::new(),
            statuses: BTreeMap::new(),
            error_kinds: BTreeMap::new(),
            in_flight: 0,
            dropped: 0,
            retries: 0,
            retries_denied: 0,
            queued: 0,
            level: 0.0,
            active: 0,
            aimd_window: None,
            kept: None,
        }
    }

    /// Keeps every interval's latency histogram (about 180 KB each) so the report can give
    /// percentiles over any span of intervals ([`Report::latency_between`]).
    pub(crate) fn keep_interval_histograms(mut self, keep: bool) -> Recorder {
        self.kept = keep.then(Vec::new);
        self
    }

    fn client(&mut self, id: usize) -> &mut ClientStats {
        if id >= self.clients.len() {
            let n = self.clients.len();
            self.clients.extend((n..=id).map(|i| ClientStats {
                id: i,
                ..Default::default()
            }));
        }
        &mut self.clients[id]
    }

    /// A request of `class` was sent by client `client`.
    /// A refused request's retry: sent again if `allowed`, else denied by the retry budget.
    pub(crate) fn retry(&mut self, allowed: bool) {
        if allowed {
            self.retries += 1;
        } else {
            self.retries_denied += 1;
        }
    }

    pub(crate) fn sent(&mut self, client: usize, class: usize) {
        self.total.counts.sent += 1;
        self.current.counts.sent += 1;
        if let Some((_, w)) = self.classes.get_mut(class) {
            w.counts.sent += 1;
        }
        self.client(client).sent += 1;
        self.in_flight += 1;
    }

    /// A request sent earlier ended.
    pub(crate) fn done(
        &mut self,
        client: usize,
        class: usize,
        outcome: Outcome,
        latency: Duration,
    ) {
        let us = latency.as_micros().min(u128::from(MAX_LATENCY_US)) as u64;
        let good = self.good_us;
        self.total.done(outcome, us, good);
        let in_time = self.current.done(outcome, us, good);
        if let Some((_, w)) = self.classes.get_mut(class) {
            w.done(outcome, us, good);
        }
        if in_time && let Some(n) = self.current_good_by_class.get_mut(class) {
            *n += 1;
        }
        if in_time
            && let Outcome::Response {
                server_cpu_us: Some(cpu),
                ..
            } = outcome
            && let Some(c) = self.current_good_cpu_by_class.get_mut(class)
        {
            c.timed += 1;
            c.cpu_s += cpu as f64 / 1e6;
        }
        self.in_flight = self.in_flight.saturating_sub(1);
        match outcome {
            Outcome::Response { status, .. } => {
                *self.statuses.entry(status).or_default() += 1;
                let c = self.client(client);
                if status == 503 {
                    c.rejected += 1;
                } else if status < 500 {
                    c.completed += 1;
                }
            }
            Outcome::Error(kind) => *self.error_kinds.entry(kind).or_default() += 1,
            Outcome::Refused => self.client(client).rejected += 1,
            Outcome::Timeout => {}
        }
    }

    /// A request that was due was never sent (the open model's backlog was full, or the run
    /// ended first).
    pub(crate) fn dropped(&mut self, n: u64) {
        self.dropped += n;
    }

    /// A due request was queued for a free connection (`true`) or left the queue (`false`).
    /// Those still queued at the end count as dropped.
    pub(crate) fn queued(&mut self, entered: bool) {
        if entered {
            self.queued += 1;
        } else {
            self.queued = self.queued.saturating_sub(1);
        }
    }

    /// Closes the current interval at `now` (time since the start of the run).
    pub(crate) fn close_interval(&mut self, now: Duration) -> &IntervalStats {
        let span = now.saturating_sub(self.current_start);
        let w = std::mem::replace(&mut self.current, Window::new());
        if let Some(kept) = &mut self.kept {
            kept.push(w.hist.clone());
        }
        let secs = span.as_secs_f64().max(1e-9);
        self.series.push(IntervalStats {
            t_s: self.current_start.as_secs_f64(),
            duration_s: span.as_secs_f64(),
            throughput_per_s: w.counts.completed as f64 / secs,
            goodput_per_s: w.counts.good as f64 / secs,
            latency: w.latency(),
            counts: w.counts,
            level: self.level,
            active: self.active,
            aimd_window: self.aimd_window,
            good_by_class: std::mem::replace(
                &mut self.current_good_by_class,
                vec![0; self.classes.len()],
            ),
            good_server_cpu_by_class: std::mem::replace(
                &mut self.current_good_cpu_by_class,
                vec![ServerCpu::default(); self.classes.len()],
            ),
        });
        self.current_start = now;
        self.series.last().expect("just pushed")
    }

    /// The whole result; `elapsed` is the length of the run.
    pub(crate) fn report(mut self, model: String, elapsed: Duration) -> Report {
        if elapsed > self.current_start {
            self.close_interval(elapsed);
        }
        let secs = elapsed.as_secs_f64().max(1e-9);
        let completed: Vec<f64> = self.clients.iter().map(|c| c.completed as f64).collect();
        let sent: Vec<f64> = self.clients.iter().map(|c| c.sent as f64).collect();
        let summary = Summary {
            duration_s: elapsed.as_secs_f64(),
            throughput_per_s: self.total.counts.completed as f64 / secs,
            goodput_per_s: self.total.counts.good as f64 / secs,
            goodput_target_ms: self.good_us as f64 / 1000.0,
            latency: self.total.latency(),
            counts: self.total.counts,
            in_flight_at_end: self.in_flight,
            dropped: self.dropped + self.queued,
            retries: self.retries,
            retries_denied: self.retries_denied,
            statuses: self
                .statuses
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            error_kinds: self
                .error_kinds
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            clients: self.clients.len(),
            jain_completed: jain_index(&completed),
            jain_sent: jain_index(&sent),
        };
        let classes = self
            .classes
            .iter()
            .map(|(name, w)| ClassStats {
                name: name.clone(),
                counts: w.counts,
                latency: w.latency(),
            })
            .collect();
        Report {
            model,
            summary,
            series: self.series,
            classes,
            clients: self.clients,
            interval_histograms: self.kept.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_on_known_inputs() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[8.0, 0.0, 0.0, 0.0]), Some(0.25));
        // (1+2+3)² / (3·(1+4+9)) = 36/42
        let j = jain_index(&[1.0, 2.0, 3.0]).unwrap();
        assert!((j - 36.0 / 42.0).abs() < 1e-12);
        // Two equal halves of n clients served, the rest starved: k/n.
        assert_eq!(jain_index(&[3.0, 3.0, 0.0, 0.0]), Some(0.5));
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn outcomes_are_counted_once_each() {
        let mut r = Recorder::new(vec!["a".into()], Duration::from_millis(10));
        let ms = Duration::from_millis;
        for _ in 0..5 {
            r.sent(0, 0);
        }
        r.done(
            0,
            0,
            Outcome::Response {
                status: 200,
                bytes: 10,
                server_cpu_us: None,
            },
            ms(1),
        );
        r.done(
            0,
            0,
            Outcome::Response {
                status: 200,
                bytes: 10,
                server_cpu_us: None,
            },
            ms(50),
        );
        r.done(
            0,
            0,
            Outcome::Response {
                status: 503,
                bytes: 0,
                server_cpu_us: None,
            },
            ms(1),
        );
        r.done(0, 0, Outcome::Timeout, ms(100));
        r.done(0, 0, Outcome::Error("io"), ms(1));
        let rep = r.report("t".into(), Duration::from_secs(1));
        let c = rep.summary.counts;
        assert_eq!(
            (
                c.sent,
                c.completed,
                c.good,
                c.rejected,
                c.timeouts,
                c.errors
            ),
            (5, 2, 1, 1, 1, 1)
        );
        assert_eq!(rep.classes[0].counts, c);
        assert_eq!(rep.clients[0].completed, 2);
        assert_eq!(rep.clients[0].rejected, 1);
        assert!(rep.summary.latency.max_ms >= 49.0);
        assert_eq!(rep.series.len(), 1);
    }

    #[test]
    fn completions_within_a_limit_are_counted_per_span_of_intervals() {
        let mut r = Recorder::new(vec!["a".into()], Duration::from_millis(10))
            .keep_interval_histograms(true);
        let ok = || Outcome::Response {
            status: 200,
            bytes: 1,
            server_cpu_us: None,
        };
        let ms = Duration::from_millis;
        for latency in [ms(5), ms(20), ms(40)] {
            r.sent(0, 0);
            r.done(0, 0, ok(), latency);
        }
        r.close_interval(Duration::from_secs(1));
        r.sent(0, 0);
        r.done(0, 0, ok(), ms(5));
        let rep = r.report("t".into(), Duration::from_secs(2));
        assert_eq!(rep.series.len(), 2);
        assert_eq!(rep.completed_within_between(0.0, 1.0, ms(25)), 2);
        assert_eq!(rep.completed_within_between(0.0, 9.0, ms(25)), 3);
        assert_eq!(rep.completed_within_between(0.0, 9.0, ms(1)), 0);
    }

    #[test]
    fn each_intervals_mix_counts_the_classes_completed_in_time() {
        let mut r = Recorder::new(vec!["a".into(), "b".into()], Duration::from_millis(10));
        let status = |status| Outcome::Response {
            status,
            bytes: 1,
            server_cpu_us: Some(100),
        };
        let ms = Duration::from_millis;
        // In time, late, rejected and failed: only the first counts.
        for (class, outcome, latency) in [
            (0, status(200), ms(5)),
            (0, status(200), ms(20)),
            (1, status(503), ms(1)),
            (1, status(500), ms(1)),
            (1, status(303), ms(2)),
        ] {
            r.sent(0, class);
            r.done(0, class, outcome, latency);
        }
        r.close_interval(Duration::from_secs(1));
        r.sent(0, 1);
        r.done(0, 1, status(200), ms(5));
        let rep = r.report("t".into(), Duration::from_secs(2));
        assert_eq!(rep.series[0].good_by_class, [1, 1]);
        assert_eq!(rep.series[1].good_by_class, [0, 1]);
        let mix = |from, to| {
            rep.good_by_class_between(from, to)
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(mix(1.0, 2.0), [("a".to_string(), 0), ("b".to_string(), 1)]);
        assert_eq!(mix(0.0, 2.0), [("a".to_string(), 1), ("b".to_string(), 2)]);
        // Each of the four in time said it cost 100 us.
        let cpu = rep.good_server_cpu_between(0.0, 2.0);
        assert_eq!(cpu["a"].timed, 1);
        assert_eq!(cpu["b"].timed, 2);
        assert!((cpu["b"].cpu_s - 200e-6).abs() < 1e-12);
    }
}
