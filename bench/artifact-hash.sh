#!/usr/bin/env bash
# Benchmark for issue 3 (hiro artifact pin): hashing speed against OpenSSL.
#
# Makes four 1 GiB files of random bytes in a temporary directory (kept in the
# page cache: the machine needs about 5 GiB of free memory and 4 GiB of free
# disk), then times, in the same run, best of $REPS (default 5):
#
#   hiro-4      hiro artifact pin over the four files (parallel, one per core)
#   openssl-4   openssl dgst -sha256 over the four files, one after another
#   sha256sum-4 coreutils sha256sum over the four files
#   hiro-1      hiro artifact pin over one 1 GiB file
#   openssl-1   openssl dgst -sha256 over the same file
#
# Targets: hiro-4 at least 1.8x faster than openssl-4 on a 2-core machine;
# hiro-1 within 5% of openssl-1 (ratio openssl-1/hiro-1 >= 0.95).
# It also checks that hiro's hashes equal OpenSSL's. The files are deleted on
# exit, whatever happens.
#
# Usage: bench/artifact-hash.sh            (from the repository root or not)
#        REPS=3 SIZE_MIB=256 bench/artifact-hash.sh   (a quicker, smaller run)
#        HIRO_BIN=/path/to/hiro bench/artifact-hash.sh (use a built binary;
#        otherwise it builds one with go build)
set -euo pipefail

REPS=${REPS:-5}
SIZE_MIB=${SIZE_MIB:-1024}
REV=49ec31ec0975e46a1aeef24186a45f11be3042b8 # any 40-hex commit will do

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/hiro-artifact-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

for tool in openssl sha256sum; do
	command -v "$tool" >/dev/null || { echo "artifact-hash.sh: $tool not found" >&2; exit 2; }
done

echo "# machine"
echo "cpus:      $(nproc)"
echo "cpu:       $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
if grep -qw sha_ni /proc/cpuinfo; then sha_ni=yes; else sha_ni=no; fi
echo "sha_ni:    $sha_ni (Go's crypto/sha256 and OpenSSL use it when present)"
echo "go:        $(go version 2>/dev/null | cut -d' ' -f3- || echo "not installed (HIRO_BIN given)")"
echo "openssl:   $(openssl version)"
echo "sha256sum: $(sha256sum --version | head -1)"

if [[ -n ${HIRO_BIN:-} ]]; then
	HIRO=$HIRO_BIN
	echo "# using $HIRO"
else
	echo "# building hiro"
	(cd "$root" && go build -o "$work/hiro" ./cmd/hiro)
	HIRO=$work/hiro
fi

echo "# making 4 x ${SIZE_MIB} MiB files in $work"
mkdir "$work/four" "$work/one"
for i in 1 2 3 4; do
	head -c "$((SIZE_MIB << 20))" /dev/urandom >"$work/four/model-0000$i-of-00004.safetensors"
done
ln "$work/four/model-00001-of-00004.safetensors" "$work/one/model.safetensors"
cat "$work"/four/* >/dev/null # into the page cache
files=("$work"/four/*)

# timed CMD...: run CMD once, print "WALL CPU" in seconds (CPU: user+system
# of CMD and its children). CPU time barely moves with load from other
# processes; wall time does.
timed() {
	local TIMEFORMAT='%R %U %S' t
	t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
	awk '{ printf "%.3f %.3f", $1, $2 + $3 }' <<<"$t"
}
# best A B: of two "WALL CPU" pairs, the one with the smaller wall time (A may be empty).
best() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (a == "" || y[1] < x[1]) ? b : a }'; }

hiro_pin() { "$HIRO" artifact pin --dir "$1" --repo bench/model --revision "$REV" --out "$work/$2.json"; }
openssl_seq() { for f in "$@"; do openssl dgst -sha256 "$f"; done; }

echo "# checking that hiro and openssl agree"
hiro_pin "$work/four" check >/dev/null
for f in "${files[@]}"; do
	want=$(openssl dgst -sha256 -r "$f" | cut -d' ' -f1)
	grep -q "\"sha256\": \"$want\"" "$work/check.json" || { echo "hash of $f differs from openssl's $want" >&2; exit 1; }
done
echo "ok: 4 hashes equal"

# The tools take turns in every round, so that load from other processes
# falls on all of them alike; each keeps its best round.
echo "# timing, best of $REPS interleaved rounds, wall seconds (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
h4="" o4="" s4="" h1="" o1="" # "WALL CPU" pairs
for _ in $(seq "$REPS"); do
	h4=$(best "$h4" "$(timed hiro_pin "$work/four" four)")
	o4=$(best "$o4" "$(timed openssl_seq "${files[@]}")")
	s4=$(best "$s4" "$(timed sha256sum "${files[@]}")")
	h1=$(best "$h1" "$(timed hiro_pin "$work/one" one)")
	o1=$(best "$o1" "$(timed openssl dgst -sha256 "$work/one/model.safetensors")")
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg) (a load above the core count makes the numbers noisy)"

gib4=$(awk -v m="$SIZE_MIB" 'BEGIN { print 4 * m / 1024 }')
gib1=$(awk -v m="$SIZE_MIB" 'BEGIN { print m / 1024 }')
row() { awk -v n="$1" -v t="$2" -v g="$3" 'BEGIN { split(t, x, " "); printf "%-12s wall %7.3f s  %6.2f GiB/s   cpu %7.3f s\n", n, x[1], g / x[1], x[2] }'; }
row hiro-4 "$h4" "$gib4"
row openssl-4 "$o4" "$gib4"
row sha256sum-4 "$s4" "$gib4"
row hiro-1 "$h1" "$gib1"
row openssl-1 "$o1" "$gib1"

echo "# results"
awk -v h="$h4" -v o="$o4" -v s="$s4" -v g="$gib4" 'BEGIN {
	split(h, H, " "); split(o, O, " "); split(s, S, " ")
	r = O[1] / H[1]
	printf "four files: hiro %.2fx faster (wall) than sequential openssl (target >= 1.80x): %s\n", r, (r >= 1.8 ? "PASS" : "FAIL")
	printf "four files: hiro %.2fx faster (wall) than sha256sum\n", S[1] / H[1]
	printf "four files: cpu seconds per GiB: hiro %.3f, openssl %.3f, sha256sum %.3f\n", H[2] / g, O[2] / g, S[2] / g
}'
awk -v h="$h1" -v o="$o1" 'BEGIN {
	split(h, H, " "); split(o, O, " ")
	r = O[1] / H[1]
	printf "one file:   hiro at %.1f%% of openssl speed (wall; target >= 95%%): %s\n", 100 * r, (r >= 0.95 ? "PASS" : "FAIL")
	printf "one file:   hiro at %.1f%% of openssl speed (cpu)\n", 100 * O[2] / H[2]
}'
