#!/usr/bin/env bash
# Main job: set up on first use (scripts/bootstrap.sh), then run `pyomo-lap solve ARGS`.
# Usage: bash scripts/solve.sh [ARGS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec "$PWD/.venv/bin/pyomo-lap" solve "$@"
