"""One record per vehicle-model family (issue 37): every family of the registry that records its
rows gets its channels, its simulation and its collocation defects from that record, with no
code of its own; a channel added to a record reaches the results table and the gate of the
channel dictionary."""
import math

import numpy as np
import pytest

import _solved_sector as sector
from pyomo_lap import load_vehicle
from pyomo_lap.ocp.build import OCP_CONFIG, VEHICLE_MODELS
from pyomo_lap.ocp.point_functions import algebraic_rows, record_of, track_vector
from pyomo_lap.results.channels import CHANNELS
from pyomo_lap.verify.defects import collocation_defects, defect_states
from pyomo_lap.results.table import record_columns, trajectory_dataframe
from pyomo_lap.verify.simulate import car_functions
from pyomo_lap.spatial.tree import TrackJoint

OWN_EQUATIONS = {"racecar": "rows recorded with the car's numbers, no joints: its own ODE "
                            "(vehicle/racecar_equations.py), reaching the checks as its "
                            "VehicleModel.dynamics (ocp/racecar.py RacecarDynamics)"}
"""Registered families that record rows but are not cars on a kinematic chain (no rows
``ode_qdot``): the one exception, named here so that a new family is never skipped silently."""

CHAIN_FAMILIES = [name for name, vm in VEHICLE_MODELS.items()
                  if vm.point_rows is not None and name not in OWN_EQUATIONS]

FLAT = TrackJoint(R=np.eye(3).tolist(), J=[1.0, 0, 0, 0, 0, 0], dJ=[0.0] * 6)


@pytest.mark.unit
def test_the_exceptions_are_registered_families():
    """The list of families with their own equations names only registered families, and
    leaves at least the full, single-track and multibody cars to the record."""
    assert set(OWN_EQUATIONS) <= set(VEHICLE_MODELS)
    assert {"full", "single-track", "multibody"} <= set(CHAIN_FAMILIES)


@pytest.mark.unit
@pytest.mark.parametrize("name", CHAIN_FAMILIES)
def test_every_recording_family_has_a_channel_group_and_car_functions(name):
    """The record of every chain family holds the spatial DAE, one algebraic equation per
    algebraic variable and a channel group with an entry in the channel dictionary for each of
    its columns; its car functions come from the record alone. Closed form: the car at rest
    in yaw on the centreline of a flat straight at speed v has v_3x = v, v_3y = 0,
    omega_3z = 0, and with no drive and no brake it decelerates by its drag over its mass
    (exactly for a rigid car; within 5 % with a suspension not settled at q = 0, whose heave
    and pitch accelerations couple into q1)."""
    p = load_vehicle("fsae")
    vm = VEHICLE_MODELS[name]
    rec = vm.point_rows(p, OCP_CONFIG())
    assert "ode_qdot" in {f.name for f in rec.families}
    assert len(algebraic_rows(rec)) == len(vm.algebraics)
    assert rec.channels, f"model {name!r}: its record has no channel group"
    missing = [c for c in record_columns(rec) if c not in CHANNELS]
    assert not missing, f"model {name!r}: channels without an entry in results/channels.py: {missing}"
    car = car_functions(p, name)
    assert car.channel_names == rec.channel_names and car.n_q == len(vm.rates)
    v = 20.0
    q, qd = np.zeros(car.n_q), np.zeros(car.n_q)
    qd[0] = v
    z, qdd = car.solve(track_vector(FLAT), q, qd, [0.0, 0.0, 0.0])
    ch = car.channels(track_vector(FLAT), q, qd, [0.0, 0.0, 0.0], z)
    assert ch["v_3x"] == pytest.approx(v, rel=1e-12)
    assert ch["v_3y"] == pytest.approx(0.0, abs=1e-12)
    assert ch["omega_3z"] == pytest.approx(0.0, abs=1e-12)
    drag = 0.5 * p.rho * p.S * p.Cx * v * v
    assert qdd[0] == pytest.approx(-drag / p.m, rel=0.05)
    if vm.states == ("q2", "q3"):                  # a rigid car: the closed form exactly
        assert qdd[0] == pytest.approx(-drag / p.m, rel=1e-12)


@pytest.mark.integration
@pytest.mark.parametrize("name", CHAIN_FAMILIES)
def test_every_recording_family_gets_channels_simulate_and_defects(solved_sector, name):
    """On the family's solved sector: every channel of its record is a column of the results,
    and ``v_3x`` there is the closed form of the road body's velocity,
    q1_dot (1 - Omega_z q2) cos q3 + q2_dot sin q3; its collocation defects (and, by shooting,
    its simulation) come from the record: at the collocation points the DAE holds to the
    solver's tolerance, and each element simulated from its start lands near its end."""
    tr, p, m, rep, df = solved_sector(name)
    rec = record_of(m)
    missing = [c for c in record_columns(rec) if c not in df.columns]
    assert not missing, f"model {name!r}: channels of the record missing from the results: {missing}"
    q2, q3 = df["q2"].to_numpy(), df["q3"].to_numpy()
    v3x = (df["q1_dot"] * (1.0 - df["Omega_z"] * q2) * np.cos(q3) + df["q2_dot"] * np.sin(q3))
    np.testing.assert_allclose(df["v_3x"], v3x, rtol=1e-12, atol=1e-12)
    d = collocation_defects(m, tr, p, shooting=True)
    states = defect_states(car_functions(p, name))
    assert d.states == states and states[0] == "q2" and states[-1] == "t"
    node = np.array([d.node_residual[k] / d.weights[k] for k in states])
    assert node.max() < 1e-6, dict(zip(states, node))    # measured 2e-8 (all three cars)
    el = d.elements
    assert len(el) == sector.NFE and np.isfinite(el["eps"]).all()
    shot = el["shoot_q2"].to_numpy()
    assert np.isfinite(shot).all()                             # every element simulated
    assert np.nanmax(np.abs(shot)) < 5e-3                      # m per element (measured < 1e-3)
    assert np.nanmax(np.abs(el["shoot_t"])) < 1e-4             # s per element (measured 4e-6)


@pytest.mark.component
def test_a_channel_added_to_the_record_reaches_the_results_and_the_dictionary_gate():
    """A quantity added to the full model's channel group (here v_3x^2 Omega_z, the lateral
    acceleration a car at v_3x needs on the spine's curvature) is a column of the results
    table with its closed-form value at every point, and the dictionary's gate names it as a
    column without an entry until one is written in results/channels.py."""
    from pyomo_lap import build_model, initialize_model, load_track
    m = build_model(load_track("nordschleife"), load_vehicle("fsae"), start=1200, length=100,
                    nfe=8, ncp=2)
    initialize_model(m)
    rec = record_of(m)
    tape = rec.tape
    kappa = next(n for n in tape.nodes if n.op == "input" and n.args[0] == "Om[2]")
    v = rec.channels["v_3x"]
    before = trajectory_dataframe(m)
    rec.channels["v2_kappa"] = tape.op("mul", tape.op("mul", v, v), kappa)
    df = trajectory_dataframe(m)
    assert "v2_kappa" in df.columns and "v2_kappa" not in before.columns
    expected = df["v_3x"].to_numpy() ** 2 * df["Omega_z"].to_numpy()
    np.testing.assert_allclose(df["v2_kappa"], expected, rtol=1e-12, atol=1e-15)
    assert np.abs(expected).max() > 0.1            # a curved stretch: not a trivial zero
    assert "v2_kappa" in record_columns(rec) and "v2_kappa" not in CHANNELS
    assert math.isfinite(float(df["v2_kappa"].abs().max()))


@pytest.mark.unit
def test_the_channel_group_is_no_part_of_the_nlp():
    """The full model's rows recorded without their channel group have the same live tape,
    the same structure key (the compiled point functions' cache) and the same rows at a point
    as the record with it: the channels are outputs, never constraints."""
    from pyomo_lap.ocp.full_model import POINT_VARIABLES, point_row_list, vehicle_inputs
    from pyomo_lap.ocp.point_rows import rows_on_tape
    from pyomo_lap.vehicle import car as veh
    p = load_vehicle("fsae")
    cfg = OCP_CONFIG()
    with_channels = VEHICLE_MODELS["full"].point_rows(p, cfg)
    rows_only = rows_on_tape(
        lambda sym, v, track, namer: point_row_list(sym, veh.build_chain(sym), cfg,
                                                    [v[k] for k in POINT_VARIABLES], track, namer),
        p, POINT_VARIABLES, vehicle_inputs(p))
    assert with_channels.channels and not rows_only.channels
    assert with_channels.structure_key() == rows_only.structure_key()
    assert sum(with_channels.tape.live) == sum(rows_only.tape.live)
    assert len(with_channels.tape.nodes) > len(rows_only.tape.nodes)     # the channels' own nodes
    rng = np.random.default_rng(5)
    w = rng.uniform(0.1, 1.0, len(POINT_VARIABLES))
    w[POINT_VARIABLES.index("q1_dot")] = 20.0
    t = np.r_[np.eye(3).ravel(), rng.uniform(-0.01, 0.01, 6)]
    v = with_channels.vehicle_values(p)
    a = np.asarray(with_channels.casadi_function()(w, t, v)).ravel()
    b = np.asarray(rows_only.casadi_function()(w, t, v)).ravel()
    c = np.asarray(with_channels.point_function()(w, t, v)[0]).ravel()
    assert np.array_equal(a, b) and np.array_equal(a, c)
