//! Apache httpd 2.4 with `mpm_prefork` and a fixed pool of 150 processes: the SOSP'01
//! baseline ("fixed-size process pool of 150 processes", SEDA01; APACHE in
//! `docs/papers.md`).
//!
//! Start, minimum, maximum and limit are all 150, so the pool never grows or shrinks during a
//! run; a connection beyond the 150 busy processes waits in the kernel's accept queue
//! (`ListenBacklog 4096`, the same as `seda serve static`'s). `KeepAlive On` as in the paper's
//! configuration: a process stays with its connection between requests (the client's think
//! time), which is what bounds a thread-per-connection server.

use std::path::Path;
use std::process::Command;

use super::{Peer, PeerError, check_others_can_read, config_path, require, write_config};

/// util-linux's `setsid` and `setpriv` (Debian installs util-linux everywhere).
const SETSID: Peer = Peer {
    name: "setsid",
    package: "util-linux",
    program: Some("setsid"),
    setup: "",
};
const SETPRIV: Peer = Peer {
    name: "setpriv",
    program: Some("setpriv"),
    ..SETSID
};

/// Processes in the fixed pool.
pub const POOL: usize = 150;

/// Where Debian keeps Apache's loadable modules.
const MODULES: &str = "/usr/lib/apache2/modules";

/// The config file Apache is given.
pub fn config(root: &str, port: u16, work_dir: &str) -> String {
    format!(
        r#"# Written by seda-lab: Apache in the foreground, everything under the work directory.
ServerRoot "{work_dir}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
ListenBacklog 4096
PidFile "{work_dir}/httpd.pid"
DefaultRuntimeDir "{work_dir}"
Mutex "file:{work_dir}" default
ErrorLog "{work_dir}/logs/error.log"
LogLevel warn
# Ignored unless started as root; Apache will not serve as root.
User www-data
Group www-data

LoadModule mpm_prefork_module {MODULES}/mod_mpm_prefork.so
LoadModule authz_core_module {MODULES}/mod_authz_core.so

StartServers {POOL}
MinSpareServers {POOL}
MaxSpareServers {POOL}
ServerLimit {POOL}
MaxRequestWorkers {POOL}
MaxConnectionsPerChild 0

KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 15
EnableSendfile On
EnableMMAP On

DocumentRoot "{root}"
<Directory "{root}">
    Require all granted
    AllowOverride None
    Options None
</Directory>
"#
    )
}

/// Writes `work_dir/httpd.conf` and returns the command that runs Apache with it.
pub fn command(root: &Path, port: u16, work_dir: &Path) -> Result<Command, PeerError> {
    let bin = require(&super::APACHE)?;
    if !Path::new(MODULES).join("mod_mpm_prefork.so").exists() {
        return Err(PeerError::NotInstalled {
            server: "apache2 (mod_mpm_prefork)",
            package: "apache2",
        });
    }
    check_others_can_read("apache2", root)?;
    let (root_s, work_s) = (config_path(root)?, config_path(work_dir)?);
    let conf = write_config(work_dir, "httpd.conf", &config(&root_s, port, &work_s))?;
    // At shutdown prefork signals its whole process group (`killpg(getpgrp(), SIGTERM)`),
    // which would stop whoever started it too: `setsid` gives it a session and group of its
    // own (it execs in place, so the pid stays Apache's). Out of our group, a Ctrl-C would no
    // longer reach it, so `setpriv --pdeathsig TERM` stops it when the thread that started it
    // dies.
    let setsid = require(&SETSID)?;
    let setpriv = require(&SETPRIV)?;
    let mut cmd = Command::new(setsid);
    cmd.arg(setpriv).args(["--pdeathsig", "TERM"]).arg(bin);
    // -DFOREGROUND: the parent stays in the foreground (and is the pid to stop).
    cmd.arg("-f").arg(conf).arg("-DFOREGROUND");
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_is_fixed_at_150() {
        let c = config("/srv/www", 8124, "/tmp/run");
        for key in [
            "StartServers",
            "MinSpareServers",
            "MaxSpareServers",
            "ServerLimit",
            "MaxRequestWorkers",
        ] {
            assert!(c.contains(&format!("{key} 150\n")), "{key}");
        }
        assert!(c.contains("Listen 127.0.0.1:8124\n"));
        assert!(c.contains("mod_mpm_prefork.so"));
        assert!(!c.contains("/var/"), "nothing under /var");
    }
}
