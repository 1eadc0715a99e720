# Sourced by scripts/example-setup.sh (not run by itself); needs $here
# (the example's folder) and $root (the repository).

# example_lock: one run of an example at a time. A second run would take
# the first run's own servers for "another program" on the example's ports,
# rewrite its configuration and stop or restart its production (issue 26:
# it exited 2 saying "its profile changed"). The lock is flock(1) on
# .hiro/<example>.lock, held on fd 9 for the script's life (hiro is run
# with fd 9 closed, so the servers it starts do not keep it); its text
# names the run that holds it. Busy: exit 6, as hiro's own refusals. No
# flock on the machine: no lock.
example_lock() {
  command -v flock >/dev/null 2>&1 || return 0
  local name lock
  name="$(basename "$here")"
  lock="$root/.hiro/$name.lock"
  mkdir -p "$root/.hiro" || exit 2
  exec 9>>"$lock" || exit 2
  if ! flock -n 9; then
    local who
    who="$(cat "$lock" 2>/dev/null)"
    echo "$name: another run of examples/$name is in progress (${who:-holder unknown}); nothing was started or stopped: wait for it to end, or stop it with Ctrl-C in its terminal (or kill -INT on its pid: it puts production back), then run this again" >&2
    exit 6
  fi
  echo "pid $$, started $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$lock"
}
