"""``trajectory_dataframe`` (all points at once, the channel group of the model's record) against
the former per-point evaluation of the model code with Python floats."""
import math

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import pytest

from pyomo_lap import build_model, initialize_model, load_track, load_vehicle
from pyomo_lap.spatial import lie
from pyomo_lap.vehicle import car as veh
from pyomo_lap.ocp.build import RATE_NAMES, STATE_NAMES
from pyomo_lap.results.table import UNITS, trajectory_dataframe


def reference_dataframe(m, p=None) -> pd.DataFrame:
    """The former body of ``trajectory_dataframe`` (full model): ``car_equations`` with
    floats at every point (for the car ``p``, default the model's)."""
    p = m.vehicle.built_for if p is None else p
    tp = m.problem.track_points
    from pyomo_lap.ocp.sector import track_joints
    chain, joints = veh.build_chain(p), track_joints(tp)
    sigma = sorted(m.s)
    elems = list(m.s.get_finite_elements())
    rows = []
    for i, s in enumerate(sigma):
        val = {n: float(pyo.value(m.component(n)[s])) for n in
               STATE_NAMES + RATE_NAMES + ("t",) + veh.CONTROLS + veh.ALGEBRAIC}
        q = [0.0] + [val[n] for n in STATE_NAMES]
        qd = [val[n] for n in RATE_NAMES]
        u = [val[n] for n in veh.CONTROLS]
        z = [val[n] for n in veh.ALGEBRAIC]
        e = veh.car_equations(p, chain, joints[i], q, qd, u, z)
        ch = {k: float(v) for k, v in e.channels.items()}
        V3 = [float(x) for x in e.kin.V[veh.UNSPRUNG]]
        Vd3 = [float(x) for x in e.aba.Vdot[veh.UNSPRUNG]]
        wxv = lie.cross(V3[3:], V3[:3])
        R03 = np.array(e.kin.pose[veh.UNSPRUNG][0], dtype=float)
        g3 = R03.T @ np.array([0.0, 0.0, p.gravity])
        acc = [Vd3[k] + float(wxv[k]) - g3[k] for k in range(3)]
        g06 = e.kin.pose[veh.SPRUNG]
        row = {"s": float(tp.s[i]), "s_sector": float(s), "q1": float(tp.s[i])}
        row.update(val)
        row.update({f"q{k + 1}_ddot": float(e.qdd[k]) for k in range(6)})
        row.update(ch)
        row["speed"] = math.hypot(ch["v_3x"], ch["v_3y"])
        row["speed_kmh"] = 3.6 * row["speed"]
        row["a_x"], row["a_y"], row["a_z"] = acc
        row["x_vip"], row["y_vip"], row["z_vip"] = (float(x) for x in g06[1])
        row["x_spine"], row["y_spine"], row["z_spine"] = (float(x) for x in tp.position[i])
        row["width_left"], row["width_right"] = float(tp.width_left[i]), float(tp.width_right[i])
        row["Omega_x"], row["Omega_y"], row["Omega_z"] = (float(x) for x in tp.omega[i])
        row["load_residual_max"] = max(abs(float(r)) for r in e.load_residuals)
        row["element"] = int(np.searchsorted(elems, s, side="left"))
        rows.append(row)
    df = pd.DataFrame(rows)
    # the tangential acceleration, and the time rates of controls that are states
    df["a_t"] = (df["v_3x"] * df["a_x"] + df["v_3y"] * df["a_y"]) / np.hypot(df["v_3x"], df["v_3y"])
    for c in veh.CONTROLS:
        dv = m.component(f"d{c}_ds")
        if dv is not None:
            rate = [dv[s].value * pyo.value(m.q1_dot[s]) for s in sigma]
            rate[0] = dv[sigma[1]].value * pyo.value(m.q1_dot[sigma[0]])
            df[f"{c}_rate"] = rate
    from pyomo_lap.vehicle.speed_profile import quasi_steady_speed
    sig = np.asarray(sigma, dtype=float)
    v_pm = quasi_steady_speed(p, sig, tp.omega, tp.rotation, closed=bool(m.problem.options.periodic),
                              v_start=m.problem.initial_speed, v_min=m.problem.options.v_min)
    df["v_point_mass"] = v_pm
    df["t_point_mass"] = np.concatenate([[0.0], np.cumsum(0.5 * (1 / v_pm[1:] + 1 / v_pm[:-1]) * np.diff(sig))])
    cols = [c for c in UNITS if c in df.columns] + [c for c in df.columns if c not in UNITS]
    return df[cols]


@pytest.fixture(scope="module")
def model():
    """A 150 m Nordschleife sector, initialized (not solved)."""
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=500, length=150,
                    nfe=10, ncp=2)
    initialize_model(m)
    return m


def assert_same_frame(new: pd.DataFrame, ref: pd.DataFrame):
    """The columns of the reference, with the same values; the logger channels (computed from
    these columns by pyomo_lap.results.logger, checked in tests/test_logger_channels.py) and the
    energies' powers (pyomo_lap.ocp.integrals, tests/test_energy_integrals.py) are the only
    columns the vectorized table has in addition."""
    from pyomo_lap.ocp.integrals import ENERGY_CHANNELS    # from these columns too (issue 38)
    from pyomo_lap.results.logger import LOGGER_CHANNELS
    assert set(new.columns) - set(ref.columns) <= set(LOGGER_CHANNELS) | set(ENERGY_CHANNELS)
    new = new[[c for c in new.columns if c in ref.columns]]
    assert list(new.columns) == list(ref.columns)
    assert list(new.dtypes) == list(ref.dtypes)
    assert new.index.equals(ref.index)
    for c in ref.columns:
        a, b = new[c].to_numpy(), ref[c].to_numpy()
        if c == "element":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=c)


@pytest.mark.component
def test_vectorized_equals_per_point(model):
    """The vectorized table equals the per-point reference, column by column."""
    ref = reference_dataframe(model)
    new = trajectory_dataframe(model)
    assert len(new) == len(sorted(model.s))
    assert_same_frame(new, ref)


@pytest.mark.component
def test_perturbed_values_and_cache(model):
    """Away from the initial guess (every variable moved), and a second call."""
    m = model
    names = STATE_NAMES + RATE_NAMES + veh.CONTROLS + veh.ALGEBRAIC
    saved = {n: {s: m.component(n)[s].value for s in m.s} for n in names}
    rng = np.random.default_rng(1)
    try:
        for n in names:
            for s in m.s:
                v = m.component(n)[s]
                x = v.value
                v.set_value(x * (1 + 0.05 * rng.standard_normal()) + 0.01 * rng.standard_normal(),
                            skip_validation=True)
        first = trajectory_dataframe(m)
        second = trajectory_dataframe(m)
        ref = reference_dataframe(m)
        assert_same_frame(first, ref)
        assert_same_frame(second, ref)
    finally:
        for n, d in saved.items():
            for s, x in d.items():
                m.component(n)[s].set_value(x, skip_validation=True)


@pytest.mark.component
def test_progress_called_without_per_point_calls(model):
    """The progress callback is called, and not once per point."""
    calls = []
    trajectory_dataframe(model, progress=lambda label, done, total: calls.append((label, done, total)))
    n = len(sorted(model.s))
    assert calls and len(calls) <= 3
    assert calls[-1] == ("evaluating the channels", n, n)


@pytest.mark.component
def test_missing_value_raises(model):
    """A variable without a value stops the table with an error."""
    m = model
    s = sorted(m.s)[3]
    v = m.component("q3")[s]
    x = v.value
    try:
        v.set_value(None)
        with pytest.raises(ValueError):
            trajectory_dataframe(m)
    finally:
        v.set_value(x, skip_validation=True)


@pytest.mark.component
def test_channels_follow_the_model_car(model):
    """The record takes the car's parameters as inputs: with a parameter of ``m.vehicle``
    changed (as a solve with it free would), the channels are those of ``car_equations`` for
    that car, not for the car the model was built with."""
    from pyomo_lap.ocp.common import vehicle_of_model, vehicle_var
    m = model
    params = {"mass.total": 1.07, "aero.Cz1": 1.3, "tyre.mu_y0": 0.93}
    saved = {k: vehicle_var(m, k).value for k in params}
    try:
        for k, f in params.items():
            vehicle_var(m, k).set_value(saved[k] * f)
        p = vehicle_of_model(m)
        assert p.value("mass.total") == pytest.approx(saved["mass.total"] * 1.07)
        ref = reference_dataframe(m, p)
        new = trajectory_dataframe(m)
        assert_same_frame(new, ref)
        old = reference_dataframe(m, m.vehicle.built_for)
        assert not np.allclose(new["q1_ddot"], old["q1_ddot"], rtol=1e-6)
        assert not np.allclose(new["f_11y"], old["f_11y"], rtol=1e-6)
    finally:
        for k, x in saved.items():
            vehicle_var(m, k).set_value(x)
