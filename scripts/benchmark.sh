#!/usr/bin/env bash
# Benchmark: set up on first use (scripts/bootstrap.sh), then run benchmarks/speed.py ARGS.
# Usage: bash scripts/benchmark.sh [--job default|full-lap|both] [--runs K] [--side-by-side] [--first-run]
#                                  [--mesh N1 N2 ...] [--csv FILE]
# (--side-by-side also needs the ASL path's ipopt executable: PYOMO_LAP_ASL=1 builds it.)
set -euo pipefail
export PYOMO_LAP_ASL=${PYOMO_LAP_ASL:-1}     # --side-by-side runs the ASL path too
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec "$PWD/.venv/bin/python" benchmarks/speed.py "$@"
