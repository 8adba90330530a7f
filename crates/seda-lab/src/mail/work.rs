//! What each request type cost the mail service over a run's measured window: the handlers'
//! CPU, the emulated processor's work and the server's real CPU, from two stats snapshots.

use std::collections::BTreeMap;

use anyhow::Result;
use seda_load::{LoadConfig, Report};
use seda_mail::{RequestKind, ServiceStats};

use super::MailServer;
use crate::admin::StatsDocument;
use crate::lab::Lab;

/// What one request type's handlers did, cumulative or between two snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TypeWork {
    /// Handler CPU seconds, whether the requests were answered or not.
    pub cpu_s: f64,
    /// The part of `cpu_s` spent on requests the handlers answered.
    pub answered_cpu_s: f64,
    /// Requests answered.
    pub answered: u64,
}

impl TypeWork {
    /// What was done between `earlier` and this reading.
    fn since(self, earlier: TypeWork) -> TypeWork {
        TypeWork {
            cpu_s: self.cpu_s - earlier.cpu_s,
            answered_cpu_s: self.answered_cpu_s - earlier.answered_cpu_s,
            answered: self.answered.saturating_sub(earlier.answered),
        }
    }
}

/// Each request type's [`TypeWork`], from the mail service's section of a stats snapshot.
fn handler_totals(stats: &ServiceStats) -> BTreeMap<String, TypeWork> {
    RequestKind::ALL
        .iter()
        .filter_map(|&k| {
            let name = k.name();
            Some((
                name.to_string(),
                TypeWork {
                    cpu_s: *stats.handler_cpu_s.get(name)?,
                    answered_cpu_s: *stats.answered_cpu_s.get(name)?,
                    answered: *stats.answered.get(name)?,
                },
            ))
        })
        .collect()
}

/// The mail service's section of a stats document (`None`: the server is another service).
fn service_stats(stats: &StatsDocument) -> Option<ServiceStats> {
    stats.service_as().ok().flatten()
}

/// What each request type cost the mail service between two stats snapshots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    /// Per type, what its handlers did.
    pub per_type: BTreeMap<String, TypeWork>,
    /// Real CPU seconds the whole server used meanwhile (`None`: not measured).
    pub server_cpu_s: Option<f64>,
    /// Core-seconds of work the emulated processor did meanwhile (`None`: not in the
    /// snapshots).
    pub busy_core_s: Option<f64>,
    /// Wall seconds between the snapshots (`None`: not measured).
    pub window_s: Option<f64>,
}

impl Work {
    /// The difference between the snapshots `before` and `after` (`None`: a snapshot failed).
    pub fn between(before: Option<&StatsDocument>, after: Option<&StatsDocument>) -> Work {
        let (Some(before), Some(after)) = (
            before.and_then(service_stats),
            after.and_then(service_stats),
        ) else {
            return Work::default();
        };
        let busy = |s: &ServiceStats| s.processor.map(|p| p.busy_core_s);
        let earlier = handler_totals(&before);
        let per_type = handler_totals(&after)
            .into_iter()
            .map(|(k, w)| {
                let earlier = earlier.get(&k).copied().unwrap_or_default();
                (k, w.since(earlier))
            })
            .collect();
        Work {
            per_type,
            busy_core_s: busy(&after).zip(busy(&before)).map(|(a, b)| a - b),
            ..Work::default()
        }
    }

    /// Handler CPU per answered request of each type that answered any. The work of requests
    /// cut or given up is not in it: it bought no answer, and charged to the answered ones it
    /// priced a search at 62 ms where an answered one took 11-28 (`mail-users`, 1024 users).
    pub fn cost_s(&self) -> BTreeMap<String, f64> {
        self.per_type
            .iter()
            .filter(|(_, w)| w.answered > 0 && w.answered_cpu_s > 0.0)
            .map(|(k, w)| (k.clone(), w.answered_cpu_s / w.answered as f64))
            .collect()
    }

    /// Handler CPU seconds of every type.
    pub fn cpu_s(&self) -> f64 {
        self.per_type.values().map(|w| w.cpu_s).sum()
    }
}

/// Runs `config` against the mail `server`: the report, and what the server's handlers, its
/// processor and the server as a whole did over the report's measured window (after the
/// warm-up) only, as the report's counts cover it.
pub fn load_with_work(
    lab: &Lab,
    server: &MailServer,
    config: LoadConfig,
) -> Result<(Report, Work)> {
    let warmup = config.warmup;
    let snapshot = || {
        let stats = crate::admin::stats(server.admin)
            .map_err(|e| lab.log(format!("cannot read the server's stats: {e:#}")))
            .ok();
        (std::time::Instant::now(), server.cpu_seconds(), stats)
    };
    let (report, before) = std::thread::scope(|s| {
        let before = s.spawn(|| {
            std::thread::sleep(warmup);
            snapshot()
        });
        let report = lab.load(config);
        (report, before.join().ok())
    });
    let report = report?;
    let Some((t_before, cpu_before, before)) = before else {
        return Ok((report, Work::default()));
    };
    let (t_after, cpu_after, after) = snapshot();
    let mut work = Work::between(before.as_ref(), after.as_ref());
    work.server_cpu_s = cpu_after.zip(cpu_before).map(|(a, b)| a - b);
    work.window_s = Some(t_after.duration_since(t_before).as_secs_f64());
    Ok((report, work))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_the_difference_of_two_snapshots() {
        // A login's handlers ran 1 s more, 0.5 s of it on the 100 logins they answered; the
        // processor did 1.5 core-seconds of work.
        let snap = |cpu: f64, answered_cpu: f64, answered: u64, busy: f64| {
            let login = |v| BTreeMap::from([("login".to_string(), v)]);
            let service = ServiceStats {
                handler_cpu_s: login(cpu),
                answered_cpu_s: login(answered_cpu),
                answered: BTreeMap::from([("login".to_string(), answered)]),
                processor: Some(seda::processor::ProcessorSnapshot {
                    cores: 1.0,
                    busy_core_s: busy,
                    running: 0,
                }),
            };
            StatsDocument {
                frontend: None,
                runtime: None,
                service: Some(serde_json::to_value(service).unwrap()),
                layers: None,
            }
        };
        let w = Work::between(
            Some(&snap(1.0, 1.0, 10, 2.0)),
            Some(&snap(2.0, 1.5, 110, 3.5)),
        );
        let login = w.per_type["login"];
        assert_eq!((login.cpu_s, login.answered), (1.0, 100));
        assert!((w.cost_s()["login"] - 0.005).abs() < 1e-12);
        assert!((w.cpu_s() - 1.0).abs() < 1e-12);
        assert_eq!(w.busy_core_s, Some(1.5));
        assert_eq!(
            Work::between(None, Some(&snap(1.0, 1.0, 1, 0.0))),
            Work::default()
        );
    }
}
