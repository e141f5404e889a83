r"""The powers of the energies a car spends and dissipates (issue 38), written once over
numbers, NumPy arrays or Pyomo expressions (plain operators, as :mod:`pyomo_lap.vehicle.fuel`):
the integrals on the model (:mod:`pyomo_lap.ocp.integrals`: ``m.energy.<name>_power[s]``) and
the trajectory's columns (:func:`pyomo_lap.ocp.integrals.energy_channels`: ``power_engine``
...) are the same function of the same forces and speed.

=============  ===========================================================================
name           power [W] (every term >= 0 at a solution)
=============  ===========================================================================
``traction``   at the driven wheels, :math:`f_{xa}\,v_{3x}` (:math:`f_{xa} \ge 0`)
``engine``     at the engine: the traction power over the drivetrain's efficiency
               :math:`\eta` (``[engine] efficiency``; 1 without one)
``braking``    taken by the brakes, :math:`-f_{xb}\,v_{3x}` (:math:`f_{xb} \le 0`)
``drag``       against the drag, :math:`-f_{drag}\,v_{3x}`, with the drag force
               :math:`f_{drag} = -C_x\,\tfrac12\rho S v_{3x}^2` of
               :func:`pyomo_lap.vehicle.car.aero_forces` (one form: the channel ``f_drag``, or
               that product on the model): :math:`C_x \tfrac12\rho S v_{3x}^3`
``tyre_<t>``   dissipated by tyre ``t`` (``fl`` = wheel 11, ``fr`` 12, ``rl`` 21, ``rr`` 22)
               by its lateral slip, :math:`f_{ijy}\,\alpha_i\,v_{3x}` (the slip velocity
               :math:`-\alpha_i v_{3x}` times the force, the sign turned: fastest-lap's
               ``Tire::get_dissipation`` in the model's small-angle slip, docs/energy.md)
=============  ===========================================================================

Layer: vehicle (imports nothing).
"""
from __future__ import annotations

from typing import Optional

__all__ = ["energy_powers", "POWER_NAMES"]

POWER_NAMES = ("traction", "engine", "braking", "drag")
"""The powers of :func:`energy_powers` besides the tyres' (``tyre_fl`` ... ``tyre_rr``)."""


def energy_powers(v, *, f_xa=None, f_xb=None, f_drag=None, tyres: Optional[dict] = None,
                  drivetrain_efficiency: Optional[float] = None) -> dict:
    r"""The powers of the energies at one point or at many (module docstring).

    Parameters
    ----------
    v : number, ndarray or Pyomo expression
        The longitudinal speed :math:`v_{3x}` [m/s].
    f_xa, f_xb : same kind as ``v``, optional
        The drive force (>= 0) and the braking force (<= 0) [N] (eq 34); a power whose force
        is not given is left out.
    f_drag : same kind as ``v``, optional
        The drag force along x3 [N] (<= 0, :func:`pyomo_lap.vehicle.car.aero_forces`).
    tyres : dict, optional
        ``{"fl": (f_y, alpha), ...}``: each tyre's lateral force [N] and its axle's slip angle
        [rad].
    drivetrain_efficiency : float, optional
        :math:`\eta` of the engine's power (None or 0: 1).

    Returns
    -------
    dict
        ``{"traction", "engine", "braking", "drag", "tyre_<t>": power [W]}`` for the forces
        given, in that order.
    """
    eta = drivetrain_efficiency or 1.0
    out = {}
    if f_xa is not None:
        out["traction"] = f_xa * v
        out["engine"] = f_xa * v / eta
    if f_xb is not None:
        out["braking"] = -f_xb * v
    if f_drag is not None:
        out["drag"] = -f_drag * v
    for t, (f_y, alpha) in (tyres or {}).items():
        out[f"tyre_{t}"] = f_y * alpha * v
    return out
