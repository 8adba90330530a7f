//! lighttpd 1.4: one event-driven process (its default), sendfile, no modules beyond the
//! built-in static file handler.
//!
//! It runs as the invoking user: lighttpd opens its error log after dropping privileges, so as
//! `www-data` it could not write into the work directory.

use std::path::Path;
use std::process::Command;

use super::{PeerError, config_path, require, write_config};

/// The config file lighttpd is given.
pub fn config(root: &str, port: u16, work_dir: &str) -> String {
    format!(
        r#"# Written by seda-lab: lighttpd in the foreground, everything under the work directory.
server.document-root = "{root}"
server.bind = "127.0.0.1"
server.port = {port}
server.pid-file = "{work_dir}/lighttpd.pid"
server.errorlog = "{work_dir}/logs/error.log"
server.modules = ()
server.max-fds = 16384
server.max-connections = 8192
server.listen-backlog = 4096
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 65
server.network-backend = "sendfile"
"#
    )
}

/// Writes `work_dir/lighttpd.conf` and returns the command that runs lighttpd with it.
pub fn command(root: &Path, port: u16, work_dir: &Path) -> Result<Command, PeerError> {
    let bin = require(&super::LIGHTTPD)?;
    let (root_s, work_s) = (config_path(root)?, config_path(work_dir)?);
    let conf = write_config(work_dir, "lighttpd.conf", &config(&root_s, port, &work_s))?;
    let mut cmd = Command::new(bin);
    // -D: do not daemonize.
    cmd.arg("-D").arg("-f").arg(conf);
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_serves_the_root_on_loopback() {
        let c = config("/srv/www", 8125, "/tmp/run");
        assert!(c.contains("server.port = 8125\n"));
        assert!(c.contains("server.bind = \"127.0.0.1\""));
        assert!(c.contains("server.document-root = \"/srv/www\""));
    }
}
