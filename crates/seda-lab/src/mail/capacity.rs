//! The mail service's capacity by design: an emulated processor's cores over the stated cost
//! of a request, priced on the mix a run served.

use std::collections::BTreeMap;

use seda_mail::RequestKind;
use serde_json::{Value, json};

/// The mail service's capacity, by design: the emulated processor's `cores` core-seconds of work
/// a second, over the stated cost of a request (`seda_mail::cost`). Stated before the run, it
/// does not move with the machine's speed, and a run's goodput is the stated work of the
/// requests it answered within the target per second of the processor's cores: a run that
/// wastes the processor on refused, cut or late work reads under 1, and nothing a handler
/// costs this machine in real CPU changes either figure (that real CPU is reported beside,
/// and must stay well under a core for the design to hold).
///
/// Request types cost very different amounts (a search scans its mailbox; showing a message
/// reads one row), so a run is priced on the mix it served: [`on_mix`](Self::on_mix) turns
/// the processor's cores into requests per second of that mix.
#[derive(Debug, Clone, PartialEq)]
pub struct MailCapacity {
    /// The emulated processor's cores.
    pub cores: f64,
    /// Requests per second of the user model's long-run mix: the scale scenarios size their
    /// loads by.
    pub per_s: f64,
    /// Each request type's stated cost on the corpus's mean mailbox, seconds (the price of a
    /// type a run served within the target without stating its requests' costs).
    pub cost_s: BTreeMap<String, f64>,
    /// The user model's long-run mix, requests per 10,000.
    pub mix: BTreeMap<String, u64>,
}

impl MailCapacity {
    /// The capacity of the service on an emulated processor of `cores` cores, from the cost
    /// table and the user model's stationary mix.
    pub fn designed(cores: f64) -> MailCapacity {
        let table = seda_mail::cost::CostTable::arashi();
        let shares = seda_testbed::mail::user_model::stationary_mix();
        let mut cost_s = BTreeMap::new();
        let mut mix = BTreeMap::new();
        for kind in RequestKind::ALL {
            cost_s.insert(kind.name().to_string(), table.mean_cost(kind).as_secs_f64());
            mix.insert(
                kind.name().to_string(),
                (shares[kind.index()] * 10_000.0).round() as u64,
            );
        }
        let mut cap = MailCapacity {
            cores,
            per_s: 0.0,
            cost_s,
            mix,
        };
        cap.per_s = cap.on_mix(&cap.mix.clone(), &BTreeMap::new());
        cap
    }

    /// The mean stated cost of a request of `mix`, each type priced by `run` (a run's own
    /// costs) or else by the table's mean; `None` when the mix is empty or has a type neither
    /// prices.
    pub fn mean_cost(
        &self,
        mix: &BTreeMap<String, u64>,
        run: &BTreeMap<String, f64>,
    ) -> Option<f64> {
        let n: u64 = mix.values().sum();
        if n == 0 {
            return None;
        }
        let mut work = 0.0;
        for (kind, &count) in mix.iter().filter(|(_, c)| **c > 0) {
            let cost = run.get(kind).or_else(|| self.cost_s.get(kind))?;
            work += count as f64 * cost;
        }
        Some(work / n as f64)
    }

    /// Capacity in requests per second of `mix` priced by `run`: the requests of the mix the
    /// processor's cores complete in a second. Falls back on [`per_s`](Self::per_s) when the
    /// mix cannot be priced.
    pub fn on_mix(&self, mix: &BTreeMap<String, u64>, run: &BTreeMap<String, f64>) -> f64 {
        match self.mean_cost(mix, run) {
            Some(cost) if cost > 0.0 => self.cores / cost,
            _ => self.per_s,
        }
    }

    /// How it was set, for reports.
    pub fn describe(&self) -> Value {
        json!({
            "cores": self.cores,
            "model_mix_per_s": self.per_s,
            "cost_s_per_type": self.cost_s,
            "model_mix_per_10000": self.mix,
            "how": HOW,
        })
    }
}

/// One sentence for reports: how the mail service's capacity is set and its goodput priced.
pub const HOW: &str = "capacity is by design: the service runs on an emulated processor \
    (`seda serve mail --cores`) whose cores each do one second of work a second, and each \
    request, after its real work, holds it for a stated cost (WC03's Arashi scaled so that \
    showing a message costs 1 ms; a search grows with its mailbox: `seda_mail::cost`). \
    goodput / capacity is the stated work of the requests answered within the target per \
    second of the processor's cores, each priced at the cost the service states for it (its \
    `Server-Timing: cpu` header). The machine's speed moves neither; the server's real CPU is \
    reported beside";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_follows_the_cost_of_the_mix() {
        let cap = MailCapacity {
            cores: 1.0,
            per_s: 100.0,
            cost_s: [("login".to_string(), 0.004), ("list".to_string(), 0.001)].into(),
            mix: [("login".to_string(), 50), ("list".to_string(), 50)].into(),
        };
        let none = BTreeMap::new();
        // Lists cost 1 ms: a core completes 1000 a second.
        let lists = [("list".to_string(), 10)].into();
        assert!((cap.on_mix(&lists, &none) - 1000.0).abs() < 1e-9);
        // Half logins: 2.5 ms a request, 400/s.
        assert!((cap.on_mix(&cap.mix, &none) - 400.0).abs() < 1e-9);
        // The run's own price wins: lists at 4 ms in this run, 250/s.
        let run = [("list".to_string(), 0.004)].into();
        assert!((cap.on_mix(&lists, &run) - 250.0).abs() < 1e-9);
        // A type nobody priced: the model mix's rate.
        assert_eq!(
            cap.on_mix(&[("search".to_string(), 3)].into(), &none),
            100.0
        );
        assert_eq!(cap.on_mix(&BTreeMap::new(), &none), 100.0);
        // Two cores complete twice as many.
        let two = MailCapacity { cores: 2.0, ..cap };
        assert!((two.on_mix(&lists, &none) - 2000.0).abs() < 1e-9);
    }

    #[test]
    fn the_designed_capacity_is_the_cores_over_the_model_mixs_cost() {
        let cap = MailCapacity::designed(1.0);
        // About 2 ms a request on the user model's mix (module docs of `seda_mail::cost`).
        assert!((400.0..600.0).contains(&cap.per_s), "{}", cap.per_s);
        let n = cap.mix.values().sum::<u64>();
        assert!((9_995..=10_005).contains(&n), "{n}");
        let mean = cap.mean_cost(&cap.mix, &BTreeMap::new()).unwrap();
        assert!((cap.per_s * mean - 1.0).abs() < 1e-9);
        let two = MailCapacity::designed(2.0);
        assert!((two.per_s - 2.0 * cap.per_s).abs() < 1e-6);
    }
}
