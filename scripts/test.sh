#!/usr/bin/env bash
# Test command: set up on first use (scripts/bootstrap.sh), then run pytest with ARGS.
# Usage: bash scripts/test.sh [PYTEST ARGS]    (pytest's exit code is returned unchanged)
set -euo pipefail
export PYOMO_LAP_ASL=${PYOMO_LAP_ASL:-1}     # the tests also cover the optional ASL path
export PYOMO_LAP_BROWSER=${PYOMO_LAP_BROWSER:-1}   # headless Chromium for the report's test
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
# two test processes (pytest-xdist; PYOMO_LAP_TEST_WORKERS=0 runs in this process), each with
# its BLAS and OpenMP on one thread: two workers on two cores (IPOPT's OpenBLAS otherwise starts
# a thread per core in each, which spin in the kernel while the other worker computes)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec "$PWD/.venv/bin/python" -m pytest -n "${PYOMO_LAP_TEST_WORKERS:-2}" "$@"
