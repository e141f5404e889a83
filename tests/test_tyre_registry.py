r"""The tyre registry (:mod:`pyomo_lap.vehicle.tyres`): its models against closed forms, and a
new model registered here picked up everywhere (docs/architecture.md, "Add a tyre model").

The new model is a smooth saturating tyre, :math:`f_y = D\tanh(C_\alpha\alpha/D)`, with the
peak and cornering stiffness every model shares: its force, slip angle at a force and
friction envelope have closed forms written here, independent of the package.
"""
import ast
import math
from pathlib import Path

import numpy as np
import pytest

from pyomo_lap.verify.simulate import car_functions
from pyomo_lap.vehicle import tyres
from pyomo_lap.vehicle.car import build_chain, car_equations, load_vehicle
from pyomo_lap.vehicle.files import VehicleFileError, read_vehicle_file
from pyomo_lap.spatial.backend import mul, sub, tanh
from pyomo_lap.spatial.tree import TrackJoint

PKG = Path(__file__).resolve().parents[1] / "pyomo_lap"


@pytest.fixture(scope="module")
def fsae():
    """The bundled FSAE car (Magic Formula)."""
    return load_vehicle("fsae")


def _c_alpha(p, fz):
    """Cornering stiffness written here: pK1 Fz0 sin(2 atan(fz / (pK2 Fz0))) [N/rad]."""
    return p.pK1 * p.Fz0 * math.sin(2 * math.atan(fz / (p.pK2 * p.Fz0)))


def _peak(p, fz):
    """Peak force written here: mu_y0 (1 + pD2 (fz - Fz0)/Fz0) fz [N]."""
    return p.mu_y0 * (1 + p.pD2 * (fz - p.Fz0) / p.Fz0) * fz


# ----------------------------------------------------------------------- the bundled models
@pytest.mark.unit
def test_magic_formula_is_zero_at_zero_slip_with_the_cornering_stiffness(fsae):
    """Magic Formula: f_y(0) = 0 exactly, theta(0) = 0, slope at 0 = C_alpha (central
    difference, step 1e-7 rad), odd in alpha."""
    mf = tyres.TYRE_MODELS["magic-formula"]
    for fz in (300.0, 900.0, 2000.0):
        D, th, fy = mf.lateral(fsae, 0.0, fz)
        assert fy == 0.0 and th == 0.0 and D == pytest.approx(_peak(fsae, fz), rel=1e-14)
        h = 1e-7
        slope = (mf.lateral(fsae, h, fz)[2] - mf.lateral(fsae, -h, fz)[2]) / (2 * h)
        assert slope == pytest.approx(_c_alpha(fsae, fz), rel=1e-7)
        assert mf.lateral(fsae, -0.07, fz)[2] == pytest.approx(-mf.lateral(fsae, 0.07, fz)[2])


@pytest.mark.unit
@pytest.mark.parametrize("C", [1.3, 1.6])
def test_magic_formula_peaks_where_its_angle_is_a_right_angle(fsae, C):
    r"""E = 0: :math:`C\arctan(B\alpha) = \pi/2` at :math:`B\alpha^* = \tan(\pi/(2C))`,
    :math:`B = C_\alpha/(C D)`: there :math:`f_y = D`, the slope is 0, and the registry's
    peak slip (:meth:`TyreModel.peak_slip`, ``slip_at`` at a right angle) is
    :math:`\alpha^*`; its ``fraction`` is 1 there and sin(C pi/2) at an infinite slip."""
    p = fsae.replace(C=C, E=0.0)
    mf = tyres.TYRE_MODELS["magic-formula"]
    for fz in (400.0, 1500.0):
        D, Ca = _peak(p, fz), _c_alpha(p, fz)
        a_star = math.tan(math.pi / (2 * C)) * C * D / Ca
        assert mf.lateral(p, a_star, fz)[2] == pytest.approx(D, rel=1e-12)
        h = 1e-6
        assert (mf.lateral(p, a_star + h, fz)[2] - mf.lateral(p, a_star - h, fz)[2]) / (2 * h) \
            == pytest.approx(0.0, abs=1e-6 * Ca)
        assert float(mf.peak_slip(p, np.array(fz))) == pytest.approx(a_star, rel=1e-12)
        frac = mf.fraction(p, np.array([a_star, np.inf]), fz, D)
        np.testing.assert_allclose(frac, [1.0, math.sin(C * math.pi / 2)], rtol=1e-12)


@pytest.mark.unit
def test_fiala_saturates_at_three_mu_fz_over_c_alpha(fsae):
    r"""Fiala: sliding at :math:`\tan\alpha_{sl} = 3D/C_\alpha` (:math:`\upsilon = 1`,
    :math:`f_y = D`, within the smoothed :math:`|\upsilon|`'s 1e-7); ``slip_at`` a right
    angle is :math:`\alpha_{sl}`; ``fraction`` at :math:`u = \tfrac12` of the way is
    :math:`1 - (1/2)^3 = 7/8` and 1 beyond sliding; ``slip_at`` inverts it."""
    fi = tyres.TYRE_MODELS["fiala"]
    p = fsae
    for fz in (300.0, 900.0, 2000.0):
        D, Ca = _peak(p, fz), _c_alpha(p, fz)
        a_sl = math.atan(3 * D / Ca)
        Dm, ups, fy = fi.lateral(p, a_sl, fz)
        assert ups == pytest.approx(1.0, rel=1e-12) and fy == pytest.approx(D, rel=1e-7)
        assert float(fi.slip_at(p, fz, D, math.pi / 2)) == pytest.approx(a_sl, rel=1e-12)
        a_half = math.atan(1.5 * D / Ca)
        np.testing.assert_allclose(fi.fraction(p, np.array([a_half, 2 * a_sl, np.inf]), fz, D),
                                   [7 / 8, 1.0, 1.0], rtol=1e-12)
        phi = math.asin(7 / 8)
        assert float(fi.slip_at(p, fz, D, phi)) == pytest.approx(a_half, rel=1e-12)


@pytest.mark.unit
def test_the_measures_are_the_channels_the_dictionary_documents():
    """Each bundled model's ``measure_doc`` says what the channel dictionary says of its
    channel ``<measure>_11`` (unit, meaning, sign): the registry can feed the dictionary."""
    from pyomo_lap.results.channels import describe
    for model in tyres.TYRE_MODELS.values():
        unit, meaning, sign, _ = model.measure_doc
        entry = describe(f"{model.measure}_11")
        assert (entry.unit, entry.meaning, entry.sign) == (
            unit, meaning.replace("$where", "front-left"), sign), model.name


@pytest.mark.unit
def test_registry_refuses_a_taken_name_and_names_the_registered_ones():
    """A second model of a taken name is refused; an unknown name's error is one line naming
    the value and every registered name."""
    with pytest.raises(ValueError, match="registered already"):
        tyres.register_tyre_model(tyres.FIALA)
    with pytest.raises(ValueError) as exc:
        tyres.tyre_model("pacejka-2002")
    msg = str(exc.value)
    assert "\n" not in msg and "tyre_model = 'pacejka-2002'" in msg
    assert all(repr(name) in msg for name in tyres.TYRE_MODELS)


@pytest.mark.unit
def test_schema_refuses_an_unknown_tyre_model_in_one_line(fsae, tmp_path):
    """A vehicle file naming an unregistered model: one line naming the key, the value and
    the registered names; the parameters object refuses it naming the field."""
    text = (Path(__file__).resolve().parents[1] / "models" / "fsae.toml").read_text()
    f = tmp_path / "car.toml"
    f.write_text(text.replace("fz_min = 50.0", 'fz_min = 50.0\nmodel = "pacejka-2002"'))
    with pytest.raises(VehicleFileError) as exc:
        read_vehicle_file(f)
    line = next(ln for ln in str(exc.value).splitlines() if "pacejka-2002" in ln)
    assert "[tyre] model = 'pacejka-2002'" in line and "'magic-formula', 'fiala'" in line
    with pytest.raises(ValueError, match="tyre_model = 'pacejka-2002'"):
        fsae.replace(tyre_model="pacejka-2002")


# ------------------------------------------------------------------- a new model, registered
def _tanh_lateral(p, alpha, fz, peak=None):
    D = tyres.peak_force(p, fz) if peak is None else peak
    kappa = mul(tyres.cornering_stiffness(p, fz), alpha) / D
    return D, kappa, mul(D, tanh(kappa))


def _tanh_fraction(p, alpha, fz, D):
    return np.tanh(tyres.cornering_stiffness(p, fz) * np.asarray(alpha, float) / D)


def _tanh_slip(p, fz, D, phi):
    s = np.sin(np.asarray(phi, float))
    with np.errstate(divide="ignore"):
        return np.where(s < 1.0, D * np.arctanh(np.minimum(s, 1 - 1e-16)) / tyres.cornering_stiffness(p, fz), np.inf)


def _tanh_reserve(D, kappa, reserve):
    edge = math.atanh(math.sqrt(1.0 - reserve))      # slope Ca (1 - tanh^2) >= reserve Ca
    return [(sense, sub(mul(float(sense), kappa), edge)) for sense in (1, -1)]


TANH = tyres.TyreModel(name="tanh-test", description="D tanh(C_alpha alpha / D)",
                       lateral=_tanh_lateral, measure="kappa", peak_angle=False,
                       reserve_rows=_tanh_reserve, fraction=_tanh_fraction, slip_at=_tanh_slip,
                       measure_doc=("-", "C_alpha alpha / D of the $where tyre's tanh law.",
                                    "the sign of the slip angle", "tests/test_tyre_registry.py"))


@pytest.fixture
def tanh_car(fsae):
    """The FSAE car with the test's tyre registered (and removed after the test)."""
    tyres.register_tyre_model(TANH)
    try:
        yield fsae.replace(tyre_model=TANH.name, combined_slip="ellipse")
    finally:
        del tyres.TYRE_MODELS[TANH.name]


@pytest.mark.unit
def test_schema_takes_a_registered_model_and_its_rule(tanh_car, fsae, tmp_path):
    """The schema accepts the new name (parameters object and vehicle file), and applies
    the model's ``peak_angle = False``: with the friction ellipse as a constraint on pure
    slip it is refused, naming it."""
    assert tanh_car.tyre_model == "tanh-test"
    text = (Path(__file__).resolve().parents[1] / "models" / "fsae.toml").read_text()
    f = tmp_path / "car.toml"
    f.write_text(text.replace("fz_min = 50.0", 'fz_min = 50.0\nmodel = "tanh-test"\n'
                              'combined_slip = "ellipse"'))
    assert read_vehicle_file(f).tyre_model == "tanh-test"
    with pytest.raises(ValueError, match="model = 'tanh-test' needs"):
        fsae.replace(tyre_model="tanh-test")


@pytest.mark.unit
def test_car_equations_use_the_registered_model(tanh_car):
    r"""The full car's equations (floats, and the car functions of the full model's record
    :class:`~pyomo_lap.ocp.point_functions.CarFunctions`) give every tyre the new law: with no
    longitudinal force (combined-slip factor 1) :math:`f_{ijy} = D\tanh(C_\alpha\alpha_i/D)`
    at the tyre's load (closed form here), and the channel ``kappa_ij`` (its measure), no
    ``theta_ij``."""
    p = tanh_car
    q, qd, u = [0, 0.1, 0.02, -0.01, 0.002, 0.003], [18.0, 0.5, 0.3, 0, 0, 0], [0.0, 0.0, 0.04]
    z = [700.0, 650.0, 720.0, 690.0, 10.0, 900.0, 40.0]
    flat = TrackJoint(R=np.eye(3).tolist(), J=[1.0, 0, 0, 0, 0, 0], dJ=[0] * 6)
    ch = car_equations(p, build_chain(p), flat, q, qd, u, z).channels
    traced = car_functions(p).channels(np.r_[np.eye(3).ravel(), np.zeros(6)], q, qd, u, z)
    for k, w in enumerate(("11", "12", "21", "22")):
        fz, alpha = z[k], ch[f"alpha_{w[0]}"]
        D = _peak(p, fz)
        expected = D * math.tanh(_c_alpha(p, fz) * alpha / D)
        assert ch[f"f_{w}y"] == pytest.approx(expected, rel=1e-12)
        assert traced[f"f_{w}y"] == pytest.approx(expected, rel=1e-9)
        assert ch[f"kappa_{w}"] == pytest.approx(_c_alpha(p, fz) * alpha / D, rel=1e-12)
        assert f"theta_{w}" not in ch and f"kappa_{w}" in traced
    assert abs(ch["alpha_1"]) > 0.01        # a slip angle where the law is far from linear


@pytest.mark.unit
def test_friction_envelope_uses_the_registered_model(tanh_car):
    r"""The GG diagram's envelope with the new tyre: its peak is reached only at an infinite
    slip angle, so in pure cornering (no tyre force along x: the directions at 90 and 270
    degrees from the point of zero tyre force) sharing one slip angle per axle costs
    nothing, and the envelope with ``shared_slip`` equals the one where every tyre reaches
    its own peak there; the Magic Formula car's is smaller (its lighter tyre peaks first).
    Elsewhere the ellipse leaves each tyre its own share and the shared slip angle costs
    grip. The envelope's car carries the model, also from a dict of parameters."""
    from pyomo_lap.vehicle.envelope import _envelope_car, friction_envelope
    assert _envelope_car(tanh_car, 20.0).tyre is TANH
    n = 61
    lateral = [15, 45]
    assert np.linspace(0.0, 2 * np.pi, n)[lateral] == pytest.approx([np.pi / 2, 3 * np.pi / 2])
    shared = friction_envelope(tanh_car, 20.0, n=n)
    own = friction_envelope(tanh_car, 20.0, n=n, shared_slip=False)
    np.testing.assert_allclose(shared["a_y"][lateral], own["a_y"][lateral], rtol=1e-9)
    assert np.all(np.abs(shared["a_y"]) <= np.abs(own["a_y"]) * (1 + 1e-9))
    mf = tanh_car.replace(tyre_model="magic-formula", combined_slip="constraint")
    mf_shared = friction_envelope(mf, 20.0, n=n)
    assert abs(mf_shared["a_y"][15]) < abs(own["a_y"][15]) * (1 - 1e-4)
    as_dict = {**tanh_car.as_dict(), "tyre_model": TANH.name}
    assert friction_envelope(as_dict, 20.0, n=n)["a_y"] == pytest.approx(shared["a_y"])


@pytest.mark.unit
def test_no_module_compares_with_a_tyre_model_name():
    """Outside vehicle/tyres.py no module branches on a tyre model's name (a comparison with
    a registered name), so a new model needs no edit elsewhere; any module that does fails
    the test."""
    names = set(tyres.TYRE_MODELS)
    found = set()
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel == "vehicle/tyres.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                    isinstance(x, ast.Constant) and x.value in names
                    for x in [node.left, *node.comparators]):
                found.add(rel)
    assert not found, sorted(found)
