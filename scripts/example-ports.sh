# Sourced by scripts/example-setup.sh (not run by itself); needs $here
# (the example's folder) and $root (the repository).

# example_ports PORT... : the example's fixed ports (its hiro.toml and
# plan.toml name them). A port another program already listens on is
# replaced by a free one: the example's hiro.toml and plan.toml are copied
# to .hiro/<example>-ports/ (two levels down, like the example, so their
# relative paths still hold) with the ports rewritten, the example's other
# files linked beside them (its logs/, artifact/, seed-host.json: paths
# relative to the configuration's folder hold too), and $hiro_config (the
# configuration the hiro function passes) and $plan point at the copies;
# each replacement is said. With every port free, $plan is the example's
# own plan.toml. Every example's run.sh calls it with every port of its
# hiro.toml (backends, the router's listen port).
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
example_ports() {
  plan="$here/plan.toml"
  local cfg="$here/hiro.toml" sub="" p q taken=" $* "
  for p in "$@"; do
    port_busy "$p" || continue
    for q in $(seq $((p + 100)) $((p + 400))); do
      case "$taken" in *" $q "*) continue ;; esac
      port_busy "$q" || break
    done
    echo "$(basename "$here"): port $p is in use by another program; using $q instead" >&2
    taken="$taken$q "
    sub="$sub;s/\\b$p\\b/$q/g"
  done
  [ -n "$sub" ] || return 0
  local dir="$root/.hiro/$(basename "$here")-ports"
  mkdir -p "$dir" || exit 2
  sed -e "${sub#;}" "$cfg" >"$dir/hiro.toml" || exit 2
  sed -e "${sub#;}" "$here/plan.toml" >"$dir/plan.toml" || exit 2
  local f
  for f in "$here"/*; do
    case "$(basename "$f")" in hiro.toml | plan.toml | run.sh) continue ;; esac
    ln -sfn "$f" "$dir/$(basename "$f")" || exit 2
  done
  echo "$(basename "$here"): running with $dir/hiro.toml and plan.toml (the example's, with those ports)" >&2
  hiro_config="$dir/hiro.toml"
  plan="$dir/plan.toml"
}
