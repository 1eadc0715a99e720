# Sourced by examples/*/run.sh (not run by itself): from the example's
# folder, go to the repository root, install the reference engine if
# needed, build hiro, register the project's models, set $here and $root,
# and define the function hiro (.bin/hiro with the example's hiro.toml; a
# function, not a string in a variable, so a path with spaces holds). Each step says what
# it builds while it builds; a failed step exits 2.
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root" || exit 2
# One run of an example at a time (exit 6 naming the run that holds it).
source "$root/scripts/example-lock.sh"
example_lock
./scripts/install-ollama.sh >&2 9>&- || exit 2
export PATH="$(go env GOPATH)/bin:$PATH"
./scripts/build.sh 9>&- || exit 2
./scripts/prepare-models.sh "$root/.hiro/ollama-models" >&2 9>&- || exit 2
hiro_config="$here/hiro.toml"
hiro() { "$root/.bin/hiro" --config "$hiro_config" "$@" 9>&-; }

# example_ports PORT...: replace ports other programs hold (example-ports.sh).
source "$root/scripts/example-ports.sh"
