#!/usr/bin/env bash
# Main job: set up on first use (scripts/bootstrap.sh), then run `pyomo-lap solve ARGS` in the
# folder this script was started from: relative paths in ARGS (--vehicle mycar.toml,
# --track mytrack.csv, --out results) are that folder's, as for `pyomo-lap solve` itself.
# Usage: bash scripts/solve.sh [ARGS]      (from any folder)
set -euo pipefail
caller=$PWD
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"     # leaves us in the repository root
root=$PWD
cd "$caller"
# the BLAS libraries' worker threads only spin here (the evaluation has its own threads): 11 s
# of system time on the full lap, no wall time gained
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec "$root/.venv/bin/pyomo-lap" solve "$@"
