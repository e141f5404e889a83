"""The point functions of the common jobs compiled ahead of the first solve (``pyomo-lap
compile``, which the set-up ``scripts/bootstrap.sh`` runs): one library set per structure of
the rows serves every car (:func:`pyomo_lap.solvers.lap.compiled.point_functions`), so after this
step the first solve of these jobs is as fast as the later ones."""
from __future__ import annotations

import os
import time

from ...util.casadi_compile import find_compiler
from ...vehicle.car import load_vehicle
from .compiled import point_functions

__all__ = ["COMPILE_AHEAD", "compile_ahead"]

#: the jobs compiled ahead: the full model on an open sector and on a closed lap, with a fixed
#: setup and with free parameters (setup optimization); ``(label, OCP options, free)``
COMPILE_AHEAD = (("open sector", {"periodic": False}, False),
                 ("closed lap", {"periodic": True}, False),
                 ("open sector, setup optimization", {"periodic": False}, True),
                 ("closed lap, setup optimization", {"periodic": True}, True))


def compile_ahead(vehicle="fsae", jobs=None, echo=print, *, record) -> list:
    """Compile the point functions of the default job's vehicle model (the OCP option
    ``model``'s default, the full model; a job's options may name another) for ``jobs`` now;
    ``vehicle`` only names the car of the recording (the libraries serve every car).

    Parameters
    ----------
    vehicle : str or VehicleParameters
    jobs : sequence of (label, OCP options, free), optional
        Default :data:`COMPILE_AHEAD`.
    echo : callable
        One line per job.
    record : callable
        ``record(vehicle, options) -> PointRows``: the rows a build records
        (:func:`pyomo_lap.ocp.build.record_rows`; this layer does not import the models).

    Returns
    -------
    list of dict
        ``label``, ``key``, ``cached`` (found in the cache), ``seconds``.

    Raises
    ------
    RuntimeError
        No C compiler (the solves then run in CasADi's virtual machine; nothing to compile).
    """
    if find_compiler() is None:
        raise RuntimeError("no C compiler found (cc, gcc or clang; or $CC): the solves evaluate "
                           "the point functions in CasADi's virtual machine, nothing to compile")
    p = load_vehicle(vehicle) if isinstance(vehicle, (str, os.PathLike)) else vehicle
    out = []
    for label, options, free in COMPILE_AHEAD if jobs is None else jobs:
        rec = record(p, dict(options))   # the OCP options' default model
        t0 = time.perf_counter()
        compiled = []
        funs = point_functions(rec, "auto", quiet=True, free=free,
                               on_compile=lambda: compiled.append(True))
        row = {"label": label, "key": funs["key"], "cached": not compiled,
               "seconds": time.perf_counter() - t0}
        echo(f"  {label}: " + ("already compiled" if row["cached"] else f"compiled in {row['seconds']:.1f} s")
             + f" ({funs['key']})")
        out.append(row)
    return out
