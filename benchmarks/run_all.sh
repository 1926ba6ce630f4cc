#!/usr/bin/env bash
# Run every benchmark once, one after the other, and print their tables (figures go into BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PYTHONPATH=.
for bench in bench_bvh bench_model bench_runtime bench_viewer bench_edit; do
    echo "=== $bench"
    "$PY" "benchmarks/$bench.py"
done
