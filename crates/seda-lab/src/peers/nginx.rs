//! nginx: one worker process (the server gets one core), `sendfile on`, access log off.
//!
//! `master_process on` as in production; the master only supervises, so the serving is done by
//! one event-driven process. The listen backlog is 4096, the same as `seda serve static`'s, so
//! the kernel's accept queue is not what differs between the servers.

use std::path::Path;
use std::process::Command;

use super::{PeerError, check_others_can_read, config_path, require, write_config};

/// The config file nginx is given.
pub fn config(root: &str, port: u16, work_dir: &str) -> String {
    format!(
        r#"# Written by seda-lab: nginx in the foreground, everything under the work directory.
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
user www-data www-data;
pid "{work_dir}/nginx.pid";
error_log "{work_dir}/logs/error.log" warn;

events {{
    worker_connections 8192;
}}

http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path "{work_dir}/tmp/body";
    proxy_temp_path "{work_dir}/tmp/proxy";
    fastcgi_temp_path "{work_dir}/tmp/fastcgi";
    uwsgi_temp_path "{work_dir}/tmp/uwsgi";
    scgi_temp_path "{work_dir}/tmp/scgi";

    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root "{root}";
    }}
}}
"#
    )
}

/// Writes `work_dir/nginx.conf` and returns the command that runs nginx with it.
pub fn command(root: &Path, port: u16, work_dir: &Path) -> Result<Command, PeerError> {
    let bin = require(&super::NGINX)?;
    check_others_can_read("nginx", root)?;
    let (root_s, work_s) = (config_path(root)?, config_path(work_dir)?);
    std::fs::create_dir_all(work_dir.join("tmp")).map_err(|source| PeerError::Io {
        what: format!("create {}/tmp", work_dir.display()),
        source,
    })?;
    let conf = write_config(work_dir, "nginx.conf", &config(&root_s, port, &work_s))?;
    let mut cmd = Command::new(bin);
    // -p sets the prefix for relative paths; -e the startup error log (before the config's is
    // opened), so nothing goes to /var/log/nginx.
    cmd.arg("-c")
        .arg(conf)
        .arg("-p")
        .arg(format!("{work_s}/"))
        .arg("-e")
        .arg(format!("{work_s}/logs/error.log"));
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_serves_the_root_on_loopback_with_one_worker() {
        let c = config("/srv/www", 8123, "/tmp/run");
        assert!(c.contains("listen 127.0.0.1:8123 backlog=4096;"));
        assert!(c.contains("root \"/srv/www\";"));
        assert!(c.contains("worker_processes 1;"));
        assert!(c.contains("daemon off;"));
        assert!(!c.contains("/var/"), "nothing under /var");
    }
}
