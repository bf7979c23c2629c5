#!/usr/bin/env bash
# The build's CPU of two checkouts side by side, in ABBA order (A B B A, repeated), so that a machine's
# load weighs on both alike: each checkout generates and imports its own synthetic release of <genes>
# genes (seed 22) once, then builds it from its release DB, timed by GNU time (user and system CPU,
# wall, peak RSS). One line per build in <work>/results.tsv.
# usage: bench/build-abba.sh <genes> <pairs> <checkout A> <checkout B> [work dir]
# Each checkout must be compiled (`npm run build` there).
set -euo pipefail
genes=$1; pairs=$2; a=$(realpath "$3"); b=$(realpath "$4"); work=$(realpath -m "${5:-/tmp/isoatlas-build-abba}")
[ -x /usr/bin/time ] || { echo "build-abba: needs GNU time (/usr/bin/time; apt-get install time)" >&2; exit 2; }
mkdir -p "$work"
label() { basename "$1"; }
prep() { # the checkout's own release DB, made once
  local dir=$work/$(label "$1")-$genes
  [ -f "$dir/release.sqlite" ] && return
  mkdir -p "$dir"
  for stage in generate import; do
    node "$1/bin/isoatlas.mjs" demo-stage "$stage" --work "$dir" --seed 22 --genes "$genes" > "$dir/$stage.json"
  done
  rm -rf "$dir/inputs" "$dir/tree"
}
build() {
  local dir=$work/$(label "$1")-$genes out=$work/out-$(label "$1")-$genes t=$work/time.txt
  rm -rf "$out"
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -v -o "$t" node "$1/bin/isoatlas.mjs" build --db "$dir/release.sqlite" --out "$out" > "$work/build.log" 2>&1
  printf '%s\t%s\t%s\t%s\tuser=%s\tsys=%s\twall=%s\trss_kib=%s\tload=%s\n' "$(date -u +%H:%M:%S)" "$(label "$1")" \
    "$(git -C "$1" rev-parse --short HEAD)" "$genes" "$(grep 'User time' "$t" | awk '{print $NF}')" \
    "$(grep 'System time' "$t" | awk '{print $NF}')" "$(grep 'Elapsed (wall' "$t" | awk '{print $NF}')" \
    "$(grep 'Maximum resident' "$t" | awk '{print $NF}')" "$load" | tee -a "$work/results.tsv"
}
prep "$a"; prep "$b"
for _ in $(seq "$pairs"); do build "$a"; build "$b"; build "$b"; build "$a"; done
