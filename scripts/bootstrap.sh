#!/usr/bin/env bash
# Set up the development environment of pyomo_lap (idempotent, fast when already done):
#   1. create .venv with python3 (>= 3.10),
#   2. pip install -e '.[test,docs]' into it (the package, the test tools and the documentation's
#      tools; redone only when setup.cfg/pyproject.toml change),
#      then compile the full model's point functions (pyomo-lap compile: the first solve is
#      then as fast as the later ones),
#   3. check that the IPOPT library of the casadi wheel loads (the default solver path);
#      with PYOMO_LAP_ASL=1 also make sure an `ipopt` executable exists for the optional ASL
#      path (on PATH or in .venv/bin; if not, build one from Debian packages with
#      scripts/install_ipopt.sh .venv/bin) and build PyNumero's ASL interface into .venv/lib
#      (scripts/install_pynumero.sh) for `pyomo-lap diagnose` (a failure there only warns),
#   4. with PYOMO_LAP_BROWSER=1 (scripts/test.sh sets it) make sure a headless Chromium exists
#      for the report's browser test (scripts/install_chromium.sh: Debian's package, only
#      with apt-get as root; otherwise a message, and that test is skipped outside CI),
#   5. export PATH="<repo>/.venv/bin:$PATH" so Pyomo's SolverFactory('ipopt') finds it.
#
# Usage: `source scripts/bootstrap.sh` (leaves you in the repo root with PATH exported), or
#        `bash scripts/bootstrap.sh` (set up only).
# Environment: PYTHON=/path/to/python3 picks the interpreter for the venv;
#              PYOMO_LAP_ASL=1 also sets up the ASL path (step 3);
#              PYOMO_LAP_SKIP_IPOPT=1 skips the ASL part of step 3;
#              PYOMO_LAP_BROWSER=1 also installs headless Chromium (step 4) when missing.

_pyomo_lap_say() { echo "[bootstrap] $*"; }

_pyomo_lap_bootstrap() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || return 1
  cd "$root" || return 1
  local venv="$root/.venv"
  local stamp="$venv/.pyomo_lap_bootstrap"

  # --- 1. virtual environment ------------------------------------------------------------
  if [ ! -x "$venv/bin/python" ]; then
    local py=${PYTHON:-}
    if [ -z "$py" ]; then
      local cand
      for cand in python3 python3.13 python3.12 python3.11 python3.10; do
        if command -v "$cand" >/dev/null 2>&1 \
          && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
          py=$(command -v "$cand"); break
        fi
      done
    fi
    if [ -z "$py" ] || ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
      echo "error: pyomo_lap needs Python >= 3.10 (python3 not found or too old)." >&2
      echo "       Install it (e.g. 'apt-get install python3 python3-venv' on Debian/Ubuntu)" >&2
      echo "       or point PYTHON=/path/to/python3.x at one." >&2
      return 1
    fi
    _pyomo_lap_say "creating .venv with $py ($("$py" -c 'import platform; print(platform.python_version())'))"
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      # Debian/Ubuntu ship venv/ensurepip separately (python3-venv / python3.X-venv).
      if command -v apt-get >/dev/null 2>&1; then
        local pyver sudo=""
        pyver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        [ "$(id -u)" = 0 ] || sudo="sudo"
        _pyomo_lap_say "python venv module missing; installing python3-venv / python$pyver-venv with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        $sudo apt-get update -qq || true
        $sudo apt-get install -y -qq --no-install-recommends "python$pyver-venv" >/dev/null 2>&1 \
          || $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null \
          || { echo "error: could not install python3-venv with apt-get" >&2; return 1; }
        "$py" -m venv "$venv" || { rm -rf "$venv"; echo "error: '$py -m venv' failed" >&2; return 1; }
      else
        echo "error: '$py -m venv .venv' failed; install Python's venv module and retry." >&2
        return 1
      fi
    fi
  fi

  # --- 2. the package and its dependencies -------------------------------------------------
  local want have=""
  want=$(cat setup.cfg pyproject.toml 2>/dev/null | sha256sum | cut -d' ' -f1)
  [ -f "$stamp" ] && have=$(cat "$stamp")
  if [ "$want" != "$have" ]; then
    _pyomo_lap_say "installing pyomo_lap and its dependencies into .venv (pip install -e '.[test,docs]') ..."
    local log="$venv/pip-install.log"
    if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q --progress-bar off \
        -e '.[test,docs]' >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      echo "error: pip install failed (full log: $log)" >&2
      return 1
    fi
    if ! "$venv/bin/python" -c 'from pyomo_lap.solvers.lap.ipopt_c import load_ipopt_library; load_ipopt_library()' 2>/dev/null; then
      echo "error: the IPOPT library of the casadi wheel could not be loaded (see docs/installation.md, 'What the set-up does, and IPOPT')" >&2
      return 1
    fi
    # the full model's compiled point functions, so that the first solve is as fast as the
    # later ones (without a C compiler the solves use CasADi's virtual machine instead)
    _pyomo_lap_say "compiling the model's point functions to machine code (pyomo-lap compile, about 20 s) ..."
    if ! "$venv/bin/pyomo-lap" compile -q >"$venv/compile.log" 2>&1; then
      _pyomo_lap_say "note: $(tail -n 1 "$venv/compile.log") (the first solve of each model compiles instead)"
    fi
    echo "$want" >"$stamp"
    _pyomo_lap_say "python packages ready ($("$venv/bin/python" -c '
from importlib.metadata import version as v
print(", ".join(f"{p} {v(p)}" for p in ("pyomo", "idaes-pse", "numpy", "scipy", "pandas")))' 2>/dev/null))"
    _pyomo_lap_say "to type pyomo-lap (and use this python) in your shell: source $venv/bin/activate"
  fi

  # --- 3. the solvers -------------------------------------------------------------------------
  # The default solver path (lap_ipopt) uses the IPOPT 3.14 library of the casadi wheel
  # installed in step 2: nothing more is needed (a C compiler, if there is one, makes its
  # functions faster). The optional ASL path (--solver ipopt / ipopt_v2) needs an `ipopt`
  # executable; with PYOMO_LAP_ASL=1 (scripts/test.sh and scripts/benchmark.sh set it) it is
  # built from Debian packages when none is found (this step alone needs apt-get and root).
  export PATH="$venv/bin:$PATH"
  if [ "${PYOMO_LAP_ASL:-0}" = 1 ] && [ "${PYOMO_LAP_SKIP_IPOPT:-0}" != 1 ]; then
    local ipopt_exe
    ipopt_exe=$(command -v ipopt 2>/dev/null || true)
    if [ -z "$ipopt_exe" ]; then
      _pyomo_lap_say "no 'ipopt' executable for the ASL path; building it from Debian packages (scripts/install_ipopt.sh)"
      bash "$root/scripts/install_ipopt.sh" "$venv/bin" || {
        echo "error: could not install IPOPT's executable for the ASL path (see docs/installation.md, 'What the set-up does, and IPOPT')." >&2
        return 1
      }
    fi
    # PyNumero's ASL interface (numerical diagnostics of `pyomo-lap diagnose`)
    if [ ! -f "$venv/lib/libpynumero_ASL.so" ]; then
      _pyomo_lap_say "building PyNumero's ASL interface for 'pyomo-lap diagnose' (scripts/install_pynumero.sh)"
      bash "$root/scripts/install_pynumero.sh" "$venv/bin/python" "$venv/lib" >/dev/null 2>&1 \
        || _pyomo_lap_say "warning: could not build libpynumero_ASL.so; 'pyomo-lap diagnose' will skip its numerical checks"
    fi
  fi

  # --- 4. a headless browser for the report's test (tests/test_report.py) -------------------
  if [ "${PYOMO_LAP_BROWSER:-0}" = 1 ]; then
    bash "$root/scripts/install_chromium.sh" || true
  fi
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # executed: set up, report, exit
  _pyomo_lap_bootstrap || exit 1
  echo "[bootstrap] ready (ASL path: $(command -v ipopt || echo 'ipopt executable not installed; PYOMO_LAP_ASL=1 builds it'))"
else
  # sourced: set up and leave the caller in the repo root with PATH exported
  _pyomo_lap_bootstrap || { unset -f _pyomo_lap_bootstrap _pyomo_lap_say; return 1; }
  unset -f _pyomo_lap_bootstrap _pyomo_lap_say
fi
