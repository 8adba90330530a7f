//! Ours: the window a tier keeps over everything below it, fed by what the tiers below answer.
//!
//! A refusal anywhere below (a 503 relayed up, with the `Retry-After` of the tier that refused)
//! or a missed deadline shrinks the window; a success grows it (SSM04's AIMD window,
//! `seda_control::client::AimdWindow`). The tier takes a slot *before its own work*, so when
//! the back is full the front refuses at its door and no tier spends work on a request that
//! would be refused below. As TCP's congestion control cuts once per window of losses, only
//! the first refusal among the requests sent since the last cut shrinks the window: the
//! requests already on their way when the back filled say the same thing again.

use std::time::Duration;

use seda_control::{AimdWindow, AimdWindowConfig};

/// A slot in the window, with the cut it was taken after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    epoch: u64,
}

/// The window over the tiers below, cut at most once per window of refusals.
#[derive(Debug)]
pub struct DownstreamWindow {
    window: AimdWindow,
    /// Cuts so far: a refusal of a slot taken before the last cut does not cut again.
    epoch: u64,
}

impl DownstreamWindow {
    /// A window starting at `initial` requests in flight; a reply slower than `timeout`
    /// counts as a refusal.
    pub fn new(initial: f64, timeout: Duration) -> Self {
        DownstreamWindow {
            window: AimdWindow::new(AimdWindowConfig {
                initial,
                timeout,
                ..AimdWindowConfig::default()
            }),
            epoch: 0,
        }
    }

    /// A slot, if fewer requests than the window are in flight below.
    pub fn try_acquire(&mut self) -> Option<Slot> {
        self.window
            .try_acquire()
            .then_some(Slot { epoch: self.epoch })
    }

    /// The tiers below answered in `latency`.
    pub fn succeeded(&mut self, _slot: Slot, latency: Duration) {
        self.window.on_reply(latency);
    }

    /// A tier below refused, or the request missed its deadline.
    pub fn refused(&mut self, slot: Slot) {
        if slot.epoch == self.epoch {
            self.window.on_failure();
            self.epoch += 1;
        } else {
            self.window.on_cancel();
        }
    }

    /// The request was abandoned above this tier: the slot is freed, nothing learnt.
    pub fn cancelled(&mut self, _slot: Slot) {
        self.window.on_cancel();
    }

    /// Requests allowed in flight below.
    pub fn size(&self) -> f64 {
        self.window.window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_millis(5);

    #[test]
    fn refusals_of_one_window_cut_it_once() {
        let mut w = DownstreamWindow::new(8.0, Duration::from_secs(1));
        let slots: Vec<Slot> = (0..8).map(|_| w.try_acquire().expect("room")).collect();
        assert!(w.try_acquire().is_none(), "the window holds 8");
        for s in slots {
            w.refused(s);
        }
        assert_eq!(w.size(), 4.0, "eight refusals sent before the cut cut once");
        let s = w.try_acquire().expect("room again");
        w.refused(s);
        assert_eq!(
            w.size(),
            2.0,
            "a refusal of a slot taken after the cut cuts again"
        );
    }

    #[test]
    fn successes_grow_it_and_cancels_only_free_the_slot() {
        let mut w = DownstreamWindow::new(2.0, Duration::from_secs(1));
        let a = w.try_acquire().expect("room");
        w.cancelled(a);
        assert_eq!(w.size(), 2.0);
        for _ in 0..4 {
            let s = w.try_acquire().expect("room");
            w.succeeded(s, FAST);
        }
        assert!(w.size() > 3.0, "{}", w.size());
        let slow = w.try_acquire().expect("room");
        let before = w.size();
        w.succeeded(slow, Duration::from_secs(2));
        assert!(w.size() < before, "a reply past the timeout is a refusal");
    }
}
