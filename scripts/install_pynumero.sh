#!/usr/bin/env bash
# Build PyNumero's ASL interface (libpynumero_ASL.so), which the numerical checks of the IDAES
# diagnostics toolbox (`pyomo-lap diagnose`) need to evaluate the model's Jacobian. It compiles
# the one source file that Pyomo ships (pyomo/contrib/pynumero/src/AmplInterface.cpp) against
# Debian's AMPL Solver Library (libamplsolver-dev, also used by scripts/install_ipopt.sh).
# Nothing is downloaded from outside Debian's archive. Takes a few seconds.
#
# Usage: bash scripts/install_pynumero.sh PYTHON DEST_LIB_DIR   (e.g. .venv/bin/python .venv/lib)
# Alternatives: `idaes get-extensions` (downloads binaries) or `pyomo build-extensions`.
set -euo pipefail
py=${1:?usage: install_pynumero.sh PYTHON DEST_LIB_DIR}
dest=${2:?usage: install_pynumero.sh PYTHON DEST_LIB_DIR}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
lib="$dest/libpynumero_ASL.so"
src=$("$py" -c 'import pathlib, pyomo.contrib.pynumero as p; print(pathlib.Path(p.__file__).parent / "src")')
if [ -f "$lib" ] && [ "$lib" -nt "$src/AmplInterface.cpp" ]; then
  echo "[install_pynumero] already built: $lib"; exit 0
fi
inc=/usr/include/ampl-netlib-solvers
if [ ! -f "$inc/asl_pfgh.h" ] || ! command -v g++ >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq --no-install-recommends libamplsolver-dev g++ >/dev/null \
      || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends libamplsolver-dev g++ >/dev/null; } \
      || { echo "error: could not install libamplsolver-dev and g++ with apt-get" >&2; exit 1; }
  else
    echo "error: needs the AMPL Solver Library headers ($inc) and g++; or run 'idaes get-extensions'" >&2
    exit 1
  fi
fi
g++ -shared -fPIC -O2 -I"$inc" "$src/AmplInterface.cpp" -lamplsolver -o "$lib.tmp"
mv "$lib.tmp" "$lib"
echo "[install_pynumero] built $lib"
