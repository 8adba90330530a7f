//! `--admin ADDR` of every `seda serve ...`: where the admin address listens.
//!
//! The default, `127.0.0.1:0`, asks the kernel for a free loopback port, so several servers on
//! one machine (the lab runs many) never collide; the chosen address is printed at start. A
//! fixed address (`--admin 127.0.0.1:9090`) suits a Prometheus configuration; `--admin off`
//! serves no introspection at all.

use std::net::SocketAddr;
use std::str::FromStr;

/// The default of `--admin`.
pub const DEFAULT: &str = "127.0.0.1:0";

/// The value of `--admin`: an address, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminAddr(pub Option<SocketAddr>);

impl FromStr for AdminAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("off") {
            return Ok(AdminAddr(None));
        }
        s.parse()
            .map(|a| AdminAddr(Some(a)))
            .map_err(|_| format!("`{s}` is not an address such as 127.0.0.1:9090, nor `off`"))
    }
}

/// Prints where the admin address listens (the lab and scripts read this line).
pub fn announce(admin: Option<SocketAddr>) {
    match admin {
        Some(a) => println!("admin: http://{a}/ (dashboard; /metrics, /_seda/stats, /_seda/graph)"),
        None => println!("admin: off"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses_and_off() {
        assert_eq!(
            "127.0.0.1:9090".parse::<AdminAddr>(),
            Ok(AdminAddr(Some("127.0.0.1:9090".parse().expect("addr"))))
        );
        assert_eq!("off".parse::<AdminAddr>(), Ok(AdminAddr(None)));
        assert!("9090".parse::<AdminAddr>().is_err());
    }
}
