# Sourced by the bench scripts: a scratch directory and the servers they start, both gone on
# exit, and the two proxy comparisons' peers.
#
#   TMP         a fresh directory, removed on exit
#   PIDS        pids to kill on exit (append with PIDS+=($!)), with STOP_SIGNAL (default TERM;
#               set it before sourcing)
#   free_port   a free TCP port on 127.0.0.1
#   nginx_main  the main context of an nginx configuration
#   write_section NAME SECTION OUT  a generated section into a page (`-`: stdout)
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "-${STOP_SIGNAL:-TERM}" "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# write_section NAME SECTION OUT: replaces OUT's part between `<!-- NAME:begin -->` and
# `<!-- NAME:end -->` with the file SECTION (which holds both markers), or appends it; the rest
# of OUT is left as is. OUT `-` prints SECTION instead.
write_section() {
  if [ "$3" = - ]; then
    cat "$2"
    return
  fi
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
name, section, path = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
try:
    text = open(path).read()
except FileNotFoundError:
    text = ""
pattern = re.compile(rf"<!-- {re.escape(name)}:begin -->.*?<!-- {re.escape(name)}:end -->\n?", re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: section, text)
else:
    text = text.rstrip("\n") + ("\n\n" if text else "") + section
open(path, "w").write(text)
PY
  echo "wrote $3"
}

# nginx_main DIR WORKERS [MASTER_OFF(0/1)]: nginx's main context, in the foreground, its pid and
# error log in DIR (master_process off runs the one worker in the master, for callgrind).
nginx_main() {
  echo "worker_processes $2;"
  echo "daemon off;"
  [ "${3:-0}" = 1 ] && echo "master_process off;"
  echo "pid $1/nginx.pid;"
  echo "error_log $1/error.log;"
  echo "events { worker_connections 4096; }"
}

# nginx_upstream PORT: writes $TMP/www/f (1 KB) and $TMP/nginx/nginx.conf, one worker serving
# $TMP/www on PORT (the upstream both proxies forward to).
nginx_upstream() {
  mkdir -p "$TMP/www" "$TMP/nginx"
  head -c 1024 /dev/urandom > "$TMP/www/f"
  chmod -R a+rX "$TMP"
  cat > "$TMP/nginx/nginx.conf" <<CONF
$(nginx_main "$TMP/nginx" 1)
http {
  access_log off;
  client_body_temp_path $TMP/nginx; proxy_temp_path $TMP/nginx; fastcgi_temp_path $TMP/nginx;
  uwsgi_temp_path $TMP/nginx; scgi_temp_path $TMP/nginx;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$1; root $TMP/www; }
}
CONF
}

# haproxy_config PORT UPSTREAM_PORT: writes $TMP/haproxy.cfg, one thread on PORT keeping its
# connections to the upstream alive.
haproxy_config() {
  cat > "$TMP/haproxy.cfg" <<CONF
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
frontend f
  bind 127.0.0.1:$1
  default_backend b
backend b
  http-reuse always
  server up 127.0.0.1:$2
CONF
}
