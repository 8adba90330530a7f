//! The README's "Deadlines" and "Criticality" snippets, compiled and run: each is copied here
//! line for line, and `the_readme_snippets_are_these` fails when the README's differ from
//! these copies, so what a user reads is code that builds.

use std::time::Duration;

use axum::{Extension, Router, body::Body, routing::get};
use seda_tower::{
    Cohorts, Criticality, CriticalityLayer, Deadlines, Level, RequestDeadline, SedaLayer,
    forward_criticality,
};

type Result = std::result::Result<(), Box<dyn std::error::Error>>;

// Kept as the README writes it, so that its lines match.
#[rustfmt::skip]
#[test]
fn deadlines_snippet() -> Result {
    let layer = SedaLayer::response_time(Duration::from_millis(200))?
        .http()
        // A request that brings no budget gets 2 s.
        .deadlines(Deadlines::new().default_budget(Duration::from_secs(2)))?;
    let app: Router = Router::new()
        .route("/", get(|Extension(deadline): Extension<RequestDeadline>| async move {
            let mut call = http::Request::get("http://backend/").body(()).unwrap();
            // Writes x-seda-deadline-ms: the budget left less 5 ms (and grpc-timeout if the
            // request came with one). Zero: the call cannot finish in time; better not make it.
            let left = deadline.propagate(call.headers_mut());
            format!("{} ms left", left.as_millis())
        }))
        .layer(layer);
    let _ = app;
    Ok(())
}

#[rustfmt::skip]
#[test]
fn criticality_snippet() -> Result {
    let edge = CriticalityLayer::new(|req: &http::Request<Body>| match req.uri().path() {
        p if p.starts_with("/prefetch") => Criticality::new(Level::Sheddable),
        p if p.starts_with("/browse") => Criticality::new(Level::SheddablePlus),
        _ => Criticality::default(), // critical
    })
    // Users of a level are cut a cohort at a time, re-drawn every minute ([CINNAMON]).
    .cohorts(Cohorts::default(), |req| req.headers().get("x-user").map(|v| v.as_bytes().to_vec()));

    let app: Router = Router::new()
        .route("/browse", get(|Extension(c): Extension<Criticality>| async move {
            // An outgoing call carries the level on: the next tier cuts the same requests first.
            let mut call = http::Request::get("http://backend/items").body(()).unwrap();
            let mut incoming = http::Extensions::new();
            incoming.insert(c);
            forward_criticality(&incoming, call.headers_mut());
            c.to_string()
        }))
        .layer(SedaLayer::prioritized(Duration::from_millis(100))?.http())
        .layer(edge); // outermost: it runs first
    let _ = app;
    Ok(())
}

/// The lines of the first ```rust block after `heading` in the README.
fn readme_block(heading: &str) -> Vec<&'static str> {
    let readme = include_str!("../../README.md");
    let Some(at) = readme.find(heading) else {
        return Vec::new();
    };
    readme[at..]
        .lines()
        .skip_while(|l| l.trim() != "```rust")
        .skip(1)
        .take_while(|l| l.trim() != "```")
        .collect()
}

#[test]
fn the_readme_snippets_are_these() {
    let here: Vec<&str> = include_str!("readme.rs").lines().map(str::trim).collect();
    for heading in ["## Deadlines", "## Criticality"] {
        let block = readme_block(heading);
        assert!(block.len() > 5, "no rust block under {heading}");
        for line in block.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
            // `use` lines are grouped differently here (one import for both snippets).
            if line.starts_with("use ") {
                continue;
            }
            assert!(
                here.contains(&line),
                "the README's {heading} snippet has a line not compiled here: {line}"
            );
        }
    }
}
