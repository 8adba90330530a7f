//! The `criticality` scenario's traffic: 20% critical, 40% sheddable-plus, 40% sheddable, each
//! request from one of [`USERS`] users (the edge draws its cohort from the user), each
//! claiming to be critical-plus in its own header, which the edge must ignore.

use std::sync::Arc;

use seda_load::workload::{Reply, Request, Session, Workload};

/// The users the requests come from.
pub const USERS: u64 = 1000;

/// The classes, in the order of [`Mix::classes`]: route, share of the requests.
pub const CLASSES: [(&str, &str, f64); 3] = [
    ("critical", "/critical", 0.2),
    ("sheddable_plus", "/browse", 0.4),
    ("sheddable", "/prefetch", 0.4),
];

/// The workload.
#[derive(Debug, Clone, Copy)]
pub struct Mix;

impl Workload for Mix {
    fn classes(&self) -> Vec<String> {
        CLASSES
            .iter()
            .map(|(name, _, _)| name.to_string())
            .collect()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(MixSession {
            paths: CLASSES.map(|(_, path, _)| Arc::from(path)),
            state: seed ^ 0x5eda_c817_1ca1_u64,
        })
    }
}

struct MixSession {
    paths: [Arc<str>; 3],
    state: u64,
}

impl Session for MixSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let u = crate::hold::uniform(&mut self.state);
        let class = if u < CLASSES[0].2 {
            0
        } else if u < CLASSES[0].2 + CLASSES[1].2 {
            1
        } else {
            2
        };
        let user = (crate::hold::uniform(&mut self.state) * USERS as f64) as u64;
        let mut r = Request::get(self.paths[class].clone(), class);
        r.headers = vec![
            ("x-user".into(), format!("user{user}")),
            ("x-seda-criticality".into(), "critical_plus".into()),
        ];
        r
    }
}
