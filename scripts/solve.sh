#!/usr/bin/env bash
# Main job: set up on first use (scripts/bootstrap.sh), then run `pyomo-lap solve ARGS`.
# Usage: bash scripts/solve.sh [ARGS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
# the BLAS libraries' worker threads only spin here (the evaluation has its own threads): 11 s
# of system time on the full lap, no wall time gained
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec "$PWD/.venv/bin/pyomo-lap" solve "$@"
