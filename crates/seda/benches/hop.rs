//! Cost of moving events through stages: one stage with different batch sizes, and pipelines of
//! several pass-through stages. Each iteration pushes events in and waits until the last stage
//! has handled them, so the figure is the full enqueue-dequeue-handle cost per event.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use seda::{Runtime, Sink, Stage};

/// Builds `hops` pass-through stages with the given batch size; the last counts events.
fn pipeline(rt: &Runtime, hops: usize, batch: usize, seen: Arc<AtomicU64>) -> Sink<u64> {
    let mut next = rt
        .stage(
            Stage::builder(format!("hop{hops}"))
                .threshold(0)
                .batch(batch)
                .handler(move |b: &mut Vec<u64>, _: &seda::Cx<'_>| {
                    seen.fetch_add(b.len() as u64, Ordering::Release);
                    b.clear();
                }),
        )
        .expect("stage");
    for i in (1..hops).rev() {
        let down = next.clone();
        next = rt
            .stage(
                Stage::builder(format!("hop{i}"))
                    .threshold(0)
                    .batch(batch)
                    .handler(move |b: &mut Vec<u64>, _: &seda::Cx<'_>| {
                        let _ = down.enqueue_many(std::mem::take(b));
                    }),
            )
            .expect("stage");
    }
    next
}

fn push_and_wait(entrance: &Sink<u64>, seen: &AtomicU64, n: u64) -> Duration {
    let target = seen.load(Ordering::Acquire) + n;
    let start = Instant::now();
    for i in 0..n {
        while entrance.enqueue(i).is_err() {
            std::hint::spin_loop();
        }
    }
    while seen.load(Ordering::Acquire) < target {
        std::hint::spin_loop();
    }
    start.elapsed()
}

fn enqueue_dequeue(c: &mut Criterion) {
    let mut group = c.benchmark_group("enqueue_dequeue");
    group.throughput(Throughput::Elements(1));
    for batch in [1usize, 8, 64] {
        let rt = Runtime::start().expect("runtime");
        let seen = Arc::new(AtomicU64::new(0));
        let entrance = pipeline(&rt, 1, batch, seen.clone());
        group.bench_with_input(BenchmarkId::new("batch", batch), &batch, |b, _| {
            b.iter_custom(|iters| push_and_wait(&entrance, &seen, iters));
        });
        rt.shutdown();
    }
    group.finish();
}

fn hops(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(1));
    for hops in [1usize, 3] {
        let rt = Runtime::start().expect("runtime");
        let seen = Arc::new(AtomicU64::new(0));
        let entrance = pipeline(&rt, hops, 64, seen.clone());
        group.bench_with_input(BenchmarkId::new("hops", hops), &hops, |b, _| {
            b.iter_custom(|iters| push_and_wait(&entrance, &seen, iters));
        });
        rt.shutdown();
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = enqueue_dequeue, hops
}
criterion_main!(benches);
