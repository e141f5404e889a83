#!/usr/bin/env bash
# Benchmark: set up on first use (scripts/bootstrap.sh), then run benchmarks/full_lap.py ARGS.
# Usage: bash scripts/benchmark.sh [--nfe 1000 2000 4000] [--sector] [--casadi] [--csv FILE]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec "$PWD/.venv/bin/python" benchmarks/full_lap.py "$@"
