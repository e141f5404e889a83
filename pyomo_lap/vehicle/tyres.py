r"""The tyre models and their registry: the lateral force of a tyre over its slip angle and
vertical load, written once over the scalar backend (floats, NumPy arrays, Pyomo expressions,
CasADi symbols, the tape's nodes: :mod:`pyomo_lap.spatial.backend`).

Every model shares the peak force :math:`D(f_z)` (:func:`peak_force`, load sensitivity
``pD2``) and the cornering stiffness :math:`C_\alpha(f_z)` (:func:`cornering_stiffness`) of
the vehicle schema's ``[tyre]`` keys; they differ in the shape of the characteristic between
them. :data:`TYRE_MODELS` maps the names the vehicle file's ``[tyre] model`` (the schema's
``tyre_model``) may take to a :class:`TyreModel`:

* ``"magic-formula"``: Pacejka's Magic Formula of eq (32) (:func:`tyre_lateral_angle`), the
  paper's tyre;
* ``"fiala"``: the brush model's cubic (:func:`fiala_force`, seed ``004``), sliding beyond
  :math:`\tan\alpha = 3D/C_\alpha`.

A :class:`TyreModel` gives the equations' force (:attr:`TyreModel.lateral`, the car's
equations through :func:`tyre_forces`), its per-tyre channel (:attr:`TyreModel.measure`), the
rows that keep a share of the cornering stiffness (:attr:`TyreModel.reserve_rows`) and, on
NumPy arrays, the force over its peak at a slip angle (:attr:`TyreModel.fraction`) and the
slip angle at a force (:attr:`TyreModel.slip_at`) that the GG diagram's friction envelope
(:mod:`pyomo_lap.vehicle.envelope`) needs. A new model is one :class:`TyreModel` added with
:func:`register_tyre_model` (docs/architecture.md, "Add a tyre model").

Combined slip (``combined_slip = "ellipse"``, :func:`combined_slip_factor`) lowers the peak
of whichever model the car has (:func:`tyre_forces`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
from pyomo.common.dependencies import attempt_import

from ..spatial.backend import add, atan, cos, is_number, mul, sin, sqrt, sub

casadi, casadi_available = attempt_import("casadi")

__all__ = ["TyreModel", "TYRE_MODELS", "register_tyre_model", "tyre_model", "tyre_model_of",
           "DEFAULT_TYRE_MODEL", "SHARED_PARAMETERS", "peak_force", "cornering_stiffness",
           "tyre_lateral_force", "tyre_lateral_angle", "fiala_force", "COMBINED_SMOOTHING",
           "combined_slip_factor", "tyre_forces", "MAGIC_FORMULA", "FIALA"]

DEFAULT_TYRE_MODEL = "magic-formula"
"""The tyre model of a car that names none (the schema's default of ``tyre_model``)."""

SHARED_PARAMETERS = ("mu_y0", "pD2", "Fz0", "pK1", "pK2")
"""Fields of the vehicle schema every model reads: the peak force (:func:`peak_force`) and the
cornering stiffness (:func:`cornering_stiffness`)."""


# --------------------------------------------------------------------------------------------
# what the models share: peak force and cornering stiffness of the load
# --------------------------------------------------------------------------------------------

def peak_force(p, fz):
    """Peak lateral force D(f_z) = mu_y0 (1 + pD2 (f_z - Fz0)/Fz0) f_z [N] (Magic Formula D).

    Parameters
    ----------
    p : VehicleParameters or any object with ``mu_y0``, ``pD2``, ``Fz0``
    fz : scalar
        Vertical load [N].

    Returns
    -------
    scalar
        [N].
    """
    return mul(p.mu_y0, mul(add(1.0 - p.pD2, mul(p.pD2 / p.Fz0, fz)), fz))


def cornering_stiffness(p, fz):
    r"""Cornering stiffness of the load, :math:`C_\alpha = p_{K1}F_{z0}\sin(2\arctan(f_z/(p_{K2}
    F_{z0})))` [N/rad], the slope of the lateral force at zero slip (eq 32's :math:`BCD`).

    Parameters
    ----------
    p : VehicleParameters or any object with ``pK1``, ``pK2``, ``Fz0``
    fz : scalar
        Vertical load [N].

    Returns
    -------
    scalar
        [N/rad].
    """
    return mul(p.pK1 * p.Fz0, sin(mul(2.0, atan(mul(1.0 / (p.pK2 * p.Fz0), fz)))))


# --------------------------------------------------------------------------------------------
# the Magic Formula, eq (32)
# --------------------------------------------------------------------------------------------

def tyre_lateral_force(p, alpha, fz):
    r"""Pacejka Magic Formula lateral force with load dependence, eq (32).

    .. math::
        f_y = D \sin\big(C \arctan(B\alpha - E(B\alpha - \arctan B\alpha))\big),\quad
        D = \mu_{y0}\Big(1 + p_{D2}\frac{f_z - F_{z0}}{F_{z0}}\Big) f_z,\quad
        B = \frac{p_{K1} F_{z0}\sin(2\arctan(f_z/(p_{K2}F_{z0})))}{C D}

    Parameters
    ----------
    p : VehicleParameters
        The car.
    alpha : scalar
        Slip angle [rad] (positive gives a positive force, eq 33).
    fz : scalar
        Vertical load [N], > 0.

    Returns
    -------
    scalar
        Lateral force in the wheel frame [N].
    """
    D, theta = tyre_lateral_angle(p, alpha, fz)
    return D * sin(theta)


def tyre_lateral_angle(p, alpha, fz, peak=None):
    r"""Peak force and argument of the sine of the Magic Formula, eq (32):
    :math:`f_y = D \sin\theta`, :math:`\theta = C \arctan(B\alpha - E(B\alpha - \arctan B\alpha))`.

    The lateral force peaks (:math:`f_y = \pm D`) at :math:`\theta = \pm\pi/2`; the slip
    angles below the peak are those with :math:`\cos\theta > 0`.

    Parameters
    ----------
    p : VehicleParameters
        The car.
    alpha : scalar
        Slip angle [rad].
    fz : scalar
        Vertical load [N], > 0.
    peak : scalar, optional
        The peak force :math:`D` to use instead of the load's (a combined-slip tyre,
        :func:`tyre_forces`); the cornering stiffness :math:`BCD` stays the load's [N].

    Returns
    -------
    (D, theta) : scalars
        Peak force [N] and the angle [rad].
    """
    D = peak_force(p, fz) if peak is None else peak
    c_alpha = cornering_stiffness(p, fz)
    Ba = c_alpha * alpha / (p.C * D)
    if is_number(p.E) and p.E == 0:     # a symbolic E (sensitivities) keeps its term
        arg = atan(Ba)
    else:
        arg = atan(sub(Ba, mul(p.E, sub(Ba, atan(Ba)))))
    return D, mul(p.C, arg)


def _magic_formula(p, alpha, fz, peak=None):
    """:attr:`TyreModel.lateral` of the Magic Formula: ``(D, theta, D sin(theta))``."""
    D, th = tyre_lateral_angle(p, alpha, fz, peak)
    return D, th, mul(D, sin(th))


def _magic_formula_fraction(p, alpha, fz, D):
    """:attr:`TyreModel.fraction` of the Magic Formula: ``sin(theta)`` at ``alpha``, its limit
    ``sin(C pi/2)`` at an infinite slip angle."""
    alpha = np.asarray(alpha, float)
    finite = np.isfinite(alpha)
    _, th = tyre_lateral_angle(p, np.where(finite, alpha, 0.0), fz, np.where(D > 0, D, 1.0))
    return np.sin(np.where(finite, th, p.C * np.pi / 2))


def _magic_formula_slip(p, fz, D, phi):
    """:attr:`TyreModel.slip_at` of the Magic Formula: the slip angle where its angle
    ``theta = C atan(B alpha - E (B alpha - atan(B alpha)))`` is ``phi`` (``f_y = D sin phi``
    below the peak); ``inf`` where it never reaches it (``phi >= C pi/2``)."""
    B = cornering_stiffness(p, fz) / (p.C * np.where(D > 0, D, 1.0))
    phi = np.asarray(phi, float)
    reach = phi < p.C * np.pi / 2 * (1 - 1e-12)
    T = np.tan(np.where(reach, phi, 0.0) / p.C)      # x - E (x - atan x) = T, x = B alpha
    if p.E == 0:
        x = T
    elif p.E == 1:                                   # atan(x) = T
        reach &= T < np.pi / 2
        x = np.tan(np.where(reach, T, 0.0))
    else:                                            # increasing in x for E < 1: bisection
        lo, hi = np.zeros_like(T), T / (1.0 - p.E) if p.E > 0 else T.copy()
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            below = mid - p.E * (mid - np.arctan(mid)) < T
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x = 0.5 * (lo + hi)
    return np.where(reach, x / B, np.inf)


def _angle_reserve_rows(D, theta, reserve):
    r""":attr:`TyreModel.reserve_rows` of a model with a peak angle: :math:`D(r - \cos\theta)
    \le 0` (key 0)."""
    return [(0, mul(D, sub(float(reserve), cos(theta))))]


# --------------------------------------------------------------------------------------------
# the Fiala (brush) law, seed 004
# --------------------------------------------------------------------------------------------

FIALA_ABS_EPS2 = 1e-8
r"""Default :math:`\epsilon^2` of the Fiala law's smooth :math:`|\upsilon| = \sqrt{\upsilon^2 +
\epsilon^2}` (:func:`fiala_force`) [-]."""


def _clip_unit(v):
    """Clip to [-1, 1] for numbers and CasADi symbols (the tyre slides beyond); Pyomo
    expressions and the tape's nodes are returned unchanged: the OCP keeps ``|v| <= 1`` by a
    constraint."""
    if is_number(v):
        return min(1.0, max(-1.0, v))
    if type(v).__module__.startswith("casadi"):
        return casadi.fmin(1.0, casadi.fmax(-1.0, v))
    return v


def fiala_force(p, alpha, fz, peak=None, *, clip: bool = False, abs_eps2: float = FIALA_ABS_EPS2):
    r"""Fiala (brush model) lateral force of one tyre, with the peak force :func:`peak_force`
    and the cornering stiffness :func:`cornering_stiffness` (keys ``mu_y0, pD2, pK1, pK2``).

    .. math::
        \upsilon = \frac{C_\alpha \tan\alpha}{3 D},\quad
        f_y = D\,(3\upsilon - 3\upsilon|\upsilon| + \upsilon^3)\ (|\upsilon| \le 1),

    the tyre sliding (:math:`f_y = \pm D`, its peak) at :math:`|\upsilon| = 1`; the OCP keeps
    :math:`|\upsilon| \le 1` (seed ``004``). :math:`|\upsilon|` is
    :math:`\sqrt{\upsilon^2 + \epsilon^2}` (smooth at 0, ``abs_eps2`` :math:`=\epsilon^2`).

    Parameters
    ----------
    p : VehicleParameters
        The car.
    alpha : scalar
        Slip angle [rad].
    fz : scalar
        Vertical load [N], > 0.
    peak : scalar, optional
        The peak force to use instead of the load's (as :func:`tyre_lateral_angle`) [N].
    clip : bool
        Evaluate the law at :math:`\upsilon` clipped to [-1, 1] for numbers and CasADi
        symbols (the force stays :math:`\pm D` beyond sliding; the single-track car's axles,
        :func:`pyomo_lap.vehicle.single_track_car.fiala_axle`).
    abs_eps2 : float
        :math:`\epsilon^2` of the smooth absolute value [-].

    Returns
    -------
    (D [N], upsilon [-], f_y [N])
        ``upsilon`` unclipped.
    """
    D = peak_force(p, fz) if peak is None else peak
    c_alpha = cornering_stiffness(p, fz)
    ups = c_alpha * (sin(alpha) / cos(alpha)) / (3.0 * D)
    v = _clip_unit(ups) if clip else ups
    av = sqrt(v * v + abs_eps2)
    return D, ups, D * (3.0 * v - 3.0 * v * av + v * v * v)


def _fiala_fraction(p, alpha, fz, D):
    r""":attr:`TyreModel.fraction` of the Fiala law (exact :math:`|\upsilon|`): ``1 - (1 -
    u)^3`` with ``u = min(C_alpha tan(alpha) / (3 D), 1)``, odd in ``alpha``; 1 at an
    infinite slip angle."""
    alpha = np.asarray(alpha, float)
    finite = np.isfinite(alpha)
    u = cornering_stiffness(p, fz) * np.tan(np.where(finite, alpha, 0.0)) / (3.0 * np.where(D > 0, D, 1.0))
    u = np.where(finite, np.minimum(np.abs(u), 1.0), 1.0)
    return np.sign(np.where(finite, alpha, 1.0)) * (1.0 - (1.0 - u) ** 3)


def _fiala_slip(p, fz, D, phi):
    r""":attr:`TyreModel.slip_at` of the Fiala law: :math:`1 - (1 - u)^3 = \sin\phi`, so
    :math:`u = 1 - (1 - \sin\phi)^{1/3}` and :math:`\alpha = \arctan(3 D u / C_\alpha)`."""
    s = np.clip(np.sin(np.asarray(phi, float)), 0.0, 1.0)
    u = 1.0 - np.cbrt(1.0 - s)
    return np.arctan(3.0 * np.where(D > 0, D, 1.0) * u / cornering_stiffness(p, fz))


def _sliding_reserve_rows(D, ups, reserve):
    r""":attr:`TyreModel.reserve_rows` of the Fiala law: :math:`\pm\upsilon - (1 - \sqrt r) \le
    0` (keys +1, -1): :math:`\partial f_y/\partial\upsilon = 3D(1 - \upsilon)^2 \ge 3Dr`."""
    edge = 1.0 - math.sqrt(reserve)
    return [(sense, sub(mul(float(sense), ups), edge)) for sense in (1, -1)]


# --------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TyreModel:
    r"""A tyre model of the registry :data:`TYRE_MODELS`.

    Attributes
    ----------
    name : str
        The name a vehicle file gives as ``[tyre] model`` (the schema's ``tyre_model``).
    description : str
        One line for the docs and messages.
    lateral : callable
        ``lateral(p, alpha, fz, peak=None) -> (D, measure, f_y)``: the pure-slip lateral
        force [N] of a tyre of load ``fz`` [N] at slip angle ``alpha`` [rad], with the peak
        ``peak`` [N] instead of :func:`peak_force`'s if given (combined slip); ``D`` the peak
        used [N], ``measure`` the model's shape quantity (:attr:`measure`). Written over the
        scalar backend: the car's equations call it with Pyomo, CasADi or tape scalars.
    measure : str
        Name of the per-tyre channel ``<measure>_<wheel>`` the car's equations give
        (``theta``: the Magic Formula's angle; ``upsilon``: Fiala's sliding measure).
    peak_angle : bool
        True if ``measure`` is an angle :math:`\theta` with :math:`f_y = D\sin\theta`, so
        that :math:`D\cos\theta \ge 0` holds the tyre at or below its peak: the friction
        ellipse may then be a constraint on the force of pure slip (``combined_slip =
        "constraint"``, the ``"below-peak"`` adherence rows); else the model needs
        ``combined_slip = "ellipse"`` (the schema refuses it otherwise).
    reserve_rows : callable
        ``reserve_rows(D, measure, reserve) -> [(sense, body), ...]``: bodies (``<= 0``) that
        keep the share ``reserve`` of the cornering stiffness (the OCP option
        ``stiffness_reserve``), ``sense`` the key of each row.
    fraction : callable
        ``fraction(p, alpha, fz, D) -> array``: :math:`f_y/D` of pure slip at slip angles
        ``alpha`` [rad] (NumPy arrays; ``inf`` gives the limit), ``D`` the peak [N].
    slip_at : callable
        ``slip_at(p, fz, D, phi) -> array``: the smallest slip angle :math:`\alpha \ge 0`
        [rad] at which :math:`f_y = D\sin\phi`, :math:`0 \le \phi \le \pi/2` (NumPy
        arrays); ``inf`` where the model never reaches it.
    parameters : tuple of str
        Fields of the vehicle schema the model reads (with :data:`SHARED_PARAMETERS`).
    measure_doc : tuple of str
        ``(unit, meaning, sign, source)`` of the channel ``<measure>_<wheel>`` for the channel
        dictionary (:mod:`pyomo_lap.results.channels`), ``$where`` standing for the wheel in
        words ("front-left").
    """

    name: str
    description: str
    lateral: Callable
    measure: str
    peak_angle: bool
    reserve_rows: Callable
    fraction: Callable
    slip_at: Callable
    parameters: tuple = SHARED_PARAMETERS
    measure_doc: tuple = ()

    def peak_slip(self, p, fz):
        """The slip angle at which a tyre of load ``fz`` [N] (NumPy) first reaches its peak
        force [rad] (``inf`` if never)."""
        return self.slip_at(p, fz, peak_force(p, fz), np.pi / 2)


MAGIC_FORMULA = TyreModel(
    name="magic-formula", description="Pacejka's Magic Formula, eq (32) (keys C, E)",
    lateral=_magic_formula, measure="theta", peak_angle=True, reserve_rows=_angle_reserve_rows,
    fraction=_magic_formula_fraction, slip_at=_magic_formula_slip,
    parameters=SHARED_PARAMETERS + ("C", "E"),
    measure_doc=("rad", "Argument of the sine of the $where tyre's Magic Formula, f_y = D sin(theta): "
                 "the tyre is below its peak while abs(theta) < pi/2 (what the 'below-peak' "
                 "adherence rows keep).", "the sign of the slip angle (+ force to the left)",
                 "paper eq (32)"))
"""The paper's tyre: :func:`tyre_lateral_angle`."""

FIALA = TyreModel(
    name="fiala", description="the brush model's cubic (Fiala), sliding beyond tan(alpha) = "
    "3 D / C_alpha", lateral=fiala_force, measure="upsilon", peak_angle=False,
    reserve_rows=_sliding_reserve_rows, fraction=_fiala_fraction, slip_at=_fiala_slip,
    measure_doc=("-", "Sliding measure of the $where tyre's Fiala law (tyre model 'fiala'), C_alpha "
                 "tan(alpha) / (3 D): the tyre slides (its peak) at abs(upsilon) = 1.",
                 "the sign of the slip angle",
                 "not in the paper: vehicle/tyres.py fiala_force (seed 004)"))
"""The Fiala tyre: :func:`fiala_force`."""

TYRE_MODELS: dict = {MAGIC_FORMULA.name: MAGIC_FORMULA, FIALA.name: FIALA}
"""Name -> :class:`TyreModel`: the names the vehicle schema's ``tyre_model`` accepts."""


def register_tyre_model(model: TyreModel, replace: bool = False) -> TyreModel:
    """Add ``model`` to :data:`TYRE_MODELS` under its name.

    Parameters
    ----------
    model : TyreModel
        The model.
    replace : bool
        Allow replacing a registered model of the same name.

    Returns
    -------
    TyreModel
        ``model``.

    Raises
    ------
    ValueError
        The name is taken (and not ``replace``), or ``model`` is not a :class:`TyreModel`.
    """
    if not isinstance(model, TyreModel):
        raise ValueError(f"expected a TyreModel, got {type(model).__name__}")
    if model.name in TYRE_MODELS and not replace:
        raise ValueError(f"tyre model {model.name!r} is registered already (replace=True to "
                         "replace it)")
    TYRE_MODELS[model.name] = model
    return model


def tyre_model(name: str) -> TyreModel:
    """The registered model called ``name``.

    Raises
    ------
    ValueError
        Unknown name: the message names the registered ones.
    """
    try:
        return TYRE_MODELS[name]
    except (KeyError, TypeError):
        raise ValueError(f"tyre_model = {name!r}: unknown tyre model; registered: "
                         f"{', '.join(repr(k) for k in TYRE_MODELS)}") from None


def tyre_model_of(p) -> TyreModel:
    """The tyre model of the car ``p`` (its ``tyre_model``, :data:`DEFAULT_TYRE_MODEL` when it
    has none)."""
    return tyre_model(getattr(p, "tyre_model", DEFAULT_TYRE_MODEL))


# --------------------------------------------------------------------------------------------
# combined slip and the car's tyres
# --------------------------------------------------------------------------------------------

COMBINED_SMOOTHING = 5e-2
r"""Width :math:`\epsilon` of the smooth maximum in :func:`combined_slip_factor` [-]: the factor
is defined (small, positive) where a trial point of the solver is outside the ellipse, and
its slope at the ellipse's end is bounded."""


def combined_slip_factor(r):
    r"""The factor :math:`G` of combined slip.

    It scales a tyre's lateral force of pure slip for its longitudinal force
    (``combined_slip = "ellipse"``), :math:`r = \mu_y f_x / (\mu_x D)` the longitudinal force
    over its peak:

    .. math::
        G = \sqrt{\frac{\max_\epsilon(1 - r^2)}{\max_\epsilon(1)}},\quad
        \max_\epsilon(h) = \tfrac12\big(h + \sqrt{h^2 + \epsilon^2}\big),

    a smoothed :math:`\sqrt{1 - r^2}` (:data:`COMBINED_SMOOTHING`): the force stays on or
    near the friction ellipse :math:`(f_x/D_x)^2 + (f_y/D_y)^2 \le 1` (the friction-ellipse
    scaling of pure-slip forces: a longitudinal force uses up lateral grip; Pacejka, *Tire
    and Vehicle Dynamics*, 3rd ed., sec. 4.3.2). :math:`G(0) = 1` and
    :math:`G \ge \sqrt{1 - r^2}`: the excess :math:`G^2 + r^2 - 1` is 0 at :math:`r = 0`,
    grows with :math:`|r|`, is below :math:`10^{-3}` for :math:`|r| \le 0.72`,
    :math:`6.0 \cdot 10^{-3}` at :math:`|r| = 0.95` and
    :math:`\epsilon/(1 + \sqrt{1 + \epsilon^2}) = 0.025` at :math:`|r| = 1` (the most the
    adherence rows allow), so :math:`(f_x/D_x)^2 + (f_y/D_y)^2 \le 1.025`
    (tests/test_vehicle_physics.py; this text said before "within :math:`10^{-4}` of
    :math:`\sqrt{1 - r^2}` for :math:`r^2 \le 0.95`", which needs a much smaller
    :math:`\epsilon`: it is 0.022 off there).

    Parameters
    ----------
    r : scalar
        Longitudinal force over its peak [-].

    Returns
    -------
    scalar
        :math:`G` [-].
    """
    e2 = COMBINED_SMOOTHING ** 2
    h = sub(1.0, mul(r, r))
    norm = 1.0 / math.sqrt(0.5 * (1.0 + math.sqrt(1.0 + e2)))
    return mul(norm, sqrt(mul(0.5, add(h, sqrt(add(mul(h, h), e2))))))


def tyre_forces(p, wheels: dict) -> dict:
    r"""The lateral force of each tyre of the car.

    By the car's tyre model (``tyre_model``, a name of :data:`TYRE_MODELS`) and its combined
    slip (``combined_slip``):

    * ``"constraint"``: the force of pure slip, as in the paper; the friction ellipse is a
      constraint of the OCP;
    * ``"ellipse"``: the tyre's lateral characteristic with its peak lowered to
      :math:`D' = D\,G(r)` by its longitudinal force (:func:`combined_slip_factor`,
      :math:`r = \mu_y f_x / (\mu_x D)`) and its cornering stiffness kept: the force stays
      within the friction ellipse, a small longitudinal force leaves the lateral force of a
      small slip angle as it is (as the brush model and similarity combined-slip models do,
      e.g. fastest-lap's), and a tyre at its longitudinal limit saturates laterally at once.

    Parameters
    ----------
    p : VehicleParameters
        The car.
    wheels : dict
        ``{wheel: (slip angle [rad], vertical load [N], longitudinal force [N])}``.

    Returns
    -------
    dict
        ``{wheel: {"D": peak lateral force of the load [N], "D_eff": the peak with the
        longitudinal force (``D`` for ``"constraint"``) [N], <the model's measure> (``theta``,
        ``upsilon``, :attr:`TyreModel.measure`) [-], "f_y": lateral force [N]}}``.
    """
    model = tyre_model_of(p)
    ellipse = getattr(p, "combined_slip", "constraint") == "ellipse"
    ratio = p.mu_y0 / p.mu_x0
    out = {}
    for w, (alpha, fz, fx) in wheels.items():
        D = peak_force(p, fz)
        peak = mul(D, combined_slip_factor(mul(ratio, fx) / D)) if ellipse else None
        Dp, measure, fy = model.lateral(p, alpha, fz, peak)
        out[w] = {"D": D, "D_eff": Dp, model.measure: measure, "f_y": fy}
    return out
