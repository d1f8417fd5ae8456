# Sourced by the cluster measurement scripts: start_private_cluster N starts N (1, or 3 and more) cluster masters
# (no replicas) on free loopback ports from 7300 (each with its bus port +10000 free) in a temp
# dir, joins them, and exports CLUSTER_PORTS and REDIS_URL / GATOR_REDIS_URL (the node list);
# stop_private_cluster stops them and removes the dir.

start_private_cluster() {
  local masters="$1" port=7300 urls=() addrs=()
  PRIVATE_CLUSTER_DIR="$(mktemp -d)"
  PRIVATE_CLUSTER_PIDS=()
  CLUSTER_PORTS=()
  while [ "${#CLUSTER_PORTS[@]}" -lt "$masters" ]; do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
      && ! (exec 3<>"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null; then
      CLUSTER_PORTS+=("$port")
    fi
    port=$((port + 1))
  done
  for p in "${CLUSTER_PORTS[@]}"; do
    mkdir -p "$PRIVATE_CLUSTER_DIR/$p"
    redis-server --port "$p" --bind 127.0.0.1 --dir "$PRIVATE_CLUSTER_DIR/$p" --save '' --appendonly no \
      --cluster-enabled yes --cluster-config-file nodes.conf --logfile redis.log --daemonize no &
    PRIVATE_CLUSTER_PIDS+=($!)
    urls+=("redis://127.0.0.1:$p")
    addrs+=("127.0.0.1:$p")
  done
  for p in "${CLUSTER_PORTS[@]}"; do
    for _ in $(seq 1 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  if [ "$masters" -eq 1 ]; then
    # `--cluster create` wants 3 masters: one node takes every slot by itself.
    redis-cli -p "${CLUSTER_PORTS[0]}" cluster addslotsrange 0 16383 >/dev/null
  else
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
  fi
  for p in "${CLUSTER_PORTS[@]}"; do
    for _ in $(seq 1 100); do
      redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' && break
      sleep 0.1
    done
  done
  REDIS_URL="$(IFS=,; echo "${urls[*]}")"
  export REDIS_URL GATOR_REDIS_URL="$REDIS_URL"
}

stop_private_cluster() {
  for pid in "${PRIVATE_CLUSTER_PIDS[@]:-}"; do
    [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  done
  PRIVATE_CLUSTER_PIDS=()
  if [ -n "${PRIVATE_CLUSTER_DIR:-}" ]; then rm -rf "$PRIVATE_CLUSTER_DIR"; fi
}

# commands_per_node: prints "port total_calls" for each node (from INFO commandstats).
commands_per_node() {
  for p in "${CLUSTER_PORTS[@]}"; do
    printf '%s %s\n' "$p" "$(redis-cli -p "$p" info commandstats | awk -F'[=,:]' '/^cmdstat_/ {s += $3} END {print s + 0}')"
  done
}
