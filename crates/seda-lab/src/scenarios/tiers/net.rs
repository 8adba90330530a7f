//! Three hosts on this machine: a network namespace per tier (front, middle, back), joined in a
//! chain by veth pairs with netem's 1 ms delay on every end (so each hop's round trip is 2 ms
//! of real packets), the load generator in the root namespace at the head of the chain.
//!
//! ```text
//! root .1 --- .2 front .5 --- .6 middle .9 --- .10 back      (10.213.K.0/24, a /30 a link)
//! ```
//!
//! The front and middle forward packets, so the lab (in the root namespace) also reaches the
//! middle's and the back's counters. K is the first free number from the process id: `ip
//! netns add` fails on a name that exists, so parallel runs never share one. [`TierNet`]'s
//! `Drop` deletes what it made, on an error or a panic too; a namespace's veth ends go with it.

use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The tiers, in the chain's order.
pub const TIERS: [&str; 3] = ["front", "middle", "back"];

/// One-way delay netem adds on each veth end, ms.
pub const DELAY_MS: u32 = 1;

/// The namespaces and links of one run, removed on drop.
#[derive(Debug)]
pub struct TierNet {
    k: u8,
    /// The delay on every veth end, ms; `None` where this kernel has no netem (the links
    /// then carry real packets between the namespaces without the added delay).
    pub delay_ms: Option<u32>,
    namespaces: Vec<String>,
    root_link: Option<String>,
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run `ip` (iproute2)")?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl TierNet {
    /// Creates the namespaces, links, addresses, routes and delays.
    ///
    /// # Errors
    /// When `ip` is missing or this process may not create namespaces (not root), or no
    /// number K is free.
    pub fn create() -> Result<TierNet> {
        let start = (std::process::id() % 250) as u8;
        let mut net = None;
        for i in 0..250u8 {
            let k = start.wrapping_add(i) % 250;
            let name = Self::ns_name(k, 0);
            match ip(&["netns", "add", &name]) {
                Ok(()) => {
                    net = Some(TierNet {
                        k,
                        delay_ms: Some(DELAY_MS),
                        namespaces: vec![name],
                        root_link: None,
                    });
                    break;
                }
                // Taken by another run: try the next number.
                Err(_) if std::path::Path::new("/run/netns").join(&name).exists() => {}
                Err(e) => return Err(e.context("network namespaces are not available")),
            }
        }
        let mut net = net.context("no free namespace number (250 tiers runs at once?)")?;
        net.build()?;
        Ok(net)
    }

    fn ns_name(k: u8, tier: usize) -> String {
        format!("seda-tiers-{k}-{}", TIERS[tier])
    }

    /// The namespace of `tier` (an index into [`TIERS`]).
    pub fn namespace(&self, tier: usize) -> String {
        Self::ns_name(self.k, tier)
    }

    fn addr(&self, last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.k, last)
    }

    /// Where `tier` listens: its address on the link from the tier above (or the root).
    pub fn tier_addr(&self, tier: usize) -> Ipv4Addr {
        self.addr(4 * tier as u8 + 2)
    }

    /// `cmd` run inside `tier`'s namespace (`ip netns exec`, which execs it: the process id
    /// is the command's).
    pub fn inside(&self, tier: usize, cmd: &Command) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.namespace(tier)])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        c
    }

    fn exec(&self, tier: usize, args: &[&str]) -> Result<()> {
        let ns = self.namespace(tier);
        let mut all = vec!["netns", "exec", &ns];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// netem's delay on `dev` in `tier`'s namespace (the root's for `None`). A kernel without
    /// the netem qdisc (`sch_netem`) is told apart from any other failure: the run goes on
    /// without the delay, and says so through [`TierNet::delay_ms`].
    fn netem(&mut self, tier: Option<usize>, dev: &str) -> Result<()> {
        if self.delay_ms.is_none() {
            return Ok(());
        }
        let delay = format!("{DELAY_MS}ms");
        let tc = [
            "tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", &delay,
        ];
        let out = match tier {
            Some(t) => {
                let ns = self.namespace(t);
                Command::new("ip")
                    .args(["netns", "exec", &ns])
                    .args(tc)
                    .output()
            }
            None => Command::new(tc[0]).args(&tc[1..]).output(),
        }
        .context("cannot run `tc`")?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("qdisc kind is unknown") {
                self.delay_ms = None;
                return Ok(());
            }
            bail!("netem on {dev}: {}", err.trim());
        }
        Ok(())
    }

    fn build(&mut self) -> Result<()> {
        for tier in 1..TIERS.len() {
            ip(&["netns", "add", &self.namespace(tier)])?;
            self.namespaces.push(self.namespace(tier));
        }
        for tier in 0..TIERS.len() {
            self.exec(tier, &["ip", "link", "set", "lo", "up"])?;
        }
        // Link i joins the tier above (the root for i = 0) to tier i.
        for link in 0..TIERS.len() {
            let (a, b) = (
                format!("st{}l{link}a", self.k),
                format!("st{}l{link}b", self.k),
            );
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
            if link == 0 {
                self.root_link = Some(a.clone());
            } else {
                ip(&["link", "set", &a, "netns", &self.namespace(link - 1)])?;
            }
            ip(&["link", "set", &b, "netns", &self.namespace(link)])?;
            let (ha, hb) = (
                format!("{}/30", self.addr(4 * link as u8 + 1)),
                format!("{}/30", self.addr(4 * link as u8 + 2)),
            );
            let above = link.checked_sub(1);
            match above {
                None => {
                    ip(&["addr", "add", &ha, "dev", &a])?;
                    ip(&["link", "set", &a, "up"])?;
                }
                Some(t) => {
                    self.exec(t, &["ip", "addr", "add", &ha, "dev", &a])?;
                    self.exec(t, &["ip", "link", "set", &a, "up"])?;
                }
            }
            self.netem(above, &a)?;
            self.exec(link, &["ip", "addr", "add", &hb, "dev", &b])?;
            self.exec(link, &["ip", "link", "set", &b, "up"])?;
            self.netem(Some(link), &b)?;
        }
        self.route()
    }

    /// Each tier's default route points up the chain, the root's route to the subnet down
    /// it, the front's to the back's link through the middle; the front and middle forward.
    fn route(&self) -> Result<()> {
        let subnet = format!("10.213.{}.0/24", self.k);
        ip(&["route", "add", &subnet, "via", &self.addr(2).to_string()])?;
        for tier in 0..TIERS.len() {
            let up = self.addr(4 * tier as u8 + 1).to_string();
            self.exec(tier, &["ip", "route", "add", "default", "via", &up])?;
            if tier + 1 < TIERS.len() {
                self.exec(tier, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
            }
        }
        let back_link = format!("10.213.{}.8/30", self.k);
        self.exec(
            0,
            &[
                "ip",
                "route",
                "add",
                &back_link,
                "via",
                &self.addr(6).to_string(),
            ],
        )
    }
}

impl Drop for TierNet {
    fn drop(&mut self) {
        // Deleting the root's veth end deletes its peer; a namespace's links go with it, and
        // its route in the root namespace with the link.
        if let Some(link) = self.root_link.take() {
            let _ = ip(&["link", "del", &link]);
        }
        for ns in self.namespaces.drain(..).rev() {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real namespaces: skipped with a printed reason where this process may not make them.
    #[test]
    fn the_chain_is_made_and_removed() {
        let net = match TierNet::create() {
            Ok(n) => n,
            Err(e) => {
                eprintln!("skipped: {e:#}");
                return;
            }
        };
        let names: Vec<String> = (0..3).map(|t| net.namespace(t)).collect();
        let back = net.tier_addr(2).to_string();
        // Reachability where `ping` is installed (the scenario itself shows it on real
        // connections through the chain).
        let ping = Command::new("ping")
            .args(["-c", "1", "-W", "2", &back])
            .output();
        if let Ok(out) = ping {
            assert!(out.status.success(), "the root reaches the back at {back}");
        }
        drop(net);
        let list = Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip runs");
        let list = String::from_utf8_lossy(&list.stdout);
        for n in names {
            assert!(!list.contains(&n), "{n} removed: {list}");
        }
    }
}
