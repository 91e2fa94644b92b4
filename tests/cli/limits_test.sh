#!/usr/bin/env bash
# Hostile settings never take the machine down: a thread count typo, a
# process limit the thread pool runs into, memory beyond what the process
# may have (ulimit -v), and a run's time limit. Each ends with a sentence and
# a documented exit code, quickly; every command runs under `timeout`, and
# the thread cases under a process limit, so that a regression cannot fill
# the machine's process table.
#   limits_test.sh BIN_DIR [SANITIZERS]
set -uo pipefail
bin=$1
sanitize=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

source "$(dirname "$0")/expect.sh"
export MINIRT_ALGO_CACHE=$work/algo_cache.txt

"$bin/minirt-make-models" --out "$work" mnist_cnn resnet18 >/dev/null || { echo "FAIL: minirt-make-models"; exit 1; }
mnist=$work/mnist_cnn.onnx
resnet=$work/resnet18.onnx

# confined EXTRA CMD...: CMD with a process limit (ulimit -u) that leaves room
# for EXTRA more processes and threads than the user already has. root is not
# held to ulimit -u, so as root the command runs as the user nobody.
confined() {
  local extra=$1
  shift
  if [ "$(id -u)" -eq 0 ]; then
    local have
    have=$(ps -L -u 65534 --no-headers 2>/dev/null | wc -l)
    (ulimit -u $((have + extra)) && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@")
  else
    local have
    have=$(ps -L -u "$(id -u)" --no-headers | wc -l)
    (ulimit -u $((have + extra)) && exec "$@")
  fi
}

# A thread count typo is refused at once, before anything starts.
t0=$(date +%s%N)
expect 1 "--threads 100000 is more than the ceiling of [0-9]+ threads \(4 x the [0-9]+ cores this process may use" -- \
  confined 64 timeout 10 "$bin/runmodel" "$mnist" --threads 100000
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$ms" -gt 3000 ]; then
  echo "FAIL: --threads 100000 took $ms ms to be refused"
  failures=$((failures + 1))
fi
expect 1 "--threads expects an integer up to 2147483647" -- "$bin/runmodel" "$mnist" --threads 99999999999
expect 1 "--threads expects an integer >= 0" -- "$bin/runmodel" "$mnist" --threads -3
expect 1 "more than the ceiling" -- confined 64 timeout 10 "$bin/convprof" "$resnet" --threads 5000
expect 2 "more than the ceiling" -- confined 64 timeout 10 "$bin/minirt-conformance" --threads 5000 "$work"

# The system refuses threads: the pool stops the ones it started, and the
# error says how many were asked for and how many ran. Never a hang, never
# std::terminate.
expect 6 "could not start the thread pool: asked for 8 threads \(the caller and 7 workers\), the system let [1-7] run \(Resource temporarily unavailable\).*ulimit -u" -- \
  confined 4 timeout 30 "$bin/runmodel" "$mnist" --device cpu --threads 8 --tune heuristic --iterations 1
# Within the limit the same command runs.
expect 0 "threads: 2" -- confined 16 timeout 60 "$bin/runmodel" "$mnist" --device cpu --threads 2 --tune heuristic --iterations 1

# A plan needing more memory than ulimit -v leaves: the pool's sentence before
# anything is touched, exit 3, never a signal. (A sanitizer build reserves
# terabytes of address space at start, so ulimit -v cannot apply to it; the
# same refusal against MemAvailable runs in-process under the sanitizers:
# SessionLimits.AnArenaBeyondTheMachine... in tests/unit/test_host_limits.cpp.)
if [ -z "$sanitize" ]; then
  # resnet18 at batch 512: a 294 MiB input, a 1.9 GiB arena; 1.43 GiB of address space.
  expect 3 "host memory pool: cannot allocate 1\.[0-9]+ GiB .* for the activation arena of .*resnet18\.onnx \(inputs input 512x3x224x224\).*this process can get only .*ulimit -v 1\.43 GiB" -- \
    bash -c "ulimit -v 1500000 && exec timeout 120 '$bin/runmodel' '$resnet' --device cpu --threads 2 --tune heuristic \
      --shape input=512x3x224x224 --warmup 0 --iterations 1"
  # The input itself past the limit: refused the same way when it is made.
  expect 3 "cannot allocate .* for a tensor of shape 4096x3x224x224: this process can get .*ulimit -v" -- \
    bash -c "ulimit -v 1500000 && exec timeout 60 '$bin/runmodel' '$resnet' --device cpu --threads 2 --tune heuristic \
      --shape input=4096x3x224x224 --warmup 0 --iterations 1"
else
  echo "note: ulimit -v cases not run in a $sanitize build (see above)"
fi

# A run's time limit: exit 7 with the sentence; bad limits are usage errors.
expect 7 "resnet18\.onnx: the run \(inputs input 1x3x224x224\) stopped .* past its limit of 0\.001 s" -- \
  timeout 60 "$bin/runmodel" "$resnet" --device cpu --tune heuristic --run-timeout 0.001 --iterations 1
expect 7 "^runmodel: --run-timeout SECONDS sets the limit" -- \
  timeout 60 "$bin/runmodel" "$resnet" --device cpu --tune heuristic --run-timeout 0.001 --iterations 1
expect 0 "latency" -- timeout 60 "$bin/runmodel" "$mnist" --device cpu --tune heuristic --run-timeout 30 --iterations 2
expect 1 "--run-timeout expects seconds >= 0, got '-1'" -- "$bin/runmodel" "$mnist" --run-timeout -1
expect 1 "--run-timeout expects seconds >= 0, got 'soon'" -- "$bin/runmodel" "$mnist" --run-timeout soon

# The exit codes are documented.
# bf16 math under a memory limit: runs within one (the packed bf16 inputs are
# arena workspace, counted like the rest), and a limit below the arena ends
# with the pool's sentence and exit 3, as in float32. On a CPU without bf16
# instructions the same holds for the float32 run it falls back to.
expect 0 "memory pool: policy grow, limit 16\.00 MiB" -- \
  timeout 60 "$bin/runmodel" "$resnet" --device cpu --math bf16 --memory-limit 16M --iterations 2 --warmup 0 --memory-stats
expect 3 "host memory pool: cannot allocate .* for the activation arena of .*resnet18\.onnx.*its memory limit is 1\.00 MiB" -- \
  timeout 60 "$bin/runmodel" "$resnet" --device cpu --math bf16 --memory-limit 1M --iterations 1 --warmup 0

expect 0 "6  the system would not start the threads.*7  a run took longer than --run-timeout" -- \
  bash -c "'$bin/runmodel' --help | tr '\n' ' '"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all limits checks passed"
