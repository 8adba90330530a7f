//! The SPECweb99 mix against nginx serving the generated file set.

use std::sync::Arc;
use std::time::Duration;

use seda_load::workload::SpecWeb;

use crate::common::*;

#[test]
fn specweb_mix_against_nginx() {
    let Some(nginx) = Nginx::start("specweb_mix_against_nginx", |www| {
        SpecWeb::write_files(&www.join("sw"), 2).unwrap();
    }) else {
        return;
    };
    let mut cfg = closed(
        &nginx.url("/sw/"),
        4,
        Duration::from_millis(1),
        Duration::from_millis(1500),
    );
    cfg.workload = Arc::new(SpecWeb::new("/sw", 2).unwrap());
    let r = seda_load::run(cfg).unwrap();
    assert_counts_add_up(&r);
    let c = r.summary.counts;
    assert!(c.completed > 300, "{c:?}");
    // Every generated URL exists.
    assert_eq!(
        r.summary.statuses.keys().collect::<Vec<_>>(),
        ["200"],
        "{:?}",
        r.summary.statuses
    );
    let by_class: Vec<u64> = r.classes.iter().map(|k| k.counts.completed).collect();
    assert!(
        by_class[1] > by_class[0] && by_class[0] > by_class[2] && by_class[2] > by_class[3],
        "{by_class:?}"
    );
    // Mean body size over classes 0..2 is a few KB (class 3 is rare and up to 900 KB).
    let small: u64 = r.classes[..3].iter().map(|k| k.counts.bytes).sum();
    let n: u64 = by_class[..3].iter().sum();
    let mean = small as f64 / n as f64;
    assert!((2_000.0..12_000.0).contains(&mean), "mean body {mean}");
}
