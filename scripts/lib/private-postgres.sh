# Sourced by scripts/demo: start_private_postgres makes a PostgreSQL cluster with initdb in a
# temp dir, starts it on the first free port from 5440 (never 5432) and exports
# GATOR_OUTBOX_URL; stop_private_postgres stops it and removes the dir. Under root (CI),
# PostgreSQL refuses to run: the cluster belongs to the `postgres` user, and its commands run
# through `runuser -u postgres`. scripts/ensure-postgres installs the server.

pg_bin_dir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  dirname "$(command -v initdb)"
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_private_postgres() {
  local bin
  bin="$(pg_bin_dir)"
  PRIVATE_PG_DIR="$(mktemp -d)"
  PRIVATE_PG_BIN="$bin"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$PRIVATE_PG_DIR"; fi
  PG_PORT=5440
  while (exec 3<>"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null; do PG_PORT=$((PG_PORT + 1)); done
  as_pg "$bin/initdb" -D "$PRIVATE_PG_DIR/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
  as_pg "$bin/pg_ctl" -D "$PRIVATE_PG_DIR/data" -l "$PRIVATE_PG_DIR/postgres.log" -w -t 30 \
    -o "-p $PG_PORT -k $PRIVATE_PG_DIR -c listen_addresses=127.0.0.1" start >/dev/null
  export GATOR_OUTBOX_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres" PG_PORT
}

stop_private_postgres() {
  if [ -n "${PRIVATE_PG_DIR:-}" ]; then
    as_pg "$PRIVATE_PG_BIN/pg_ctl" -D "$PRIVATE_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PRIVATE_PG_DIR"
    PRIVATE_PG_DIR=""
  fi
}
