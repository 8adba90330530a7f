//! Page-cache eviction policies on the SPECweb99 request mix, cache = 1/16 of the file set.
//!
//! `cargo bench -p seda-http --bench cache_policy` prints, for each file-set size, the request
//! and byte hit ratios of LRU and S3-FIFO (two move-to-main thresholds) on the same trace.
//! Warm-up requests are not counted.

use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use seda_http::Policy;
use seda_http::statics::Cache;
use seda_testbed::specweb::{self, Mix};

struct Outcome {
    hit_ratio: f64,
    byte_hit_ratio: f64,
}

fn run(dirs: usize, policy: Policy, threshold: u8, warmup: usize, requests: usize) -> Outcome {
    let capacity = usize::try_from(specweb::total_bytes(dirs) / 16).unwrap_or(usize::MAX);
    let mut cache: Cache<()> = Cache::with_threshold(policy, capacity, threshold);
    let mix = Mix::new(dirs);
    let mut rng = SmallRng::seed_from_u64(42);
    let (mut hits, mut hit_bytes, mut total_bytes) = (0u64, 0u64, 0u64);
    for i in 0..warmup + requests {
        let (d, c, f) = mix.sample(&mut rng);
        let key = specweb::url(d, c, f);
        let size = specweb::file_size(c, f);
        let hit = cache.get(&key).is_some();
        if !hit {
            cache.insert(
                Arc::from(key),
                (),
                usize::try_from(size).unwrap_or(usize::MAX),
            );
        }
        if i >= warmup {
            total_bytes += size;
            if hit {
                hits += 1;
                hit_bytes += size;
            }
        }
    }
    Outcome {
        hit_ratio: hits as f64 / requests as f64,
        byte_hit_ratio: hit_bytes as f64 / total_bytes as f64,
    }
}

fn main() {
    let requests: usize = std::env::var("REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    println!(
        "SPECweb99 mix, cache = 1/16 of the file set, {requests} requests after as many warm-up"
    );
    println!(
        "{:>6} {:>10} {:>10} {:<22} {:>10} {:>10}",
        "dirs", "set_MB", "cache_MB", "policy", "hit_ratio", "byte_hit"
    );
    for dirs in [100, 680] {
        let set = specweb::total_bytes(dirs) as f64 / 1e6;
        for (name, policy, threshold) in [
            ("lru", Policy::Lru, 1),
            ("s3fifo (move at 1 hit)", Policy::S3fifo, 1),
            ("s3fifo (move at 2 hits)", Policy::S3fifo, 2),
        ] {
            let o = run(dirs, policy, threshold, requests, requests);
            println!(
                "{dirs:>6} {set:>10.1} {:>10.1} {name:<22} {:>10.4} {:>10.4}",
                set / 16.0,
                o.hit_ratio,
                o.byte_hit_ratio
            );
        }
    }
}
