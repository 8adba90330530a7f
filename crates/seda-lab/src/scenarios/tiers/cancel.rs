//! Cross-tier termination, on real sockets through the three namespaces: requests that would
//! hold every worker of the back for 3 s are abandoned at the front, by their client leaving
//! or by their deadline passing there, and each tier is read for what it stopped.
//!
//! The front's handler is dropped when its client leaves or its seda layer cuts it at the
//! deadline; that drops its call to the middle, whose handler is dropped in turn, dropping its
//! call to the back; the back's front end cancels the request's token, and the hold gives its
//! worker up at its next safe point (every 5 ms). The back counts the cancellations; a short
//! request sent right after must then find a free worker (with the holds left running it
//! would wait 3 s and miss its deadline).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::stack::{BACK_WORKERS, BackCounts, Stack};

/// How long each abandoned request asks the back to hold, ms.
const LONG_HOLD_MS: u64 = 3000;
/// The budget of the requests cut by their deadline at the front, ms.
const SHORT_BUDGET_MS: u64 = 300;
/// The longest wait for a tier to show what it stopped.
const PATIENCE: Duration = Duration::from_secs(5);

/// What one way of abandoning requests stopped in each tier.
#[derive(Debug, Clone, Serialize)]
pub struct Cut {
    /// Requests abandoned at the front.
    pub requests: u64,
    /// The front's requests stopped: its handler dropped (client gone, or cut by its layer),
    /// or answered 504 from below (the budget it sent down ran out there first).
    pub front_stopped: u64,
    /// The middle's calls to the back dropped before their answer: its handler dropped with
    /// the call in flight, or the call cut at the budget the middle was sent.
    pub middle_dropped_calls: u64,
    /// The back's requests whose client (the middle) left.
    pub back_cancelled: u64,
    /// From the abandonment to the back's count of all of them, ms.
    pub back_stopped_ms: f64,
    /// A short request sent right after: its status and time, ms.
    pub probe_status: u16,
    pub probe_ms: f64,
}

/// The two cuts and the spent budget's door.
#[derive(Debug, Clone, Serialize)]
pub struct Termination {
    pub client_gone: Cut,
    pub deadline_passed: Cut,
    /// A request arriving with no budget left: its status, and the requests the front's
    /// handler (where a tier's work starts) saw of it.
    pub spent_status: u16,
    pub spent_reached_handler: u64,
}

fn send(addr: SocketAddr, path: &str, budget_ms: Option<u64>) -> Result<TcpStream> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("cannot connect to {addr}"))?;
    s.set_read_timeout(Some(PATIENCE))?;
    let budget = budget_ms.map_or(String::new(), |ms| format!("x-seda-deadline-ms: {ms}\r\n"));
    write!(s, "GET {path} HTTP/1.1\r\nHost: tiers\r\n{budget}\r\n")?;
    Ok(s)
}

/// The status of the answer on `s` (reading its head only).
fn status(s: &mut TcpStream) -> Result<u16> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        if s.read(&mut byte)? == 0 || head.len() > 256 {
            bail!("no status line");
        }
        head.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("bad status line `{}`", line.trim()))
}

/// Polls the back until `pred` holds of its counts since `before`; the wait.
fn wait_back(
    stack: &Stack,
    before: &BackCounts,
    pred: impl Fn(&BackCounts) -> bool,
) -> Result<Duration> {
    let start = Instant::now();
    loop {
        let now = BackCounts::of(&stack.back()?).since(before);
        if pred(&now) {
            return Ok(start.elapsed());
        }
        if start.elapsed() > PATIENCE {
            bail!("the back did not show it within {PATIENCE:?}: {now:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn probe(stack: &Stack) -> Result<(u16, f64)> {
    let start = Instant::now();
    let mut s = send(
        stack.front,
        &format!("/?ms={}", super::stack::HOLD_MS),
        None,
    )?;
    let code = status(&mut s)?;
    Ok((code, start.elapsed().as_secs_f64() * 1e3))
}

/// Abandons [`BACK_WORKERS`] long requests, by closing their connections (`budget_ms: None`)
/// or by a budget the front cuts them at.
fn cut(stack: &Stack, budget_ms: Option<u64>) -> Result<Cut> {
    let n = BACK_WORKERS as u64;
    let [f0, m0] = stack.tiers()?;
    let b0 = BackCounts::of(&stack.back()?);
    let path = format!("/?ms={LONG_HOLD_MS}");
    let mut streams = (0..n)
        .map(|_| send(stack.front, &path, budget_ms))
        .collect::<Result<Vec<_>>>()?;
    match budget_ms {
        None => {
            // Every worker of the back holds one, then the clients leave.
            wait_back(stack, &b0, |c| c.requests >= n)?;
            drop(streams);
        }
        Some(_) => {
            for s in &mut streams {
                let code = status(s)?;
                if code != 504 {
                    bail!("a request cut at its deadline was answered {code}, not 504");
                }
            }
        }
    }
    // From the abandonment (the last 504 read, or the connections closed).
    let stopped = wait_back(stack, &b0, |c| c.cancelled >= n)?;
    let (probe_status, probe_ms) = probe(stack)?;
    let [f1, m1] = stack.tiers()?;
    let b1 = BackCounts::of(&stack.back()?);
    Ok(Cut {
        requests: n,
        front_stopped: {
            let f = f1.since(&f0);
            f.cancelled + f.downstream_deadline
        },
        middle_dropped_calls: {
            let m = m1.since(&m0);
            m.cancelled_in_call + m.downstream_deadline
        },
        back_cancelled: b1.since(&b0).cancelled,
        back_stopped_ms: stopped.as_secs_f64() * 1e3,
        probe_status,
        probe_ms,
    })
}

/// Runs the three cases against a running stack.
pub fn run(stack: &Stack) -> Result<Termination> {
    let client_gone = cut(stack, None)?;
    let deadline_passed = cut(stack, Some(SHORT_BUDGET_MS))?;
    let [f0, _] = stack.tiers()?;
    let mut s = send(stack.front, "/?ms=20", Some(0))?;
    let spent_status = status(&mut s)?;
    let [f1, _] = stack.tiers()?;
    Ok(Termination {
        client_gone,
        deadline_passed,
        spent_status,
        spent_reached_handler: f1.since(&f0).requests,
    })
}
