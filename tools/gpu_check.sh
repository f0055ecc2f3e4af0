#!/usr/bin/env bash
# Every check that needs a real GPU, in one run that fits a short lease on a GPU machine.
#
#     bash tools/gpu_check.sh [OUT] [tests] [steps] [bench]
#
# OUT is the folder for what comes back (default: $OUT if set, else build/gpu_check); the
# stages named after it run (default: all three, in this order):
#
#   tests  python -m pytest -m gpu over the test files that hold GPU tests: values and
#          gradients on CuPy against NumPy, the fused kernels, no host-to-device copy or
#          wait inside a training step (issue 15's first list);
#   steps  every step twice over, as the reader runs it (`python steps/stepNN.py`, the
#          solutions on) and as its notebook runs in a Colab GPU runtime (solutions off,
#          tools/run_steps.py --exercises), several steps at a time; a step's GPU branch
#          runs because CuPy sees a device;
#   bench  benchmarks/mnist_gpu.py --device gpu: the book's MLP (one and two hidden layers)
#          and the small CNN, against the same maths by hand and PyTorch eager, in one run.
#
# Nothing is installed: the checkout's package is imported through PYTHONPATH, so the
# machine needs NumPy, CuPy, Matplotlib, tqdm, pytest, pytest-xdist and hypothesis
# (PyTorch for the benchmark's last column). MNIST comes from $DEZERO_LIKE_DATA, else from
# ../shared/data or .devdata beside this checkout (a folder holding mnist/; copy the test
# files from ../shared/data/mnist there when ../shared does not travel with the checkout).
#
# What it writes to OUT (at most 6 files, no subfolders): summary.txt (the machine, each
# stage's verdict and its time), tests.log and tests.xml (JUnit), steps.log, bench.log,
# and step54_crossover.png (step 54's CPU/GPU curves) when step 54 drew it. Each stage has
# a time limit (TESTS_S, STEPS_S, BENCH_S seconds, the last for both benchmark runs together;
# JOBS parallel workers; STEPS="54 71" runs only those steps; PYTHON names the interpreter,
# python3 by default), so the whole run ends within 9.5 minutes, inside the 10 minutes one
# command may take on a lent GPU machine; the exit status is 0 only when every stage that ran
# passed.
#
# Rehearsal without a GPU: GPU_CHECK_EMULATE=1 puts tests/cupy_on_cpu.py (the CuPy emulator
# of the test suite) in CuPy's place, for the tests and the steps alike; it checks that this
# script runs to its end, not the GPU (the benchmark then reports that it needs a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
args="$*"

out=${OUT:-$ROOT/build/gpu_check}
if [ $# -gt 0 ] && [[ $1 != tests && $1 != steps && $1 != bench ]]; then
  out=$1
  shift
fi
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(tests steps bench)
for s in "${stages[@]}"; do
  case $s in tests|steps|bench) ;; *) echo "gpu_check: unknown stage '$s' (tests, steps, bench)" >&2; exit 2 ;; esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
JOBS=${JOBS:-8}
PY=${PYTHON:-python3}  # the GPU machines' python3 holds CuPy and PyTorch; some have no `python`
# at most 200 + 170 + 160 s, and 10 s of grace each: under the 10 minutes one command may take
# on a lent GPU machine, so the summary's last line always comes back
TESTS_S=${TESTS_S:-200}
STEPS_S=${STEPS_S:-170}
BENCH_S=${BENCH_S:-160}

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export MPLBACKEND=Agg PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-2} OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
if [ -z "${DEZERO_LIKE_DATA:-}" ]; then
  for d in "$ROOT/../shared/data" "$ROOT/.devdata"; do
    if [ -f "$d/mnist/t10k-images-idx3-ubyte.gz" ]; then export DEZERO_LIKE_DATA=$d; break; fi
  done
fi
export DEZERO_LIKE_OFFLINE=1  # a GPU machine without a network must not wait on a download

work=$(mktemp -d "${TMPDIR:-/tmp}/dz_check.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ "${GPU_CHECK_EMULATE:-}" = 1 ]; then
  mkdir -p "$work/emulated"
  ln -s "$ROOT/tests/cupy_on_cpu.py" "$work/emulated/cupy.py"
  export PYTHONPATH="$work/emulated:$PYTHONPATH" DEZERO_LIKE_CUPY_ON_CPU=1
fi

summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
: >"$summary"
say "command: bash tools/gpu_check.sh $args (stages: ${stages[*]})"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
  git diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
else
  commit="unknown (no git here: a copy of the working tree)"
fi
say "commit: $commit"
say "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
say "gpu: $( (nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: none') | head -1)"
say "cpu: $(nproc) cores; MNIST from ${DEZERO_LIKE_DATA:-nowhere (the MNIST steps will say so)}"
"$PY" - <<'EOF' 2>&1 | tee -a "$summary"
import platform
line = [f"python {platform.python_version()}"]
for name in ("numpy", "cupy", "torch", "matplotlib", "pytest", "xdist", "hypothesis"):
    try:
        module = __import__(name)
        line.append(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001 - report whatever stops the import
        line.append(f"{name} missing ({type(error).__name__})")
print("; ".join(line))
try:
    import dezero_like
    from dezero_like import cuda
    print(f"dezero_like from {dezero_like.__file__}; GPU visible: {cuda.gpu_available()}")
except Exception as error:  # noqa: BLE001
    print(f"dezero_like does not import: {error!r}")
EOF

status=0
verdict() {  # stage, exit code, seconds, detail (exit 3: the benchmark saw no GPU)
  local word=passed
  [ "$2" -ne 0 ] && word="FAILED (exit $2)" && status=1
  [ "$2" -eq 124 ] && word="TIMED OUT after $3 s" && status=1
  say "$1: $word in $3 s${4:+; $4}"
}

run_tests() {
  local files start rc
  # only the files that hold GPU tests: the others' imports (nbclient, ruff, ...) need not
  # exist on a GPU machine, and their tests have nothing of the GPU's to check
  files=$(grep -l "mark.gpu" tests/*.py tests/steps/*.py | grep -v test_cupy_on_cpu.py)
  start=$SECONDS
  # shellcheck disable=SC2086
  timeout -k 10 "$TESTS_S" "$PY" -m pytest -m gpu -n "$JOBS" -q -rfEs -p no:cacheprovider \
    --junitxml="$out/tests.xml" $files >"$out/tests.log" 2>&1
  rc=$?
  verdict tests "$rc" $((SECONDS - start)) "$(grep -E '(passed|failed|error|skipped|deselected).* in [0-9.]+s' "$out/tests.log" | tail -1 | tr -d '=' | xargs)"
  if grep -q "SKIPPED" "$out/tests.log"; then
    say "  skipped GPU tests (on a GPU machine each is a defect or a missing package):"
    grep "SKIPPED" "$out/tests.log" | sed 's/^/    /' | head -20 | tee -a "$summary" >/dev/null
  fi
}

run_steps() {
  local start rc list
  mkdir -p "$work/steps"
  list=${STEPS:-$(cd steps && ls step[0-9][0-9].py | sed 's/step0*\([0-9]*\)\.py/\1/')}
  start=$SECONDS
  # one line per step and way of running: "NN script|notebook ok|FAILED ...", output to a file
  # of its own; each step runs in a folder of its own, so outputs/ never collide
  export ROOT work PY
  one() {
    local n=$1 mode=$2 dir="$work/steps/$1-$2" rc
    mkdir -p "$dir"
    if [ "$mode" = script ]; then
      (cd "$dir" && "$PY" "$ROOT/steps/step$(printf %02d "$n").py") >"$dir/log" 2>&1
    else
      (cd "$dir" && "$PY" "$ROOT/tools/run_steps.py" --exercises "$n") >"$dir/log" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ]; then echo "step $n $mode: ok"; else echo "step $n $mode: FAILED (exit $rc)"; fi |
      tee "$dir/verdict"
  }
  export -f one
  timeout -k 10 "$STEPS_S" bash -c '
    for n in '"$(echo $list)"'; do echo "$n script"; echo "$n notebook"; done |
      xargs -P '"$JOBS"' -L 1 bash -c '"'"'one "$0" "$1"'"'"' ' >"$work/steps.lines" 2>&1
  rc=$?
  {
    sort -n -k2 "$work/steps.lines"
    for f in $(ls -d "$work"/steps/*/ 2>/dev/null | sort -V); do  # failed, or cut off unfinished
      if ! grep -q ": ok$" "$f/verdict" 2>/dev/null; then
        echo; echo "===== $(basename "$f") (not ok): last lines ====="; tail -40 "$f/log"
      fi
    done
    echo; echo "===== GPU lines of every step ====="
    grep -H -i -E "gpu|cuda|speed-up|launch" "$work"/steps/*-script/log | sed "s|$work/steps/||" | head -300
  } >"$out/steps.log"
  local ok failed
  ok=$(grep -c ": ok$" "$work/steps.lines")
  failed=$(grep -c "FAILED" "$work/steps.lines")
  [ "$rc" -eq 0 ] && [ "$failed" -gt 0 ] && rc=1
  verdict steps "$rc" $((SECONDS - start)) "$ok ok, $failed failed of $(($(echo $list | wc -w) * 2)) runs"
  grep "FAILED" "$work/steps.lines" | sed 's/^/  /' | tee -a "$summary" >/dev/null
  local pic
  pic=$(ls "$work"/steps/54-script/outputs/step54/cpu_gpu_crossover.png 2>/dev/null)
  [ -n "$pic" ] && cp "$pic" "$out/step54_crossover.png"
}

run_bench() {
  local start rc
  if [ "${GPU_CHECK_EMULATE:-}" = 1 ]; then
    say "bench: not run (emulation: timings need a real GPU)"
    return
  fi
  start=$SECONDS
  local end=$((SECONDS + BENCH_S))  # one budget for both runs
  {
    timeout -k 5 "$BENCH_S" "$PY" benchmarks/mnist_gpu.py --device gpu --epochs 3 &&
      if [ $((end - SECONDS)) -ge 20 ]; then
        timeout -k 5 $((end - SECONDS)) "$PY" benchmarks/mnist_gpu.py --device gpu --epochs 3 \
          --layers 2 --skip-cnn
      else
        echo "784-1000-1000-10: not run (BENCH_S=$BENCH_S s spent on the first run)"
      fi
  } >"$out/bench.log" 2>&1
  rc=$?
  grep -q "not measured" "$out/bench.log" && [ "$rc" -eq 0 ] && rc=3  # the benchmark saw no GPU
  verdict bench "$rc" $((SECONDS - start)) "$(grep -E '^ratio' "$out/bench.log" | tr '\n' ' ')"
}

for s in "${stages[@]}"; do
  "run_$s"
done
say "gpu_check: $([ $status -eq 0 ] && echo 'every stage passed' || echo 'SOME STAGE FAILED') ($SECONDS s)"
exit $status
