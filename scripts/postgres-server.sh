#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, in a temporary folder, on 127.0.0.1.
#   scripts/postgres-server.sh start DIR   -> initdb + start; prints the server's URL on stdout
#   scripts/postgres-server.sh stop DIR    -> stop the server and delete DIR
# Uses the PostgreSQL binaries on PATH (/usr/local/bin) or Debian's /usr/lib/postgresql/*/bin;
# with HBEVAL_INSTALL_POSTGRES=1 and none found, installs Debian's postgresql package first.
# initdb refuses to run as root, so as root the server runs as the postgres user.
set -euo pipefail
cmd="${1:?usage: postgres-server.sh start|stop DIR}"
dir="${2:?usage: postgres-server.sh start|stop DIR}"

find_bin() {
  local d
  for d in "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")" \
    /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    bin="$(find_bin || true)"
    if [ -z "$bin" ] && [ "${HBEVAL_INSTALL_POSTGRES:-0}" = 1 ] && command -v apt-get >/dev/null; then
      echo "postgres-server: installing Debian's postgresql" >&2
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
      bin="$(find_bin || true)"
    fi
    if [ -z "$bin" ]; then echo "postgres-server: no initdb/pg_ctl found" >&2; exit 3; fi
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
      useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
    fi
    mkdir -p "$dir"
    chmod 700 "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 4; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >"$dir/pg_ctl.log" 2>&1 || { cat "$dir/pg_ctl.log" "$dir/server.log" >&2; exit 5; }
    echo "$bin" >"$dir/bin"
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    if [ -f "$dir/bin" ]; then
      as_owner "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: postgres-server.sh start|stop DIR" >&2; exit 2
    ;;
esac
