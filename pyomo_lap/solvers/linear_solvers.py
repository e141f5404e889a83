"""Which linear solvers the IPOPT in use can load, asked of IPOPT itself.

IPOPT accepts ``linear_solver = ma57`` (a valid setting) and only finds out when a solve
starts that the library with the routine (``libhsl.so``, ``libpardiso.so``) cannot be loaded:
the solve then stops before its first iteration (``Library loading failure``, ``Invalid
option encountered``). :func:`loadable_linear_solvers` asks IPOPT before anything is built: a
one-variable problem is solved with ``max_iter = 0`` and each linear solver, as IPOPT would
load it (with the ``hsllib`` and ``pardisolib`` given).

* ``lap_ipopt``: the IPOPT library (:mod:`pyomo_lap.solvers.lap.ipopt_c`), in a child process
  (``python -m pyomo_lap.solvers.linear_solvers``): the library of the casadi wheel crashes
  (SIGSEGV) on ``ma97`` without HSL, which must not take the caller with it; a solver whose
  probe crashed counts as not loadable;
* ``ipopt``, ``ipopt_v2``: the ``ipopt`` executable (a process of its own anyway).

The answer is kept for the process (per solver and library options).
"""
from __future__ import annotations

import functools
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Tuple

import pyomo.environ as pyo
from pyomo.common.log import LoggingIntercept

from .lap import ipopt_c, ipopt_problem

__all__ = ["LINEAR_SOLVERS", "LIBRARY_OPTIONS", "loadable_linear_solvers",
           "linear_solver_refusal"]

LINEAR_SOLVERS = ("mumps", "spral", "ma27", "ma57", "ma77", "ma86", "pardiso", "ma97")
"""IPOPT 3.14's settings of ``linear_solver`` (without ``custom``), in the order probed
(``ma97``, which may crash the library, last)."""

LIBRARY_OPTIONS = ("hsllib", "pardisolib")
"""IPOPT options naming the library a linear solver is loaded from."""

_PROBE_OPTIONS = (("option_file_name", ""), ("sb", "yes"), ("max_iter", 0))


def _reason(text: str) -> str:
    """IPOPT's reason for not loading a linear solver, from its log (or '')."""
    for pattern in (r"the following error occured:\s*(.*?)(?:\s*EXIT:|$)",
                    r"Exception message:\s*(.*?)(?:\s*EXIT:|$)",
                    r"(Error loading HSL dynamic library.*?)(?:\s*This executable|$)"):
        hit = re.search(pattern, " ".join(text.split()))
        if hit:
            return hit.group(1).strip()
    return ""


def _probe_in_library(name: str, libraries: dict) -> Tuple[bool, str]:
    """(loadable, IPOPT's reason if not) for ``linear_solver = name`` with the IPOPT library,
    in this process."""
    prob = ipopt_problem.IpoptProblem(
        1, 0, [-1.0], [1.0], [], [], [], [], [0], [0],
        objective=lambda x: float(x[0] * x[0]),
        gradient=lambda x, out: out.__setitem__(slice(None), 2.0 * x),
        hessian=lambda x, sigma, lam, out: out.__setitem__(0, 2.0 * sigma))
    try:
        for key, value in _PROBE_OPTIONS + (("print_level", 1), ("linear_solver", name)) \
                + tuple(libraries.items()):
            prob.add_option(key, value)
    except ValueError as exc:
        return False, str(exc)
    with ipopt_c._captured_c_stdout() as text:
        result = prob.solve([0.5], catch_sigint=False)
    ok = result.status != ipopt_c.STATUS_CODE["Invalid_Option"]
    return ok, "" if ok else (_reason(text[0] if text else "") or result.status_name)


def _probe_library(names: tuple, libraries: dict) -> Dict[str, Tuple[bool, str]]:
    """:func:`_probe_in_library` for each name, in child processes (a probe that crashes
    the library counts as not loadable; the next child goes on after it)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    out: Dict[str, Tuple[bool, str]] = {}
    left = list(names)
    while left:
        proc = subprocess.run([sys.executable, "-m", __name__, json.dumps(libraries), *left],
                              capture_output=True, text=True, env=env, timeout=120)
        for line in proc.stdout.splitlines():
            try:
                name, ok, why = json.loads(line)
            except (ValueError, TypeError):
                continue
            out[name] = (bool(ok), why)
        left = [n for n in left if n not in out]
        if left:         # the probe of left[0] ended the child (a crash): not loadable
            out[left.pop(0)] = (False, f"IPOPT crashed loading it (exit {proc.returncode})")
    return out


def _probe_executable(names: tuple, libraries: dict) -> Dict[str, Tuple[bool, str]]:
    """(loadable, reason) for each name with the ``ipopt`` executable (Pyomo's classic
    interface), a one-variable problem with ``max_iter = 0`` each."""
    out = {}
    for name in names:
        m = pyo.ConcreteModel()
        m.x = pyo.Var(bounds=(-1, 1), initialize=0.5)
        m.obj = pyo.Objective(expr=m.x ** 2)
        opt = pyo.SolverFactory("ipopt")
        exe = Path(sys.prefix) / "bin" / "ipopt"       # .venv/bin/ipopt, venv not activated
        if not opt.available(exception_flag=False) and exe.exists():
            opt = pyo.SolverFactory("ipopt", executable=str(exe))
        opt.options.update({"linear_solver": name, "max_iter": 0, **libraries})
        with tempfile.TemporaryDirectory(prefix="pyomo_lap_probe_") as tmp:
            log = Path(tmp) / "ipopt.log"
            caught = io.StringIO()
            try:
                with LoggingIntercept(caught, "pyomo", logging.WARNING):
                    res = opt.solve(m, load_solutions=False, logfile=str(log))
                ok = str(res.solver.termination_condition) in ("maxIterations", "optimal")
            except Exception:   # noqa: BLE001 - the executable aborted: not loadable
                ok = False
            text = (log.read_text(errors="replace") if log.exists() else "") + caught.getvalue()
        out[name] = (ok, "" if ok else _reason(text) or "not a setting this IPOPT knows")
    return out


@functools.lru_cache(maxsize=None)
def _loadable(kind: str, library: str, libraries: tuple) -> Tuple[Tuple[str, bool, str], ...]:
    probe = _probe_library if kind == "library" else _probe_executable
    found = probe(LINEAR_SOLVERS, dict(libraries))
    return tuple((name, *found[name]) for name in LINEAR_SOLVERS)


def loadable_linear_solvers(solver: str = "lap_ipopt", libraries=None) -> Dict[str, Tuple[bool, str]]:
    """Which of :data:`LINEAR_SOLVERS` the solver's IPOPT can load, asked of IPOPT itself.

    Parameters
    ----------
    solver : str
        ``lap_ipopt`` (the IPOPT library), ``ipopt`` or ``ipopt_v2`` (the executable).
    libraries : dict, optional
        ``hsllib`` and ``pardisolib`` as the solve will give them.

    Returns
    -------
    dict
        Name -> (loadable, IPOPT's reason when not), kept for the process.
    """
    libraries = {k: str(v) for k, v in (libraries or {}).items() if k in LIBRARY_OPTIONS}
    kind = "library" if solver == "lap_ipopt" else "executable"
    key = os.environ.get("PYOMO_LAP_IPOPT_LIBRARY", "") if kind == "library" else ""
    return {name: (ok, why) for name, ok, why in
            _loadable(kind, key, tuple(sorted(libraries.items())))}


def linear_solver_refusal(solver: str, name: str, libraries=None) -> str:
    """Why the solver's IPOPT cannot load ``linear_solver = name``, and which it can ('' when
    it can, or when ``name`` is none of :data:`LINEAR_SOLVERS`)."""
    if name not in LINEAR_SOLVERS:
        return ""
    found = loadable_linear_solvers(solver, libraries)
    ok, why = found[name]
    if ok:
        return ""
    can = [n for n, (yes, _) in found.items() if yes]
    where = ("the IPOPT library of lap_ipopt" if solver == "lap_ipopt"
             else f"the ipopt executable of {solver}")
    option = {"ma": "hsllib", "pa": "pardisolib"}.get(name[:2])
    hint = ("" if option is None else f" or give the path of the library with --solver-option "
            f"{option}=PATH" if solver == "lap_ipopt" else
            " or put the library (libhsl.so, libpardiso.so) where the loader finds it")
    return (f"{where} cannot load the linear solver {name}" + (f" ({why})" if why else "")
            + f"; it can load: {', '.join(can) or 'none'}: use one of those{hint}")


def _main(argv) -> int:
    """The child of :func:`_probe_library`: one JSON line ``[name, loadable, reason]`` per
    linear solver named, printed as each is probed."""
    libraries = json.loads(argv[0])
    for name in argv[1:]:
        ok, why = _probe_in_library(name, libraries)
        sys.stdout.write(json.dumps([name, ok, why]) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
