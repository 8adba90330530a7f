//! The search for the knee below the target: a phase machine. Each period below the target
//! the pool [judges](SelfTuningPool::judge) what its last move earned, then
//! [decides](SelfTuningPool::decide) the step and the next [`Phase`]:
//!
//! - [`Phase::Climbing`]: moves are judged by what they earned; additions grow at most
//!   geometrically while they pay, and a move that did not pay is half undone.
//! - [`Phase::Bisecting`]: an addition's capacity gained less than its proportional share;
//!   the pool went back to the midpoint and waits to read it against the size it left.
//! - [`Phase::HeldAtPeak`]: the readings at this size pass those one thread either side.
//! - [`Phase::AtCeiling`]: an addition's capacity fell, and the pool returned to the size it
//!   left; the period after the return does not judge it.
//! - [`Phase::Probing`]: at its ceiling the pool reads a size one thread either side that the
//!   window has not read (a ceiling comes from a jump of several threads, whose sizes between
//!   were never read), then holds the better of the two.
//!
//! Across the phases a [`Ceiling`] (from a plateau or a fall) bounds additions while the
//! levels' window remembers the readings that set it.

use super::super::levels::WINDOW;
use super::SelfTuningPool;
use super::judge::{Judgement, MoveJudgement, Period, Verdict};

/// Where the search stands between periods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Phase {
    /// No reading holds the pool.
    #[default]
    Climbing,
    /// Back at `mid` after an addition to `left` gained less than its proportional share,
    /// until `mid` has been read.
    Bisecting {
        /// The most threads that may have paid, where the pool went back to.
        mid: usize,
        /// The size the addition reached.
        left: usize,
        /// Whether the readings at `mid` showed a peak while it waited to read it (the
        /// pool held it meanwhile): if it then climbs on, it leaves as from a peak.
        held: bool,
    },
    /// Holding a size whose readings show a peak.
    HeldAtPeak,
    /// At a neighbour of `from` that the window had not read, until it is read.
    Probing {
        /// The size the probe left.
        from: usize,
    },
    /// Returned to the size an addition's capacity fell from (the ceiling).
    AtCeiling,
}

impl Phase {
    /// Whether the last judged period held a size its readings showed to be a peak.
    pub(super) fn held_at_peak(self) -> bool {
        matches!(
            self,
            Phase::HeldAtPeak | Phase::Bisecting { held: true, .. }
        )
    }
}

/// The most threads the pool may add up to, after a plateau or a fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ceiling {
    /// The bound.
    pub at: usize,
    /// The judged periods it lasts for: as long as the levels' window remembers.
    pub periods_left: usize,
}

/// The search's state between periods.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Search {
    /// Where the search stands.
    pub phase: Phase,
    /// The ceiling in force, if any.
    pub ceiling: Option<Ceiling>,
    /// The last ceiling, kept after the window forgets it until an addition scales: a probe
    /// past it that does not scale returns to it rather than to a higher bisection point.
    pub last_ceiling: Option<usize>,
}

impl Search {
    /// Whether a ceiling in force stands at `threads`.
    pub(super) fn ceiling_at(&self, threads: usize) -> bool {
        self.ceiling.is_some_and(|c| c.at == threads)
    }

    /// Sets a ceiling at `at` for the window's length.
    fn set_ceiling(&mut self, at: usize) {
        self.ceiling = Some(Ceiling {
            at,
            periods_left: WINDOW,
        });
    }
}

impl SelfTuningPool {
    /// Below the target, the law's `step` checked against what the last move earned (see the
    /// module docs and [`Self::judge`]): additions grow geometrically while they pay (at
    /// most, or at least where the capacity confirms them); a move that did not pay is half
    /// undone; the law's gain is not trusted to remove many threads while more throughput is
    /// wanted.
    pub(super) fn seek(&mut self, step: i64, p: &Period) -> i64 {
        let judgement = self.judge(p);
        self.decide(step, p.threads, judgement)
    }

    /// Turns a [`Judgement`] into the step and the search's next phase.
    pub(super) fn decide(&mut self, step: i64, threads: usize, judgement: Judgement) -> i64 {
        let Judgement::Judged {
            bisection_waits,
            verdict,
        } = judgement
        else {
            return step;
        };
        let previous = self.search.phase;
        // The ceiling a plateau showed lasts as long as the window's readings.
        self.search.ceiling = self
            .search
            .ceiling
            .filter(|c| c.periods_left > 1)
            .map(|c| Ceiling {
                periods_left: c.periods_left - 1,
                ..c
            });
        // A bisection that waits for its reading goes on waiting, whatever else is decided.
        let waiting = |held| match previous {
            Phase::Bisecting { mid, left, .. } if bisection_waits => {
                Phase::Bisecting { mid, left, held }
            }
            _ if held => Phase::HeldAtPeak,
            _ => Phase::Climbing,
        };
        match verdict {
            Verdict::ClimbOn { left } => {
                // The peak reading of the period before stands (it was not read again).
                self.search.phase = if previous.held_at_peak() {
                    Phase::HeldAtPeak
                } else {
                    Phase::Climbing
                };
                self.search.ceiling = None;
                self.search.last_ceiling = None;
                left as i64 - threads as i64
            }
            Verdict::AtPeak => {
                self.search.phase = waiting(true);
                0
            }
            Verdict::ReprobePeak => {
                self.search.phase = waiting(false);
                1
            }
            Verdict::ProbeNeighbour(d) => {
                // Back from a probe to the ceiling, the period after the return does not
                // judge it, as after a fall.
                self.search.phase = match previous {
                    Phase::Probing { .. } => Phase::AtCeiling,
                    _ => Phase::Probing { from: threads },
                };
                d
            }
            Verdict::AwaitProbe => 0,
            Verdict::BelowCeilingWon => {
                self.search.phase = Phase::Climbing;
                self.search.set_ceiling(threads);
                0
            }
            Verdict::Move(m) => {
                self.search.phase = waiting(false);
                let back_from_fall = previous == Phase::AtCeiling;
                let step = self.decide_move(step, threads, m, back_from_fall);
                match self.search.ceiling {
                    Some(c) if step > 0 => step.min(c.at as i64 - threads as i64).max(0),
                    _ => step,
                }
            }
        }
    }

    /// The step after a judged move. An addition that paid is followed by the law's step,
    /// held to grow at most geometrically; a move that did not pay is half undone. Where the
    /// capacity rose past its noise with an addition, the pool grows geometrically (the law's
    /// gain may come from a fit the arrivals inflated, and its step, `max_step` far below an
    /// unreachable target, runs past a knee), and where it fell with a removal, the pool
    /// re-adds all it removed, each up to what the target needs (held in [`Self::update`]).
    ///
    /// Where the capacity showed that an addition neither scaled nor fell, the pool goes back
    /// to the most threads that may have paid (at least half the addition is undone: a peak
    /// may lie between the two sizes), holds there, and adds no threads past it while the
    /// window remembers: half undos, each followed by re-adding the removed threads, walk a
    /// pool up a plateau two threads at a time.
    ///
    /// Where the capacity fell with an addition, the pool returns to the size it left and adds
    /// no threads past it while the window remembers; the period after, whose capacity still
    /// carries the removed threads' calls (or reads the gain of leaving the worse size), does
    /// not judge the return: half undos leave a pool oscillating a thread or two past the
    /// knee.
    fn decide_move(
        &mut self,
        step: i64,
        threads: usize,
        m: MoveJudgement,
        back_from_fall: bool,
    ) -> i64 {
        let MoveJudgement { dn, half, .. } = m;
        if m.scaled_past_last_ceiling {
            self.search.last_ceiling = None;
        }
        if let Some(c) = m.plateau_ceiling {
            self.search.set_ceiling(c);
            self.search.last_ceiling = Some(c);
            if c < threads {
                self.search.phase = Phase::Bisecting {
                    mid: c,
                    left: threads,
                    held: false,
                };
            }
            c as i64 - threads as i64
        } else if let Some(c) = m.fell_from {
            // A fall is read from a saturated period, which always gives a reading: no
            // bisection waits here.
            self.search.set_ceiling(c);
            self.search.phase = Phase::AtCeiling;
            c as i64 - threads as i64
        } else if dn < 0 && back_from_fall && self.search.ceiling_at(threads) {
            0
        } else if dn > 0 {
            if m.unpaid {
                -half
            } else if m.confirmed {
                2 * dn
            } else {
                step.clamp(1, 2 * dn)
            }
        } else if dn < 0 {
            if m.gained {
                -half
            } else if self.search.ceiling_at(threads) {
                0
            } else if m.capacity_read {
                step.clamp(1, -dn)
            } else {
                step.clamp(1, half)
            }
        } else if threads >= self.config.max_threads || m.falls {
            -1 // pinned at the top, or past the knee: probe so the next period has a move to read
        } else if m.capacity_read || m.model_pays {
            // The law's step, which [`Self::update`] holds to what the measured capacity says
            // the target needs, where it is measured.
            step.max(-1)
        } else {
            // No move to judge and a model that says threads barely pay (`b` near zero, a fit
            // made while the throughput followed the arrivals): probe one thread. Trusting the
            // law's step there takes a pool past the knee.
            step.clamp(-1, 1)
        }
    }
}
