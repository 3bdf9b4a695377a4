#!/usr/bin/env bash
# Every GPU check and benchmark of the project in one device call, within one command's limit.
#
#   python bench/wheels.py             # first, where pip reaches PyPI: the wheels into .whl/, checked
#   bash bench/h200.sh                 # on the GPU machine, from the checkout (.whl carried along)
#   STEPS=engine BUDGET=590 bash bench/h200.sh      # one step with the whole call (then, in a second
#   STEPS="tests smoke" bash bench/h200.sh          # call within the machine's idle time, the others)
#   DRY=1 bash bench/h200.sh           # the same sequence on a CPU (tiny models), to check the script
#
# Results go to $OUT (the device tool brings back what is there): nvidia-smi.txt, gpu_tests.txt,
# gpu_engine.json/.md/.log, smoke_bench.json/.log, smoke_worst.json/.log, and summary.txt with each step's exit status and
# seconds (appended to). gpu_engine's exit status: 0 ran to its end (lost parts named in its JSON and table), 124
# stopped by the time, 3 gave up (its measuring process kept dying), 1 an error outside its parts. BUDGET (default 570 s) is the whole run; the steps get, in this order:
#   1. the GPU tests (pytest tests/kernels tests/model -m gpu): at most TESTS_S (default 100 s);
#   2. bench/gpu_engine.py (issue 4's table): what is left but SMOKE_S, as its --time-limit;
#   3. bench/smoke_bench.py (64 cases at 7.2B), then with --worst-case: the last SMOKE_S (default 120 s).
# A step that fails or runs out of time does not stop the next; each keeps what it saved (the
# engine saves its JSON and table after every part, and on SIGTERM kills its workers first).
# nvidia-smi and the version probe have timeouts of their own.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/h200-out}
BUDGET=${BUDGET:-570}
SMOKE_S=${SMOKE_S:-120}
TESTS_S=${TESTS_S:-100}
STEPS=" ${STEPS:-tests engine smoke} "
PY=${PY:-python3}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - start))); }
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
step() {  # step NAME SECONDS COMMAND...: run with a timeout, log to $OUT/NAME.log, note status and time
    local name=$1 secs=$2 t0 rc
    shift 2
    if [ "$secs" -lt 20 ]; then
        note "$name: skipped (${secs} s left)"
        return
    fi
    t0=$(date +%s)
    timeout --kill-after=10 "$secs" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    case $name:$rc in
        *:124 | *:137) why=", timed out: what it saved before stays" ;;
        gpu_engine:3) why=", gave up: its measuring process kept dying; what it saved before stays" ;;
        *) why="" ;;
    esac
    note "$name: exit $rc in $(($(date +%s) - t0)) s (limit $secs s$why)"
}

# appended to, not emptied: a second call into the same $OUT keeps the first one's lines
note "== $(date -u '+%Y-%m-%d %H:%M:%S') UTC, steps:$STEPS, budget $BUDGET s"
if [ -n "${DRY:-}" ]; then
    note "dry run on the CPU: $(uname -m), $(nproc) cores"
    dry=(--dry-run)
else
    timeout 30 nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
    note "$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
    dry=()
fi
probe='import sys; print(sys.version.split()[0], end=" ")
for name in ("torch", "triton"):
    try:
        print(name, __import__(name).__version__, end=" ")
    except Exception as exc:
        print(name, "not importable:", type(exc).__name__, exc, end=" ")
print()'
note "python: $(timeout 60 "$PY" -c "$probe" 2>&1 | tail -1)"
note "wheels: $(timeout 10 "$PY" bench/wheels.py --check 2>&1 | tr '\n' ' ')"  # each missing one named

[[ $STEPS == *" smoke "* ]] || SMOKE_S=0
if [[ $STEPS == *" tests "* ]]; then
    cap=$(($(left) - SMOKE_S - 5))
    [[ $STEPS == *" engine "* ]] && cap=$((cap - 200))  # leave the benchmark at least 200 s
    step gpu_tests "$((cap < TESTS_S ? cap : TESTS_S))" "$PY" -m pytest -q -p no:cacheprovider tests/kernels tests/model -m gpu -rs
fi
if [[ $STEPS == *" engine "* ]]; then
    engine=$(($(left) - SMOKE_S - 5))
    step gpu_engine "$engine" "$PY" bench/gpu_engine.py --wheels .whl --out "$OUT/gpu_engine.json" \
        --time-limit $((engine - 25)) ${dry[@]+"${dry[@]}"}
fi
if [[ $STEPS == *" smoke "* ]]; then
    step smoke_bench "$((($(left) - 5) / 2))" "$PY" bench/smoke_bench.py --wheels .whl --out "$OUT/smoke_bench.json" \
        ${dry[@]+"${dry[@]}"}
    step smoke_worst "$(($(left) - 5))" "$PY" bench/smoke_bench.py --wheels .whl --worst-case --out "$OUT/smoke_worst.json" \
        ${dry[@]+"${dry[@]}"}
fi
note "total: $(($(date +%s) - start)) s of $BUDGET s"
