"""Defects of collocation solutions and mesh refinement (item 3): the residual vanishes at the
collocation points, falls at the polynomial order between them on an exact trajectory, the
shooting error agrees, and refinement re-solves warm-started on a finer mesh."""
import numpy as np
import pandas as pd
import pytest

import _solved_sector as sector
from pyomo_lap import Track, build_model, load_vehicle
from pyomo_lap.api.refine import refine_mesh
from pyomo_lap.verify.defects import DEFECT_STATES, collocation_defects
from pyomo_lap.verify.simulate import car_functions
from pyomo_lap.verify.controls import FunctionControls
from pyomo_lap.verify.simulate import TrackLookup, simulate
from pyomo_lap.vehicle.car import ALGEBRAIC

RADAU3 = np.array([(4 - 6 ** 0.5) / 10, (4 + 6 ** 0.5) / 10, 1.0])   # Radau IIA nodes, ncp = 3


def exact_table(sim, car, track, u, start, length, nfe):
    """A 'collocation solution' built from an exact trajectory: the simulated states sampled at
    the Radau points of a uniform mesh, laid out as a trajectory table."""
    h = length / nfe
    s_sec = [0.0] + [e * h + c * h for e in range(nfe) for c in RADAU3]
    el = [0] + [e + 1 for e in range(nfe) for _ in RADAU3]
    X = sim.at_s(start + np.array(s_sec))
    look = TrackLookup(track)
    rows = []
    z = None
    for k, s in enumerate(s_sec):
        x = X[k]
        z, qdd = car.solve(look(start + s)[0], x[:6], x[6:12], u, z)
        row = {"s": start + s, "s_sector": s, "element": el[k], "t": x[12]}
        row.update({f"q{i}": x[i - 1] for i in range(2, 7)})
        row.update({f"q{i}_dot": x[5 + i] for i in range(1, 7)})
        row.update(f_xa=u[0], f_xb=u[1], delta=u[2])
        row.update(dict(zip(ALGEBRAIC, z)))
        rows.append(row)
    return pd.DataFrame(rows)


def wavy_track(length=400.0, kappa=0.01, wavelength=80.0, height=1.0, z_wavelength=100.0):
    """Open 3D track: plan curvature kappa sin(2 pi s / wavelength), elevation
    height sin(2 pi s / z_wavelength) (s: horizontal distance), samples at 3D arc length."""
    sig = np.linspace(0.0, length, 8001)
    psi = -kappa * wavelength / (2 * np.pi) * np.cos(2 * np.pi * sig / wavelength)
    d = sig[1] - sig[0]
    x = np.concatenate([[0.0], np.cumsum(0.5 * (np.cos(psi[1:]) + np.cos(psi[:-1])) * d)])
    y = np.concatenate([[0.0], np.cumsum(0.5 * (np.sin(psi[1:]) + np.sin(psi[:-1])) * d)])
    z = height * np.sin(2 * np.pi * sig / z_wavelength)
    P = np.c_[x, y, z]
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
    return Track(s[::4], P[::4], closed=False, name="wavy")


@pytest.mark.component
def test_defect_converges_at_the_polynomial_order_on_an_exact_trajectory():
    """Sampled from an exact solution (a time-domain run with constant controls along a 3D track
    whose curvature and elevation wave, after the start transients have died out),
    each element's polynomial misses the dynamics by O(h^ncp) between the points: the
    integrated defect eta falls like h^(ncp+1) = h^4 when the mesh is halved (measured 11-31
    for the twelve states), and shooting from each element's start lands on the element's end
    (the samples are exact)."""
    p = load_vehicle("fsae")
    car = car_functions(p)
    tr = wavy_track()
    drag = 0.5 * p.rho * p.S * p.Cx * 18.0 ** 2
    u = np.array([drag, 0.0, 0.0])
    x0 = [0.0, 0.0, 0.0, -0.018, 0.0, 0.0, 18.0, 0, 0, 0, 0, 0]
    sim = simulate(tr, p, FunctionControls(lambda t, x: u), x0, t_end=20.0, s_end=105.0,
                   car=car, rtol=1e-9, method="DOP853", max_step=0.1)
    assert sim.status == "end", sim.message
    eta = []
    for nfe in (6, 12):
        df = exact_table(sim, car, tr, u, 40.0, 60.0, nfe)
        rep = collocation_defects(df, tr, p, ncp=3, start=40.0, car=car, shooting=(nfe == 6))
        if nfe == 6:
            el = rep.elements
        eta.append(rep.elements[[f"eta_{k}" for k in DEFECT_STATES]].to_numpy().max(axis=0))
    ratio = eta[0] / eta[1]
    checked = 0
    for k, st in enumerate(DEFECT_STATES):
        if eta[0][k] > 1e-8 * rep.weights[st]:
            assert ratio[k] > 10.0, (st, ratio[k])         # 2^4 = 16 in the asymptotic range
            checked += 1
    assert checked >= 10
    assert np.nanmax(np.abs(el["shoot_q2"])) < 1e-6 and np.nanmax(np.abs(el["shoot_t"])) < 1e-8


@pytest.mark.integration
def test_defects_of_a_solved_sector(solved_sector):
    """At the collocation points the DAE holds to the solver's tolerance; between them it does
    not exactly; shooting each element from its start gives local errors well below the replay
    tolerances."""
    tr, p, m, rep, df = solved_sector("full")
    d = collocation_defects(m, tr, p, shooting=True)
    el = d.elements
    assert len(el) == sector.NFE and (el["eps"] > 0).all()
    node = np.array([d.node_residual[k] for k in DEFECT_STATES])
    between = np.array([el[f"eta_{k}"].max() / el["h"].max() for k in DEFECT_STATES])
    assert node.max() < 1e-4
    assert (between > 10 * node).sum() >= 9                    # most states: real defects between
    assert np.nanmax(np.abs(el["shoot_q2"])) < 2e-3            # m per element
    assert np.nanmax(np.abs(el["shoot_q1_dot"])) < 2e-2        # m/s per element
    assert np.nanmax(np.abs(el["shoot_t"])) < 1e-3             # s per element
    # the same from the table read back from a results file (told how the controls were made,
    # as summary.json's ocp_options.control_form tells pyomo-lap validate)
    d2 = collocation_defects(df, tr, p, ncp=3, start=sector.START,
                             interpolation="state" if m.problem.options.control_form == "state"
                             else "polynomial")
    assert d2.elements["eps"].to_numpy() == pytest.approx(el["eps"].to_numpy(), rel=1e-6)


@pytest.mark.integration
def test_refine_mesh_splits_and_resolves_warm_started(solved_sector):
    """The refinement splits the worst elements and solves the new mesh from the old solution."""
    tr, p, m, rep, df = solved_sector("full")
    d = collocation_defects(m, tr, p)
    eps = d.elements["eps"].to_numpy()
    tol = float(np.sort(eps)[-3]) * 0.999          # the three worst elements
    res = refine_mesh(m, tol, defects=d)
    assert set(res.split) == set(d.elements["element"][eps > tol])
    assert len(res.boundaries) - 1 == sector.NFE + sum(k - 1 for k in res.split.values())
    assert res.solve_report.ok
    assert res.solve_report.iterations < rep.iterations       # warm start from the solution
    assert res.after.elements["eps"].max() < eps.max()
    assert res.lap_time_after == pytest.approx(res.lap_time_before, rel=3e-3)
    # the new mesh is finer exactly where it was split
    h_new = np.diff(res.boundaries)
    assert h_new.min() == pytest.approx(sector.LENGTH / sector.NFE / max(res.split.values()), rel=1e-6)


@pytest.mark.integration
def test_refine_mesh_also_splits_the_elements_it_is_given(solved_sector):
    """Elements named for another reason (the speed consistency of the channels) are split in
    the parts given, with none of the defects above the tolerance; a bad count is refused."""
    tr, p, m, rep, df = solved_sector("full")
    d = collocation_defects(m, tr, p)
    res = refine_mesh(m, 10.0 * float(d.elements["eps"].max()), defects=d, solve=False,
                      also_split={2: 2, 5: 3})
    assert res.split == {2: 2, 5: 3}
    h = np.diff(res.boundaries)
    assert len(h) == sector.NFE + 1 + 2
    assert h[1] == pytest.approx(h[0] / 2) and h[5] == pytest.approx(h[0] / 3)
    with pytest.raises(ValueError, match="also_split"):
        refine_mesh(m, 1.0, defects=d, solve=False, also_split={2: 0})
    # what solve's refinement asks for: nothing on this sector, whose worst step is the one
    # of channel_quality
    from pyomo_lap.api.refine import _speed_consistency_split
    from pyomo_lap.verify.quality import channel_quality
    split, worst = _speed_consistency_split(m)
    sc = channel_quality(df, p)["speed_consistency"]
    assert split == {} and worst == pytest.approx(100 * sc["max_error_rel"], rel=1e-9)


@pytest.mark.component
def test_element_boundaries_are_checked():
    """Given element boundaries are the mesh; boundaries not increasing, not ending at the
    sector's length, not starting at 0 or too close together are refused."""
    from pyomo_lap import load_track
    tr, p = load_track("nordschleife"), load_vehicle("fsae")
    m = build_model(tr, p, start=100.0, length=50.0, element_boundaries=[0, 10, 15, 30, 50], ncp=2)
    assert sorted(m.s.get_finite_elements()) == [0, 10, 15, 30, 50]
    for bad in ([0, 10, 5, 50], [0, 10, 40], [1, 20, 50], [0, 25.0, 25.05, 50]):
        with pytest.raises(ValueError, match="element_boundaries"):
            build_model(tr, p, start=100.0, length=50.0, element_boundaries=bad)


@pytest.mark.component
def test_the_batched_algebraic_loop_is_the_point_by_point_one():
    """CarFunctions.solve_many (the defects' batch, in chunks on two threads) gives what
    CarFunctions.solve gives at each point: 1200 states spread around a straight-line run,
    with yaw, steering and drive, started from the static loads; a point whose loads cannot
    stay positive (a wheel lifts) is flagged, not raised."""
    from pyomo_lap.ocp.point_functions import AlgebraicLoopError
    from pyomo_lap.track.loading import load_track
    p = load_vehicle("fsae")
    car = car_functions(p)
    tr = load_track("nordschleife")
    rng = np.random.default_rng(7)
    k = 1200
    s = rng.uniform(0.0, 2000.0, k)
    trk = track_vectors_of(tr, s)
    q = np.column_stack([np.zeros(k), rng.normal(0, 1.0, k), rng.normal(0, 0.05, k),
                         rng.normal(-0.02, 0.005, k), rng.normal(0, 0.005, k), rng.normal(0, 0.01, k)])
    qd = np.column_stack([rng.uniform(10, 40, k), rng.normal(0, 0.5, k), rng.normal(0, 0.3, k),
                          rng.normal(0, 0.05, k), rng.normal(0, 0.05, k), rng.normal(0, 0.05, k)])
    u = np.column_stack([rng.uniform(0, 1500, k), rng.uniform(-1500, 0, k), rng.normal(0, 0.05, k)])
    z0 = np.tile(car.static_guess, (k, 1))
    z, qdd, ok = car.solve_many(trk, q, qd, u, z0)
    assert ok.sum() > 0.5 * k                     # most of these states have a solution
    for i in range(0, k, 7):
        try:
            zi, qi = car.solve(trk[i], q[i], qd[i], u[i], z0[i])
        except AlgebraicLoopError:
            assert not ok[i]
            continue
        assert ok[i]
        assert z[i] == pytest.approx(zi, rel=1e-6, abs=1e-4)
        assert qdd[i] == pytest.approx(qi, rel=1e-6, abs=1e-6)
    # a car pulled off the ground: its loads cannot stay positive
    q_lift = q[:4].copy()
    q_lift[:, 3] = 0.5                            # heave 0.5 m up: the springs lift the wheels
    _, _, ok_lift = car.solve_many(trk[:4], q_lift, qd[:4], u[:4], z0[:4])
    assert not ok_lift.any()


def track_vectors_of(track, s):
    """The track vectors of ``track`` at the coordinates ``s``."""
    from pyomo_lap.ocp.point_functions import track_vectors
    return track_vectors(track.evaluate(np.asarray(s, float)))


def _refine_round(eps, monkeypatch) -> list:
    """The tolerances one round of the job's refinement (:func:`pyomo_lap.api.refine._refine_once`)
    hands to refine_mesh for a model whose elements' scaled defects are ``eps`` (the speed
    consistency within its warning; the refined solve not optimal, so the round ends there)."""
    from types import SimpleNamespace as NS
    from pyomo_lap.api import refine
    from pyomo_lap.ocp.build import VEHICLE_MODELS
    n = len(eps)
    elements = pd.DataFrame({"element": np.arange(1, n + 1), "s_start": 10.0 * np.arange(n),
                             "s_end": 10.0 * np.arange(1, n + 1), "eps": eps})
    report = NS(elements=elements)
    monkeypatch.setattr(refine, "_speed_consistency_split",
                        lambda m, job: (setattr(job, "result_df", (m, None)) or {}, 0.0))
    monkeypatch.setattr(refine, "collocation_defects", lambda *a, **k: report)
    asked = []

    def fake_refine_mesh(m, tol, **kwargs):
        asked.append(tol)
        return NS(split={}, boundaries=np.zeros(n + 1), lap_time_before=1.0, solve_report=None)
    monkeypatch.setattr(refine, "refine_mesh", fake_refine_mesh)
    opts = NS(ncp=2, scheme="LAGRANGE-RADAU", start=0.0, control_form="state")
    m = NS(problem=NS(options=opts, track=None, sector_length=10.0 * n,
                      vehicle_model=VEHICLE_MODELS["multibody"]), vehicle=NS(built_for=None))
    job = NS(m=m, echo=lambda text: None, solver_options=None, cfg=NS(solver="lap_ipopt"),
             result_defects=None)
    out = refine._refine_once(job)
    assert (out is None) == (not asked)
    return asked


@pytest.mark.unit
def test_the_jobs_refinement_splits_for_the_95th_percentile(monkeypatch):
    """A result whose largest defect is within its warning (0.15) but whose 95th percentile is
    not (0.06 > 0.025): the round splits the elements above half the percentile's warning
    (0.0125), the one at 0.02 among them; with the largest defect above its warning and the
    percentile within its own or above it too, those above half the largest's (0.075); within
    both, no round."""
    eps = np.r_[np.full(17, 0.001), 0.02, 0.06, 0.06]
    assert np.percentile(eps, 95) > 0.025 and eps.max() < 0.15
    assert _refine_round(eps, monkeypatch) == [pytest.approx(0.0125)]
    spike = np.r_[np.full(39, 0.001), 0.2]
    assert np.percentile(spike, 95) < 0.025
    assert _refine_round(spike, monkeypatch) == [pytest.approx(0.075)]
    both = np.r_[np.full(17, 0.001), 0.06, 0.06, 0.2]
    assert np.percentile(both, 95) > 0.025
    assert _refine_round(both, monkeypatch) == [pytest.approx(0.075)]
    assert _refine_round(np.full(20, 0.001), monkeypatch) == []
