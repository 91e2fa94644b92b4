#!/usr/bin/env bash
# The classic GPU-stack failures, each replayed as a real run: for every
# scenario of fallback_scenarios.txt, a folder laid out like that broken
# install (fake CUDA libraries from tests/gpu_fakes/), and in it
# `runmodel MODEL --compare cpu,auto`: the plain CPU run, then --device auto,
# which asks the compatibility gate, falls back to the CPU with the gate's
# sentence (or, on the machine's own stack with a working GPU, runs there), and
# is compared with the CPU's outputs. Prints a table; writes OUTDIR/fallback.md
# (the table with each sentence in full) and OUTDIR/fallback.svg (drawn by
# minirt-chart: per scenario what broke, CPU or GPU, the first clause of the
# gate's sentence, the latency). The speed-up over the CPU alone is shown only
# where the run went to another device; a run on the CPU says "same device".
#
#   tools/fallback-demo.sh MODEL.onnx [OUTDIR]    (installed: minirt-fallback-demo)
#
# Environment: MINIRT_BIN (where runmodel is), MINIRT_GPU_FAKES (the fake
# libraries), MINIRT_DEMO_ITERATIONS (timed runs per scenario, default 20).
set -uo pipefail

usage() { echo "usage: $(basename "$0") MODEL.onnx [OUTDIR]" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
case "$1" in -h | --help) usage ;; esac
model=$1
outdir=${2:-fallback-demo}
[ -f "$model" ] || { echo "$(basename "$0"): $model: no such model file" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)

# Where the pieces are: next to this script when installed (bin/, lib/minirt/,
# share/minirt/), else the source tree with its build/.
first_of() {
  for p in "$@"; do [ -e "$p" ] && { echo "$p"; return 0; }; done
  return 1
}
bin=${MINIRT_BIN:-$(dirname "$(first_of "$here/runmodel" "$here/../build/bin/runmodel" || echo "$here/runmodel")")}
fakes=${MINIRT_GPU_FAKES:-$(first_of "$here"/../lib/minirt/gpu-fakes "$here"/../lib*/minirt/gpu-fakes \
  "$here"/../lib/*/minirt/gpu-fakes "$here/../build/tests/gpu_fakes" || echo "")}
scenarios=$(first_of "$here/../share/minirt/fallback_scenarios.txt" "$here/fallback_scenarios.txt" || echo "")
iterations=${MINIRT_DEMO_ITERATIONS:-20}
[ -x "$bin/runmodel" ] || { echo "$(basename "$0"): runmodel not found in $bin (set MINIRT_BIN)" >&2; exit 1; }
[ -x "$bin/minirt-chart" ] || { echo "$(basename "$0"): minirt-chart not found in $bin (set MINIRT_BIN)" >&2; exit 1; }
[ -f "$fakes/libcuda.so.1" ] || { echo "$(basename "$0"): the fake CUDA libraries are not in '$fakes' (set MINIRT_GPU_FAKES)" >&2; exit 1; }
[ -f "$scenarios" ] || { echo "$(basename "$0"): fallback_scenarios.txt not found" >&2; exit 1; }
mkdir -p "$outdir" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

trim() { local s=$1; s=${s#"${s%%[! ]*}"}; echo "${s%"${s##*[! ]}"}"; }

# build_layout ROOT LAYOUT: the steps of the scenario's layout field; prints
# the environment the layout needs (NAME=VALUE lines).
build_layout() {
  local root=$1 layout=$2 step
  IFS=';' read -ra steps <<<"$layout"
  for step in "${steps[@]}"; do
    step=$(trim "$step")
    read -ra w <<<"$step"
    case "${w[0]:--}" in
      -) ;;
      healthy)
        local venv=$root/venv/lib/python3.11/site-packages/nvidia
        mkdir -p "$root/driver" "$venv/cudnn/lib" "$venv/cu13/lib"
        cp "$fakes/libcuda.so.1" "$root/driver/"
        cp "$fakes/libcudnn.so.9" "$venv/cudnn/lib/"
        for s in graph ops cnn adv; do cp "$fakes/libcudnn_$s.so.9" "$venv/cudnn/lib/"; done
        for s in engines_precompiled engines_runtime_compiled heuristic; do
          cp "$fakes/libfake_empty.so" "$venv/cudnn/lib/libcudnn_$s.so.9"
        done
        cp "$fakes/libcublas.so.13" "$venv/cu13/lib/"
        echo "MINIRT_CUDA_PATH=$root/driver"
        echo "VIRTUAL_ENV=$root/venv"
        ;;
      put) mkdir -p "$(dirname "$root/${w[2]}")" && cp "$fakes/${w[1]}" "$root/${w[2]}" ;;
      rm) rm -rf "${root:?}/${w[1]}" ;;
      *) echo "fallback_scenarios.txt: unknown layout step '$step'" >&2; return 1 ;;
    esac
  done
}

rows=()
printf '%-14s %-6s %-10s %-11s %-9s %s\n' scenario device "latency" "speed-up" "vs CPU" "decision"
while IFS='|' read -r id title layout envs rule says; do
  id=$(trim "$id")
  case "$id" in '' | '#'*) continue ;; esac
  title=$(trim "$title"); layout=$(trim "$layout"); envs=$(trim "$envs")
  root=$work/$id
  mkdir -p "$root"
  vars=(-u MINIRT_CUDA_PATH -u VIRTUAL_ENV -u CONDA_PREFIX)
  if [ "$id" != as_installed ]; then
    vars+=(MINIRT_PROBE_ONLY=1)
    layout_env=$(build_layout "$root" "$layout") || exit 1
    while IFS= read -r kv; do [ -n "$kv" ] && vars+=("$kv"); done <<<"$layout_env"
    if [ "$envs" != "-" ]; then
      for kv in $envs; do vars+=("${kv//@/$root}"); done
    fi
  fi
  log=$work/$id.txt
  env "${vars[@]}" "$bin/runmodel" "$model" --compare cpu,auto --warmup 3 --iterations "$iterations" --top-k 0 \
    >"$log" 2>&1
  rc=$?
  # The auto run's block: its decision line, latency and comparison.
  decision=$(sed -n 's/^\[2\] auto: //p' "$log" | sed 's/ ([0-9]* threads\{0,1\})$//')
  device=cpu
  case "$decision" in "running on cuda"*) device=cuda ;; "not usable: "*) device=none ;; esac
  sentence=${decision#running on the CPU: }
  sentence=${sentence//$root/ROOT}  # the scenario's folder, a temporary one
  latency=$(awk '/^\[2\] auto:/{b=1} b && /latency median/{for(i=1;i<=NF;i++) if($i=="median"){print $(i+1); exit}}' "$log")
  cpu_latency=$(awk '/^\[1\] cpu:/{b=1} b && /latency median/{for(i=1;i<=NF;i++) if($i=="median"){print $(i+1); exit}}' "$log")
  agree=$(awk '/^\[2\] auto against/{b=1; next} b && /-> /{if ($0 ~ /-> FAIL/) f=1; n++} END{print (n==0 ? "-" : (f ? "differ" : "match"))}' "$log")
  [ "$rc" -eq 0 ] || [ "$rc" -eq 8 ] || { agree="error (exit $rc)"; sentence=$(tail -3 "$log" | tr '\n' ' '); }
  # Speed-up over the CPU alone in the same process, where the run went to
  # another device; two CPU runs would only compare their timing noise.
  speedup=
  case "$device" in
    cpu) speedup="same device" ;;
    none) ;;
    *) speedup=$(awk -v c="${cpu_latency:-0}" -v l="${latency:-0}" 'BEGIN{if (c > 0 && l > 0) printf "%.2fx", c / l}') ;;
  esac
  # The terminal gets each sentence up to its advice; fallback.md has it whole.
  printf '%-14s %-6s %-10s %-11s %-9s %s\n' "$id" "$device" "${latency:--} ms" "${speedup:--}" "$agree" "${sentence%%; *}"
  rows+=("$id|$title|$device|${latency:-}|${cpu_latency:-}|${speedup:-}|$agree|$sentence")
done <"$scenarios"

# fallback.md: the table, every sentence in full.
{
  echo "# CPU-vs-GPU fallback: $(basename "$model")"
  echo
  echo "Made by \`tools/fallback-demo.sh\` on $(date -u +%Y-%m-%d) ($(uname -n), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')):"
  echo "each row is a real \`runmodel --compare cpu,auto\` with the GPU stack laid out as the scenario says"
  echo "(fake CUDA libraries in a folder ROOT of its own, \`MINIRT_PROBE_ONLY=1\`); the first row is the machine's own stack."
  echo
  echo "| scenario | what the machine has | ran on | latency median (ms) | CPU alone (ms) | speed-up | outputs vs CPU | the gate's decision |"
  echo "| --- | --- | --- | ---: | ---: | ---: | --- | --- |"
  for r in "${rows[@]}"; do
    IFS='|' read -r id title device lat cpu speedup agree sentence <<<"$r"
    echo "| $id | $title | $device | ${lat:--} | ${cpu:--} | ${speedup:--} | $agree | ${sentence//|/\\|} |"
  done
} >"$outdir/fallback.md"

# fallback.svg: a row per scenario (tools/charts.h), from the rows as tab-separated fields.
for r in "${rows[@]}"; do
  IFS='|' read -r id title device lat _ speedup agree sentence <<<"$r"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$title" "$device" "${lat:--}" "${speedup:--}" "$agree" "$sentence"
done >"$work/rows.tsv"
"$bin/minirt-chart" fallback "$work/rows.tsv" "$outdir/fallback.svg" \
  --title "$(basename "$model"): where runmodel --device auto ran in each broken GPU stack, and why" || exit 1
echo "wrote $outdir/fallback.md and $outdir/fallback.svg"
