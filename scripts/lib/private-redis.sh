# Sourced by scripts/demo and scripts/bench-smoke: start_private_redis starts a redis-server on
# the first free port from 6400 in a temp dir and exports GATOR_REDIS_URL (and REDIS_URL, which
# gator-bench reads) and REDIS_PORT; stop_private_redis stops it and removes the dir.

start_private_redis() {
  PRIVATE_REDIS_DIR="$(mktemp -d)"
  REDIS_PORT=6400
  while (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null; do REDIS_PORT=$((REDIS_PORT + 1)); done
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$PRIVATE_REDIS_DIR" --save '' --appendonly no \
    --logfile "$PRIVATE_REDIS_DIR/redis.log" --daemonize no &
  PRIVATE_REDIS_PID=$!
  export GATOR_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" REDIS_URL="redis://127.0.0.1:$REDIS_PORT" REDIS_PORT
  for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "error: the private redis-server did not start; its log:" >&2
  cat "$PRIVATE_REDIS_DIR/redis.log" >&2
  return 1
}

stop_private_redis() {
  if [ -n "${PRIVATE_REDIS_PID:-}" ]; then
    kill "$PRIVATE_REDIS_PID" 2>/dev/null || true
    wait "$PRIVATE_REDIS_PID" 2>/dev/null || true
    PRIVATE_REDIS_PID=""
  fi
  if [ -n "${PRIVATE_REDIS_DIR:-}" ]; then rm -rf "$PRIVATE_REDIS_DIR"; fi
}
