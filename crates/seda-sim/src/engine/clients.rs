//! Sources and clients: closed users, open arrivals, partly-open sessions, client timeouts and
//! the client-side AIMD window.

use super::stage::Outcome;
use super::{Kind, NONE, Req, Sim, Slot};
use crate::config::Population;
use crate::metrics::CLASSES;
use crate::secs_to_ns;

/// What the client learnt about its request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Heard {
    Reply,
    Refused,
    TimedOut,
}

impl Sim {
    /// Schedules a source's first events.
    pub(crate) fn start_source(&mut self, s: u16) {
        let src = &self.sources[s as usize];
        let start = src.start_ns;
        match &src.population {
            Population::Closed {
                users: n, think, ..
            }
            | Population::Eager {
                clients: n, think, ..
            } => {
                let think = think.clone();
                for _ in 0..*n {
                    let u = self.user_source.len() as u32;
                    self.user_source.push(s);
                    let t = start + secs_to_ns(think.sample(&mut self.rng_client));
                    self.events.push(t, Kind::Send, u, u32::from(s));
                }
            }
            Population::Open {
                rate_per_s,
                poisson,
                ..
            } => {
                let gap = if *poisson {
                    self.rng_client.exp(1.0 / rate_per_s)
                } else {
                    0.0
                };
                self.events
                    .push(start + secs_to_ns(gap), Kind::Arrival, u32::from(s), 0);
            }
            Population::PartlyOpen {
                session_rate_per_s, ..
            } => {
                let gap = self.rng_client.exp(1.0 / session_rate_per_s);
                self.events
                    .push(start + secs_to_ns(gap), Kind::Session, u32::from(s), 0);
            }
        }
    }

    pub(crate) fn on_arrival(&mut self, s: u16) {
        let src = &self.sources[s as usize];
        if self.now >= src.end_ns {
            return;
        }
        let Population::Open {
            rate_per_s,
            poisson,
            ..
        } = src.population
        else {
            return;
        };
        let gap = if poisson {
            self.rng_client.exp(1.0 / rate_per_s)
        } else {
            1.0 / rate_per_s
        };
        self.events
            .push(self.now + secs_to_ns(gap), Kind::Arrival, u32::from(s), 0);
        self.offer(s, NONE);
    }

    pub(crate) fn on_session(&mut self, s: u16) {
        let src = &self.sources[s as usize];
        if self.now >= src.end_ns {
            return;
        }
        let Population::PartlyOpen {
            session_rate_per_s, ..
        } = src.population
        else {
            return;
        };
        let gap = self.rng_client.exp(1.0 / session_rate_per_s);
        self.events
            .push(self.now + secs_to_ns(gap), Kind::Session, u32::from(s), 0);
        let u = match self.free_users.pop() {
            Some(u) => {
                self.user_source[u as usize] = s;
                u
            }
            None => {
                self.user_source.push(s);
                (self.user_source.len() - 1) as u32
            }
        };
        self.offer(s, u);
    }

    /// User `u` of source `s` (carried in the event, so a million users cost no lookup) sends.
    pub(crate) fn on_send(&mut self, u: u32, s: u16) {
        if self.now >= self.sources[s as usize].end_ns {
            self.leave(u, s);
            return;
        }
        self.offer(s, u);
    }

    fn leave(&mut self, u: u32, s: u16) {
        if matches!(
            self.sources[s as usize].population,
            Population::PartlyOpen { .. }
        ) {
            self.free_users.push(u);
        }
    }

    /// A client sends a request (or its own window refuses to).
    fn offer(&mut self, s: u16, user: u32) {
        let now = self.now;
        let src = &mut self.sources[s as usize];
        let class = src.class;
        let c = (class as usize).min(CLASSES - 1);
        self.metrics.record(now, |b| {
            b.offered += 1;
            b.class_offered[c] += 1;
        });
        let deadline = src.timeout_ns.map_or(u64::MAX, |t| now + t);
        let mut req = Req {
            born: now,
            enq: now,
            deadline,
            user,
            slot: NONE,
            source: s,
            class,
            entry_held: false,
            seq: 0,
        };
        if let Population::Eager { patience, .. } = &src.population
            && user != NONE
        {
            let wait = secs_to_ns(patience.sample(&mut self.rng_client));
            let u = user as usize;
            if self.eager.len() <= u {
                self.eager.resize(u + 1, (0, false));
            }
            let e = &mut self.eager[u];
            e.0 = e.0.wrapping_add(1);
            e.1 = true;
            req.seq = e.0;
            self.events
                .push_gen(now + wait, Kind::Patience, user, u32::from(s), e.0);
        }
        let src = &mut self.sources[s as usize];
        if let Some(w) = src.window.as_mut()
            && !w.try_acquire()
        {
            self.record_refused(class);
            self.heard(s, user, Heard::Refused, req.seq);
            return;
        }
        if let Some(t) = src.timeout_ns {
            let slot = match self.free_slots.pop() {
                Some(i) => i,
                None => {
                    self.slots.push(Slot::default());
                    (self.slots.len() - 1) as u32
                }
            };
            let st = &mut self.slots[slot as usize];
            st.live = true;
            st.abandoned = false;
            st.user = user;
            st.source = s;
            req.slot = slot;
            self.events
                .push(now + t, Kind::Timeout, slot, st.generation);
        }
        self.arrive(0, req);
    }

    fn record_refused(&mut self, class: u8) {
        let c = (class as usize).min(CLASSES - 1);
        self.metrics.record(self.now, |b| {
            b.rejected += 1;
            b.class_refused[c] += 1;
        });
    }

    /// A client's timeout fired.
    pub(crate) fn on_timeout(&mut self, slot: u32, generation: u32) {
        let st = &mut self.slots[slot as usize];
        if !st.live || st.generation != generation || st.abandoned {
            return;
        }
        st.abandoned = true;
        let (s, user) = (st.source, st.user);
        self.metrics.record(self.now, |b| b.timed_out += 1);
        self.heard(s, user, Heard::TimedOut, NONE);
    }

    /// An eager client's patience for its request `seq` ran out: unless the reply came, it
    /// sends again (the earlier request stays outstanding).
    pub(crate) fn on_patience(&mut self, user: u32, s: u16, seq: u32) {
        let Some(e) = self.eager.get_mut(user as usize) else {
            return;
        };
        if e.0 != seq || !e.1 {
            return;
        }
        e.1 = false;
        self.on_send(user, s);
    }

    /// The stage is done with a request: record it and tell its client.
    pub(crate) fn finish(&mut self, req: Req, outcome: Outcome) {
        self.levers.on_end(outcome);
        if req.entry_held
            && let Some(a) = self.stages[0].admission.as_mut()
        {
            let now = super::dur(self.now);
            match outcome {
                Outcome::Completed(_) => {
                    let r = super::dur(self.now - req.born);
                    a.on_complete(now, req.class, r, r);
                }
                Outcome::Rejected | Outcome::Expired | Outcome::Terminated => {
                    a.on_drop(now, req.class)
                }
            }
        }
        let c = (req.class as usize).min(CLASSES - 1);
        let mut abandoned = false;
        if req.slot != NONE {
            let st = &mut self.slots[req.slot as usize];
            abandoned = st.abandoned;
            st.live = false;
            st.generation = st.generation.wrapping_add(1);
            self.free_slots.push(req.slot);
        }
        match outcome {
            Outcome::Completed(r) => {
                let good = r <= self.target_s && !abandoned;
                self.metrics.record_response(self.now, c, r, good);
            }
            Outcome::Rejected => self.record_refused(req.class),
            Outcome::Expired => self.metrics.record(self.now, |b| {
                b.expired += 1;
                b.class_refused[c] += 1;
            }),
            Outcome::Terminated => self.metrics.record(self.now, |b| b.terminated += 1),
        }
        if abandoned {
            return; // the client gave up already
        }
        let heard = match outcome {
            Outcome::Completed(r) => {
                if let Some(w) = self.sources[req.source as usize].window.as_mut() {
                    w.on_reply(std::time::Duration::from_secs_f64(r));
                }
                Heard::Reply
            }
            Outcome::Rejected | Outcome::Expired | Outcome::Terminated => Heard::Refused,
        };
        if heard == Heard::Refused
            && let Some(w) = self.sources[req.source as usize].window.as_mut()
        {
            w.on_failure();
        }
        self.heard(req.source, req.user, heard, req.seq);
    }

    /// The client of source `s` (user `user`, or none for open arrivals) learnt an outcome;
    /// with a timeout, the window hears of the failure here. `seq` is an eager client's request
    /// number: only the reply to its latest request counts.
    fn heard(&mut self, s: u16, user: u32, heard: Heard, seq: u32) {
        let src = &mut self.sources[s as usize];
        if heard == Heard::TimedOut
            && let Some(w) = src.window.as_mut()
        {
            w.on_failure();
        }
        if user == NONE {
            return;
        }
        let delay_s = match &src.population {
            Population::Closed {
                think, reject_wait, ..
            } => match (heard, reject_wait) {
                (Heard::Refused, Some(wait)) => wait.sample(&mut self.rng_client),
                _ => think.sample(&mut self.rng_client),
            },
            Population::PartlyOpen { stay, think, .. } => {
                if heard == Heard::Reply && self.rng_client.uniform() < *stay {
                    think.sample(&mut self.rng_client)
                } else {
                    self.free_users.push(user);
                    return;
                }
            }
            Population::Eager { think, .. } => {
                let Some(e) = self.eager.get_mut(user as usize) else {
                    return;
                };
                if heard == Heard::TimedOut || e.0 != seq || !e.1 {
                    return; // an older request, or the client has sent again already
                }
                e.1 = false;
                think.sample(&mut self.rng_client)
            }
            Population::Open { .. } => return,
        };
        self.events.push(
            self.now + secs_to_ns(delay_s),
            Kind::Send,
            user,
            u32::from(s),
        );
    }
}
