//! `mail-search` (SERT06 on a real service): the e-mail service under a spike of users whose
//! searches turn long (full scans of the bodies of the largest mailboxes,
//! [`crate::long_search`]);
//! admission control alone against admission plus early termination of searches.
//!
//! SERT06's service is a thread pool where a long request holds a worker every request needs;
//! ours runs every request-type stage on one shared pool of [`WORKERS`] workers (a runtime
//! domain) to be that service. Both variants have our per-stage admission controller
//! (`response_time_tuned`, 1 s p90 target, the slides' limit); the second also makes the search
//! stage terminable with SERT's adaptive threshold, cutting a search inside SQLite (its
//! interrupt handle) or while it holds the emulated processor, answering it 503 `x-seda-reject: terminated`.
//! Only searches are cut (read-only): logins and writes are never, so the store must come out
//! of the run whole, which its audit checks after each server exits.
//!
//! Scale: the lab's emulated processor (`seda serve mail --cores`, see `mail-spike`), so a
//! page view costs one to a few milliseconds and a search of one of the largest mailboxes a
//! few hundred (its cost grows with the mailbox: `seda_mail::cost`): the slides' 5 ms and
//! 500 ms. The quick form is 2 s of 3 users, an 11 s spike of 300, 1 s of 3 again, with the
//! think time and the wait after a rejection halved as in `mail-spike`; the full form 20 s,
//! 120 s of 400 users, 20 s. A cut search lets go of the processor at once (a real
//! processor's handler would have been cut at the same moment).
//!
//! Checked: the terminator cut searches, the store's audit is clean after each variant, and
//! more requests complete within 1 s with termination (SERT06's benefit), at SERT's goal of
//! 85% within 1 s (DESIGN's, shared with `sert-shift`). Throughput and mean response time are
//! observed: they follow how many users wait out a rejection, and admission alone, which
//! serves fewer requests, may well answer them sooner on average.

use seda_control::catalogue::terminators;
use std::time::Duration;

use anyhow::Result;
use seda::TerminateConfig;
use seda_load::Report;
use seda_mail::RequestKind;
use seda_mail::store::Audit;
use seda_sim::summary::RunSummary;
use serde_json::{Map, Value, json};

use crate::hold::{self, increase, window_summary};
use crate::long_search::{self, LongSearches, MISSING_PHRASE};
use crate::mail::{
    self, CORPUS_USERS, Control, MailServer, ServeOptions, audit_check, audit_clean,
};
use crate::outcome::{Check, Outcome};
use crate::plot::LineChart;
use crate::poll::{StatsPoller, stage_series};
use crate::scenarios::sert_shift::{GOAL_WITHIN_1S, PAPER_WITHIN_1S, run_data};
use crate::spike::Spike;
use crate::{Lab, Scenario};

/// The scenario.
pub struct MailSearch;

/// Workers of the shared pool every request type runs on.
const WORKERS: usize = 8;
/// The admission controller's p90 target, and the slides' "within 1 s".
const TARGET_S: f64 = 1.0;
/// Accounts the users log in as: the corpus's largest mailboxes.
const ACCOUNTS: usize = 8;

/// The variants: their names and whether searches are terminable.
const VARIANTS: [(&str, bool); 2] = [("admission", false), ("admission+termination", true)];

/// SERT's settings for searches (SERT06's threshold `LB + F(p) (UB - LB)`): never below
/// 0.25 s, where a search of the headers under a busy shared pool may still be running, and up
/// to 3 s when nothing is lost; loss counted over `window` stats periods of 1 s.
fn sert_terminator(window: usize) -> TerminateConfig {
    TerminateConfig::new(
        terminators::SERT,
        [
            ("lower_s", 0.25),
            ("upper_s", 3.0),
            ("low_water", 0.02),
            ("high_water", 0.12),
            ("alpha", 2.0),
            ("window", window as f64),
        ],
    )
}

/// The spike: 3 users, then `users` for the spike, then 3 again. The quick form halves the
/// time scale (think time and wait after a rejection) as `mail-spike` does.
fn spike(lab: &Lab) -> Spike {
    Spike {
        base_users: 3,
        spike_users: lab.pick(300, 400),
        before_s: lab.pick(2.0, 20.0),
        spike_s: lab.pick(11.0, 120.0),
        after_s: lab.pick(1.0, 20.0),
        target_s: TARGET_S,
        time_scale: lab.pick(0.5, 1.0),
    }
}

struct Run {
    name: &'static str,
    summary: RunSummary,
    report: Report,
    threshold: Vec<(f64, f64)>,
    audit: Audit,
}

impl Scenario for MailSearch {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "mail-search"
    }

    fn about(&self) -> &'static str {
        "e-mail users spike and their searches turn long (full scans of the largest \
         mailboxes' bodies): admission control alone vs admission plus SERT's termination of \
         searches; the store audited after (SERT06)"
    }

    /// The terminated share stays in the summary and the report, not here: it counts about 50
    /// searches in a quick run's measured 8 s (2.5% of about 2,000 requests), so counting
    /// noise alone moves it about 14% (one standard deviation) and five runs read 0.017-0.026
    /// on 2026-12-03; the share within 1 s it buys counts every request.
    fn headline(&self) -> &'static [&'static str] {
        &[
            "admission/within_1s_fraction",
            "admission+termination/within_1s_fraction",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let spike = spike(lab);
        let window = lab.pick(3, 10);
        let accounts = long_search::largest_mailboxes(CORPUS_USERS, ACCOUNTS);
        let before = mail::corpus_audit(lab)?;
        let mut runs = Vec::new();
        for (name, terminate) in VARIANTS {
            let options = ServeOptions {
                shared_pool: Some(WORKERS),
                terminate_search: terminate.then(|| sert_terminator(window)),
                ..ServeOptions::default()
            };
            runs.push(run_variant(lab, name, &options, &spike, &accounts)?);
        }
        plots(lab, &runs)?;
        let checks = checks(&runs, &before);
        let mut summary = Map::new();
        for r in &runs {
            summary.insert(r.name.to_string(), r.summary.to_json());
        }
        Ok(Outcome {
            paper: "SERT06 (slides \"Size Distribution Shift\", \"CDF of Response Time\"), on the \
                    e-mail service"
                .into(),
            config: json!({
                "service": "seda serve mail, SQLite, every request-type stage on one shared pool",
                "workers": WORKERS,
                "cores": mail::CORES,
                "admission": Control::ours(TARGET_S).describe(),
                "spike": spike.describe(),
                "accounts": accounts.iter().map(|(u, n)| json!({"user": u, "messages": n})).collect::<Vec<_>>(),
                "long_search": format!("GET /search?q={MISSING_PHRASE}&in=body during the spike, in place of the model's searches"),
                "sert": sert_terminator(window),
                "corpus_users": CORPUS_USERS,
            }),
            summary,
            data: crate::outcome::by_name(runs.iter().map(|r| {
                let mut data = run_data(&r.report, &r.threshold);
                data.insert("audit".into(), audit_json(&r.audit));
                (r.name, Value::Object(data))
            })),
            report: markdown(&runs, &spike, &before, &accounts),
            checks,
        })
    }
}

fn run_variant(
    lab: &Lab,
    name: &'static str,
    options: &ServeOptions,
    spike: &Spike,
    accounts: &[(u64, i64)],
) -> Result<Run> {
    let control = Control::ours(TARGET_S);
    let server = MailServer::start_with(lab, name, &control, options)?;
    let total = spike.before_s + spike.spike_s + spike.after_s;
    let mut cfg = mail::users(
        server.addr,
        spike.base_users,
        Duration::from_secs_f64(total),
        spike.time_scale,
    )?;
    cfg.schedule = Some(spike.schedule()?);
    cfg.workload = std::sync::Arc::new(LongSearches::new(
        accounts.iter().map(|(u, _)| *u).collect(),
        CORPUS_USERS,
        spike.onset_s(),
        spike.end_s(),
    ));
    cfg.goodput_target = Duration::from_secs_f64(TARGET_S);
    let poller = StatsPoller::start(server.admin, Duration::from_millis(500));
    let report = lab.load(cfg);
    let samples = poller.stop();
    let audit = server.stop_audited(lab, name);
    let report = report?;
    let audit = audit?;
    let stage = RequestKind::Search.stage_name();
    let (from, to) = (spike.onset_s(), spike.end_s());
    let terminated = increase(&stage_series(&samples, &stage, hold::terminated), from, to);
    let threshold = stage_series(&samples, &stage, hold::termination_threshold_s);
    let summary = window_summary(name, &report, from, to, terminated);
    lab.log(format!(
        "{name}: {:.1}/s during the spike, mean {:.3} s, {:.1}% within 1 s, {:.1}% terminated; \
         audit {} messages, folder counts {}, {} bad folders",
        summary.throughput_per_s.unwrap_or(0.0),
        summary.extra_f64("mean_response_s").unwrap_or(f64::NAN),
        summary.extra_f64("within_1s_fraction").unwrap_or(f64::NAN) * 100.0,
        summary.extra_f64("terminated_fraction").unwrap_or(f64::NAN) * 100.0,
        audit.messages,
        audit.folder_counts,
        audit.bad_folders,
    ));
    Ok(Run {
        name,
        summary,
        report,
        threshold,
        audit,
    })
}

fn g(r: &Run, key: &str) -> f64 {
    r.summary.extra_f64(key).unwrap_or(f64::NAN)
}

fn throughput(r: &Run) -> f64 {
    r.summary.throughput_per_s.unwrap_or(f64::NAN)
}

/// What a short run decides (enforced) and what it only observes.
fn checks(runs: &[Run], before: &Audit) -> Vec<Check> {
    let (ac, term) = (&runs[0], &runs[1]);
    // The share within 1 s during the spike: admission alone, then with termination.
    let (ac_1s, term_1s) = (g(ac, "within_1s_fraction"), g(term, "within_1s_fraction"));
    let mut out = vec![
        // SERT06's benefit, the claim issue 55 asks to enforce at its goal: ahead of admission
        // alone, and at SERT's share within 1 s. Nearly all the misses are 503s (the report's
        // table by request type), most of them logins refused while the spike stands; late
        // replies are almost none.
        Check::new(
            "with termination of searches, more requests complete within 1 s during the spike \
             than with admission control alone",
            term_1s > ac_1s,
            format!("{:.1}% vs {:.1}%", term_1s * 100.0, ac_1s * 100.0),
        )
        .paper(format!(
            "SERT06 slides, synthetic service: {:.1}% vs {:.1}%",
            PAPER_WITHIN_1S.1 * 100.0,
            PAPER_WITHIN_1S.0 * 100.0
        )),
        Check::new(
            format!(
                "with termination of searches >= {:.0}% of requests complete within 1 s during \
                 the spike",
                GOAL_WITHIN_1S * 100.0
            ),
            term_1s >= GOAL_WITHIN_1S,
            format!(
                "{:.1}% (admission alone {:.1}%)",
                term_1s * 100.0,
                ac_1s * 100.0
            ),
        )
        .paper(format!(
            "SERT06 slides: {:.1}% with SERT",
            PAPER_WITHIN_1S.1 * 100.0
        )),
        Check::new(
            "the terminator cuts searches during the spike",
            g(term, "terminated_fraction") > 0.0,
            format!(
                "{:.2}% of requests terminated",
                g(term, "terminated_fraction") * 100.0
            ),
        ),
    ];
    for r in runs {
        out.push(audit_check(r.name, &r.audit, before));
    }
    out.push(Check::observed(
        "with termination, throughput during the spike is higher than admission alone's",
        throughput(term) > throughput(ac),
        format!("{:.1}/s vs {:.1}/s", throughput(term), throughput(ac)),
    ));
    out.push(Check::observed(
        "with termination, the mean response time during the spike is lower",
        g(term, "mean_response_s") < g(ac, "mean_response_s"),
        format!(
            "{:.3} s vs {:.3} s",
            g(term, "mean_response_s"),
            g(ac, "mean_response_s")
        ),
    ));
    out
}

fn audit_json(a: &Audit) -> Value {
    json!({
        "users": a.users,
        "messages": a.messages,
        "folder_counts": a.folder_counts,
        "bad_folders": a.bad_folders,
    })
}

fn plots(lab: &Lab, runs: &[Run]) -> Result<()> {
    let reports = || runs.iter().map(|r| (r.name, &r.report));
    lab.plot("throughput", &LineChart::throughput(reports()))?;
    let within_1s = LineChart::over_runs(
        "Share of requests completed within 1 s",
        "fraction",
        reports(),
        |i| (i.counts.sent > 0).then(|| i.counts.good as f64 / i.counts.sent as f64),
    );
    lab.plot("within_1s", &within_1s)?;
    if let Some(r) = runs.iter().find(|r| !r.threshold.is_empty()) {
        let title = "SERT's termination threshold on mail.search";
        let chart = LineChart::one_line(title, "seconds", r.name, r.threshold.clone());
        lab.plot("threshold", &chart)?;
    }
    Ok(())
}

fn markdown(runs: &[Run], spike: &Spike, before: &Audit, accounts: &[(u64, i64)]) -> String {
    let mut md = format!(
        "{} e-mail users (3 before and after) for {:.0} s from {:.0} s, logged in as the {} \
         largest mailboxes of the corpus ({} to {} messages); during the spike each search reads \
         every body of the mailbox. Every request type runs on one shared pool of {WORKERS} \
         workers on the lab's emulated processor of {} core(s). Figures over the spike:\n\n\
         | variant | throughput/s | mean response s | within 1 s | terminated | throughput loss | audit |\n\
         |---|---|---|---|---|---|---|\n",
        spike.spike_users,
        spike.spike_s,
        spike.onset_s(),
        accounts.len(),
        accounts.last().map_or(0, |a| a.1),
        accounts.first().map_or(0, |a| a.1),
        mail::CORES,
    );
    for r in runs {
        md += &format!(
            "| {} | {:.1} | {:.3} | {:.1}% | {:.2}% | {:.1}% | {} |\n",
            r.name,
            throughput(r),
            g(r, "mean_response_s"),
            g(r, "within_1s_fraction") * 100.0,
            g(r, "terminated_fraction") * 100.0,
            g(r, "throughput_loss") * 100.0,
            if audit_clean(&r.audit, before) {
                "clean"
            } else {
                "**not clean**"
            },
        );
    }
    md += &format!(
        "\nThe store before: {} users, {} messages. SERT06's slides (a synthetic service, 5 ms \
         and 500 ms requests): 81.7% within 1 s with SERT against 45.3% with admission control \
         alone. Here the throughput loss counts rejected and terminated requests alike; a \
         terminated search is answered 503 with `Retry-After` and the user retries it after \
         the wait, as after a rejection.\n\n\
         ![throughput](throughput.svg)\n![within 1 s](within_1s.svg)\n![threshold](threshold.svg)\n",
        before.users, before.messages
    );
    md += &type_table(runs);
    md
}

/// Where each variant's misses come from, by request type, over the whole run (the spike is
/// nearly all of it): requests sent, answered within 1 s, answered 503 (refused by admission,
/// or a search terminated or refused as predicted), answered later than 1 s, and the p90 of
/// the answered.
fn type_table(runs: &[Run]) -> String {
    let mut md = String::from(
        "\nBy request type, over the whole run:\n\n\
         | variant | type | sent | within 1 s | 503 | later than 1 s | p90 ms |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        for c in r.report.classes.iter().filter(|c| c.counts.sent > 0) {
            let k = &c.counts;
            md += &format!(
                "| {} | {} | {} | {} | {} | {} | {:.0} |\n",
                r.name,
                c.name,
                k.sent,
                k.good,
                k.rejected,
                k.completed.saturating_sub(k.good),
                c.latency.p90_ms
            );
        }
    }
    md
}
