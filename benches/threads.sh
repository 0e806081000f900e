#!/usr/bin/env bash
# Thread scaling of the five scaling scenes: each scene, scheduler and thread count run once with
# `acm run`, wall seconds measured from outside, and the MD5 of the run's frames and CSV files,
# which must be the same at every thread count (exit 1 if not). One line a run is appended to
# the table as it finishes, so a run stopped half way keeps what it measured.
#
#   benches/threads.sh [--acm PATH] [--threads "16 1 4 8 2"] [--schedulers "kds speculative"]
#                      [--scenes "NAME[:UNTIL] ..."] [--until T] [--out TABLE.tsv]
#
# Defaults: target/release/acm, the thread counts and schedulers above, the scenes of
# benches/README.md ("Parallel scaling"), the table on standard output only. `--until T` runs
# every scene to T (a quick check). Profiles are read from profiles/ beside this folder.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
acm="$here/target/release/acm"
threads="16 1 4 8 2"
schedulers="kds speculative"
scenes="sheet_on_sphere sheets_nails_drape:0.08 reef_knot:1.3 bunny_compactor:0.3 drape_100k"
until=""
table=/dev/null
usage() {
  echo "benches/threads.sh: unknown option or missing value: $1; usage:" >&2
  sed -n '7,8p' "$0" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage "$1"
  case "$1" in
    --acm) acm="$2" ;;
    --threads) threads="$2" ;;
    --schedulers) schedulers="$2" ;;
    --scenes) scenes="$2" ;;
    --until) until="$2" ;;
    --out) table="$2" ;;
    *) usage "$1" ;;
  esac
  shift 2
done
[ -x "$acm" ] || { echo "benches/threads.sh: no acm program at $acm (cargo build --release)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'scene\tscheduler\tthreads\twall_s\tmd5\n' | tee -a "$table"
status=0
for scene in $scenes; do
  name="${scene%%:*}"
  end="$until"
  [ -n "$end" ] || { [ "$scene" = "$name" ] || end="${scene#*:}"; }
  for scheduler in $schedulers; do
    first=""
    for n in $threads; do
      out="$work/$name-$scheduler-$n"
      args=(run "$here/profiles/$name.toml" --threads "$n" --set "contact.scheduler=$scheduler" --out "$out")
      [ -z "$end" ] || args+=(--until "$end")
      start=$(date +%s%N)
      if ! "$acm" "${args[@]}" >"$out.log" 2>&1; then
        echo "benches/threads.sh: $name, $scheduler, $n threads failed:" >&2
        tail -3 "$out.log" >&2
        exit 1
      fi
      ms=$(( ($(date +%s%N) - start) / 1000000 ))
      md5=$(cat "$out"/frame_* "$out"/*.csv | md5sum | cut -c1-12)
      printf '%s\t%s\t%s\t%d.%03d\t%s\n' "$name" "$scheduler" "$n" $((ms / 1000)) $((ms % 1000)) "$md5" \
        | tee -a "$table"
      if [ -z "$first" ]; then
        first="$md5"
      elif [ "$md5" != "$first" ]; then
        echo "benches/threads.sh: $name, $scheduler: $n threads wrote other frames than ${threads%% *}" >&2
        status=1
      fi
      rm -rf "$out" "$out.log"
    done
  done
done
exit "$status"
