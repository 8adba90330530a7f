//! The spike's table: one row per controller, printed the same by `seda sim spike` and by the
//! lab's spikes on the real system. A column appears when some row has its figure, so the
//! simulator's rows show its event rate and the lab's show timeouts and unanswered users.

use super::RunSummary;

/// One column: header, width, and the figure of a row as text (`None`: not measured).
struct Column {
    header: &'static str,
    width: usize,
    cell: fn(&RunSummary) -> Option<String>,
}

fn f3(x: Option<f64>) -> Option<String> {
    Some(x.map_or("-".into(), |v| format!("{v:.3}")))
}

const COLUMNS: [Column; 11] = [
    Column {
        header: "p90_s",
        width: 9,
        cell: |s| f3(s.p90_admitted_s),
    },
    Column {
        header: "p90_settled",
        width: 11,
        cell: |s| f3(s.p90_admitted_after_settle_s),
    },
    Column {
        header: "settle_s",
        width: 9,
        cell: |s| match (s.settle_time_s, s.settled) {
            (_, Some(false)) => Some("never".into()),
            (Some(t), _) => Some(format!("{t:.1}")),
            (None, _) => Some("-".into()),
        },
    },
    Column {
        header: "p90_last5",
        width: 9,
        cell: |s| s.p90_last_5s_of_spike_s.map(|v| format!("{v:.3}")),
    },
    Column {
        header: "goodput/s",
        width: 9,
        cell: |s| Some(format!("{:.1}", s.goodput_per_s)),
    },
    Column {
        header: "xC",
        width: 7,
        cell: |s| s.goodput_fraction_of_capacity.map(|v| format!("{v:.2}")),
    },
    Column {
        header: "refused",
        width: 9,
        cell: |s| Some(format!("{:.3}", s.rejected_fraction)),
    },
    Column {
        header: "timeout+err",
        width: 11,
        cell: |s| {
            s.timeout_fraction
                .map(|t| format!("{:.3}", t + s.error_fraction.unwrap_or(0.0)))
        },
    },
    Column {
        header: "unanswered",
        width: 10,
        cell: |s| s.unanswered_clients_fraction.map(|v| format!("{v:.3}")),
    },
    Column {
        header: "max_s",
        width: 8,
        cell: |s| s.max_admitted_s.map(|v| format!("{v:.2}")),
    },
    Column {
        header: "events/s",
        width: 10,
        cell: |s| s.events_per_s.map(|v| format!("{v:.2e}")),
    },
];

/// Width of the first column, the run's name.
const NAME_WIDTH: usize = 24;

/// The table of `rows` (name, summary), with its header line.
pub fn spike_table(rows: &[(&str, &RunSummary)]) -> String {
    let shown: Vec<&Column> = COLUMNS
        .iter()
        .filter(|c| rows.iter().any(|(_, s)| (c.cell)(s).is_some()))
        .collect();
    let mut out = format!("{:<NAME_WIDTH$}", "controller");
    for c in &shown {
        out += &format!(" {:>w$}", c.header, w = c.width);
    }
    out += "\n";
    for (name, s) in rows {
        out += &format!("{name:<NAME_WIDTH$}");
        for c in &shown {
            let cell = (c.cell)(s).unwrap_or_else(|| "-".into());
            out += &format!(" {cell:>w$}", w = c.width);
        }
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_figures_measured() {
        let mut sim = RunSummary::new(1.0);
        sim.settling(60.0, 50.0, None);
        sim.events_per_s = Some(1.5e6);
        let t = spike_table(&[("vegas", &sim)]);
        assert!(t.contains("events/s") && !t.contains("unanswered"), "{t}");
        assert!(t.contains("never") && t.contains("1.50e6"), "{t}");
        let mut lab = RunSummary::new(1.0);
        lab.unanswered_clients_fraction = Some(0.25);
        let t = spike_table(&[("ours", &lab)]);
        assert!(t.contains("0.250") && !t.contains("events/s"), "{t}");
    }
}
