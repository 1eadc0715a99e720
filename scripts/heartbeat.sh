# Sourced by the build scripts (not run by itself). heartbeat_run WHO WHAT
# CMD...: runs CMD in the background and, while it runs, prints
# "WHO: still building WHAT: N s so far" on stderr every
# HIRO_HEARTBEAT_SECONDS (60 by default): a silent compiler is working,
# not hung. Returns CMD's exit status.
heartbeat_run() {
  local who="$1" what="$2"
  shift 2
  "$@" &
  local pid=$! start=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq "${HIRO_HEARTBEAT_SECONDS:-60}"); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "$who: still building $what: $(( SECONDS - start )) s so far" >&2
    fi
  done
  wait "$pid"
}
