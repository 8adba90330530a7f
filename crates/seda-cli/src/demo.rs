//! `seda demo`: the e-mail service on SQLite under a flash crowd, with and without overload
//! control: the lab's `mail-spike` scenario in its quick form, summarised.

use std::path::PathBuf;

use anyhow::{Context, Result};
use seda_lab::{scenario, scenarios};
use seda_sim::summary::RunSummary;
use serde::Deserialize;

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Where to write the report, the plots and result.json.
    #[arg(long, default_value = "target/seda-demo")]
    out: PathBuf,
}

pub fn run(args: &DemoArgs) -> Result<()> {
    println!(
        "seda demo: the e-mail service (SQLite) on CPU 0, emulated users on CPU 1; 3 users, then \
         a flash crowd, then 3 again.\nEach run starts a fresh server: no overload control, our \
         per-stage response-time controller (which also cuts long searches), and a fixed limit \
         of 128 connections.\nAbout a minute...\n"
    );
    let seda_bin = std::env::current_exe().context("cannot find the seda binary")?;
    let spike = scenarios::find("mail-spike")?;
    let ran = scenario::run(spike, &args.out, &seda_bin, true);
    let loaded = matches!(ran.verdict(), Some(seda_lab::health::Verdict::Inconclusive));
    let busy: Vec<String> = ran
        .health
        .iter()
        .flat_map(|h| h.loaded_because.iter().cloned())
        .collect();
    let outcome = ran.outcome.context("the demo could not run")?;
    let dir = args.out.join(ran.name);
    let target = outcome.config["spike"]["target_s"].as_f64().unwrap_or(0.0);
    let users = outcome.config["spike"]["spike_users"].as_u64().unwrap_or(0);
    println!("{users} users arrive at once; p90 response-time target {target} s.\n");
    println!(
        "{:<22} {:>12} {:>12} {:>10} {:>16}",
        "", "p90 (spike)", "p90 settled", "rejected", "users unanswered"
    );
    for (name, s) in &outcome.summary {
        let s = RunSummary::deserialize(s).context("mail-spike's summary")?;
        let secs = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2} s"));
        let pct = |x: Option<f64>| x.map_or("-".into(), |v| format!("{:.0}%", v * 100.0));
        println!(
            "{:<22} {:>12} {:>12} {:>10} {:>16}",
            label(name),
            secs(s.p90_admitted_s),
            secs(s.p90_admitted_after_settle_s),
            pct(Some(s.rejected_fraction)),
            pct(s.unanswered_clients_fraction)
        );
    }
    println!();
    for c in &outcome.checks {
        println!(
            "{} {}: {}",
            match (c.passed, c.enforced) {
                (true, _) => "ok  ",
                (false, true) => "FAIL",
                (false, false) => "miss",
            },
            c.claim,
            c.detail
        );
    }
    if loaded {
        println!(
            "\nThe machine was busy during this run, so these verdicts decide nothing (run it \
             again on a quiet machine): {}",
            busy.join("; ")
        );
    }
    println!(
        "\nreport: {}\nplots:  {} (and .svg), {}\ndata:   {}",
        dir.join("report.md").display(),
        dir.join("p90.png").display(),
        dir.join("rejected.png").display(),
        dir.join("result.json").display()
    );
    println!("more experiments: `seda lab list`");
    Ok(())
}

fn label(variant: &str) -> &str {
    match variant {
        "none" => "no control",
        "ours" => "our controller",
        "haproxy_maxconn_128" => "HAProxy maxconn 128",
        "own_cap_128" => "128-connection cap",
        other => other,
    }
}
