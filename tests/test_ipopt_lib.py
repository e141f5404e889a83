"""Tests of :mod:`pyomo_lap.solvers.lap.ipopt_c`, the ctypes binding to IPOPT's C interface.

The test problem is HS071, the example of IPOPT's documentation::

    min  x1 x4 (x1 + x2 + x3) + x3
    s.t. x1 x2 x3 x4 >= 25,  x1^2 + x2^2 + x3^2 + x4^2 = 40,  1 <= x <= 5,  x0 = (1, 5, 5, 1)

Reference values (solution, multipliers) are checked against conditions computed here
independently of the callbacks given to IPOPT: derivatives by the complex-step method, and
the sign of ``mult_g`` by the sensitivity of the optimal value to a constraint bound
(re-solving with a perturbed bound). Each solve takes a few milliseconds.
"""
from __future__ import annotations

import signal

import numpy as np
import pytest

from pyomo_lap.solvers.lap import ipopt_c, ipopt_problem
from pyomo_lap.solvers.lap.ipopt_problem import IpoptProblem

pytestmark = pytest.mark.component

X_STAR = np.array([1.00000000, 4.74299963, 3.82114998, 1.37940829])
F_STAR = 17.0140173
X0 = np.array([1.0, 5.0, 5.0, 1.0])
QUIET = {"print_level": 0, "sb": "yes"}


# --------------------------------------------------------------------------- the problem
def f_hs071(x):
    """The objective of Hock-Schittkowski problem 71."""
    return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]


def g_hs071(x):
    """The two constraints of Hock-Schittkowski problem 71."""
    return np.array([x[0] * x[1] * x[2] * x[3], x[0] ** 2 + x[1] ** 2 + x[2] ** 2 + x[3] ** 2])


JAC_ROWS = np.repeat([0, 1], 4)
JAC_COLS = np.tile(np.arange(4), 2)
HESS_ROWS, HESS_COLS = np.tril_indices(4)


class HS071:
    """Callbacks of HS071, with hooks to make them fail on a given call."""

    def __init__(self):
        self.calls = {"f": 0, "grad": 0, "g": 0, "jac": 0, "hess": 0}
        self.fail = {}          # callback name -> (call number, exception to raise)
        self.after = {}         # callback name -> (call number, function run before returning)

    def _hook(self, name):
        self.calls[name] += 1
        if name in self.fail and self.calls[name] == self.fail[name][0]:
            raise self.fail[name][1]

    def _after(self, name):
        if name in self.after and self.calls[name] == self.after[name][0]:
            self.after[name][1]()

    def objective(self, x):
        """The objective at ``x`` (the hook sees the call)."""
        self._hook("f")
        return f_hs071(x)

    def gradient(self, x, out):
        """The objective's gradient at ``x`` into ``out``."""
        self._hook("grad")
        out[0] = x[3] * (2 * x[0] + x[1] + x[2])
        out[1] = x[0] * x[3]
        out[2] = x[0] * x[3] + 1.0
        out[3] = x[0] * (x[0] + x[1] + x[2])
        self._after("grad")

    def constraints(self, x, out):
        """The constraints at ``x`` into ``out``."""
        self._hook("g")
        out[:] = g_hs071(x)

    def jacobian(self, x, out):
        """The constraints' Jacobian values at ``x`` into ``out``."""
        self._hook("jac")
        out[:4] = [x[1] * x[2] * x[3], x[0] * x[2] * x[3], x[0] * x[1] * x[3], x[0] * x[1] * x[2]]
        out[4:] = 2.0 * x

    def hessian(self, x, obj_factor, lam, out):
        """The Lagrangian's Hessian values (lower triangle) at ``x`` into ``out``."""
        self._hook("hess")
        H = obj_factor * np.array([[2 * x[3], 0, 0, 0],
                                   [x[3], 0, 0, 0],
                                   [x[3], 0, 0, 0],
                                   [2 * x[0] + x[1] + x[2], x[0], x[0], 0]])
        H += lam[0] * np.array([[0, 0, 0, 0],
                                [x[2] * x[3], 0, 0, 0],
                                [x[1] * x[3], x[0] * x[3], 0, 0],
                                [x[1] * x[2], x[0] * x[2], x[0] * x[1], 0]])
        H += lam[1] * 2.0 * np.eye(4)
        out[:] = H[HESS_ROWS, HESS_COLS]


def make_problem(cb=None, g_lb=(25.0, 40.0), options=QUIET, **kw):
    """An IpoptProblem of HS071 with the callbacks ``cb`` and the given options."""
    cb = cb or HS071()
    prob = IpoptProblem(4, 2, np.ones(4), np.full(4, 5.0), list(g_lb), [np.inf, 40.0],
                        JAC_ROWS, JAC_COLS, HESS_ROWS, HESS_COLS, objective=cb.objective,
                        gradient=cb.gradient, constraints=cb.constraints, jacobian=cb.jacobian,
                        hessian=cb.hessian, **kw)
    for name, value in options.items():
        prob.add_option(name, value)
    return prob


@pytest.fixture
def unraisable(monkeypatch):
    """Exceptions that Python could only report as "Exception ignored in ..." (e.g. one that
    escaped a ctypes callback)."""
    seen = []
    monkeypatch.setattr("sys.unraisablehook", seen.append)
    return seen


@pytest.fixture
def free_calls(monkeypatch):
    """Count the calls of FreeIpoptProblem."""
    calls = []
    original = ipopt_c._free_problem

    def counting(lib, handle):
        calls.append(handle)
        original(lib, handle)

    monkeypatch.setattr(ipopt_c, "_free_problem", counting)
    return calls


# --------------------------------------------------------------------------- independent checks
def complex_step_jacobian(fun, x, h=1e-30):
    """The derivative d fun / dx (rows: outputs) by the complex step, exact to rounding for analytic fun."""
    x = np.asarray(x, dtype=complex)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size, dtype=complex)
        e[j] = 1j * h
        cols.append(np.atleast_1d(fun(x + e)).imag / h)
    return np.array(cols).T


def kkt_residual(res):
    """The stationarity residual of the KKT conditions at a result, in IPOPT's sign
    conventions (derivatives by the complex step)."""
    grad_f = complex_step_jacobian(f_hs071, res.x)[0]
    jac = complex_step_jacobian(g_hs071, res.x)
    return grad_f + jac.T @ res.mult_g - res.mult_x_L + res.mult_x_U


def check_solution(res):
    """Assert that a result is HS071's known optimum, with KKT residuals near zero."""
    assert res.status == 0 and res.status_name == "Solve_Succeeded" and res.success
    np.testing.assert_allclose(res.x, X_STAR, atol=1e-6, rtol=0)
    assert abs(res.obj - F_STAR) < 1e-6
    np.testing.assert_allclose(res.g, g_hs071(res.x), atol=1e-9, rtol=0)
    np.testing.assert_allclose(kkt_residual(res), 0.0, atol=1e-6)


# --------------------------------------------------------------------------- tests
def test_hs071_solution_and_multiplier_convention():
    """HS071: the known solution, and IPOPT's sign convention of the multipliers."""
    cb = HS071()
    res = make_problem(cb).solve(X0)
    check_solution(res)
    # IPOPT's convention: L = f + g^T lambda, grad f + J^T lambda - z_L + z_U = 0, z_L, z_U >= 0.
    # The active *lower* bound g1 >= 25 has lambda_1 <= 0; x1 = 1 is at its lower bound (z_L > 0).
    assert res.mult_g[0] < -0.5 and res.mult_x_L[0] > 1.0
    assert np.all(res.mult_x_L >= 0) and np.all(res.mult_x_U >= 0)
    np.testing.assert_allclose(res.mult_x_U, 0.0, atol=1e-8)
    np.testing.assert_allclose(res.mult_x_L[1:], 0.0, atol=1e-8)
    # sensitivity: raising the active lower bound 25 by d changes f* by -lambda_1 d
    d = 1e-4
    up = make_problem(g_lb=(25.0 + d, 40.0)).solve(X0)
    down = make_problem(g_lb=(25.0 - d, 40.0)).solve(X0)
    assert up.success and down.success
    dfdb = (up.obj - down.obj) / (2 * d)
    assert abs(dfdb - (-res.mult_g[0])) < 1e-5
    assert 0 < res.iterations < 20
    assert cb.calls["hess"] > 0


def test_callbacks_get_zero_copy_views_and_read_only_x():
    """Callbacks get zero copy views and read only x."""
    seen = []

    class Spy(HS071):
        def objective(self, x):
            seen.append((x.flags.writeable, x.flags.owndata, x.dtype, x.shape))
            with pytest.raises(ValueError):
                x[0] = 3.0          # IPOPT's iterate must not be modified
            return super().objective(x)

    res = make_problem(Spy()).solve(X0)
    check_solution(res)
    assert seen and all(s == (False, False, np.float64, (4,)) for s in seen)


def test_user_scaling_gives_same_unscaled_solution_and_multipliers():
    """User scaling gives same unscaled solution and multipliers."""
    ref = make_problem().solve(X0)
    x_scaling = np.array([10.0, 0.1, 2.0, 0.5])
    g_scaling = np.array([0.01, 3.0])
    scaled_x = []

    def intermediate(info):
        if info["iter_count"] == 0:
            scaled_x.append((prob.current_iterate(scaled=True)["x"],
                             prob.current_iterate(scaled=False)["x"]))

    prob = make_problem(intermediate=intermediate)
    prob.set_scaling(2.0, x_scaling, g_scaling)
    prob.add_option("nlp_scaling_method", "user-scaling")
    res = prob.solve(X0)
    check_solution(res)
    np.testing.assert_allclose(res.mult_g, ref.mult_g, atol=1e-6)
    np.testing.assert_allclose(res.mult_x_L, ref.mult_x_L, atol=1e-6)
    np.testing.assert_allclose(res.mult_x_U, ref.mult_x_U, atol=1e-6)
    # IPOPT did work on the scaled variables
    (xs, xu), = scaled_x
    np.testing.assert_allclose(xs, x_scaling * xu, rtol=1e-12)
    with pytest.raises(ValueError, match="x_scaling"):
        prob.set_scaling(1.0, np.zeros(4), None)


def test_refused_option_raises_value_error_naming_it():
    """Refused option raises value error naming it."""
    prob = make_problem()
    with pytest.raises(ValueError, match="'no_such_option'"):
        prob.add_option("no_such_option", 1)
    with pytest.raises(ValueError, match="'max_iter'.*not a valid setting"):
        prob.add_option("max_iter", -3)
    with pytest.raises(ValueError, match="'mu_strategy'"):
        prob.add_option("mu_strategy", "no_such_strategy")
    with pytest.raises(ValueError, match="'tol'"):
        prob.add_option("tol", "not a number")
    with pytest.raises(TypeError):
        prob.add_option("tol", [1e-8])
    # an int for a Number option, a float for an Integer option, a bool for a yes/no option
    prob.add_option("tol", 1)
    prob.add_option("max_iter", 50.0)
    prob.add_option("warm_start_init_point", False)
    assert prob.options["tol"] == 1.0 and prob.options["max_iter"] == 50
    assert prob.options["warm_start_init_point"] == "no"
    prob.add_option("tol", 1e-8)
    check_solution(prob.solve(X0))


def test_exception_in_callback_is_reraised_and_problem_freed(free_calls, unraisable):
    """Exception in callback is reraised and problem freed."""
    cb = HS071()
    boom = RuntimeError("constraint evaluation failed")
    cb.fail["g"] = (3, boom)
    prob = make_problem(cb)
    with pytest.raises(RuntimeError) as excinfo:
        prob.solve(X0)
    assert excinfo.value is boom
    partial = excinfo.value.ipopt_result
    assert isinstance(partial, ipopt_problem.IpoptResult) and not partial.interrupted
    assert cb.calls["g"] == 3   # no user callback was called after the failure
    assert not partial.success
    assert len(free_calls) == 1 and unraisable == []
    # the object is usable again
    cb.fail.clear()
    check_solution(prob.solve(X0))
    assert len(free_calls) == 2


def test_intermediate_callback_false_stops_ipopt():
    """Intermediate callback false stops ipopt."""
    infos = []

    def stop_at_3(info):
        infos.append(info)
        return info["iter_count"] < 3

    res = make_problem(intermediate=stop_at_3).solve(X0)
    assert res.status == 5 and res.status_name == "User_Requested_Stop"
    assert res.iterations == 3 and not res.interrupted and not res.success
    assert [i["iter_count"] for i in infos] == [0, 1, 2, 3]
    assert set(infos[-1]) == {"alg_mod", "iter_count", "obj_value", "inf_pr", "inf_du", "mu",
                              "d_norm", "regularization_size", "alpha_du", "alpha_pr",
                              "ls_trials", "inf_pr_unscaled"}
    # the result holds the last iterate, not the starting point
    assert not np.allclose(res.x, X0) and abs(res.obj - f_hs071(res.x)) < 1e-12


def _violation(x):
    """HS071's constraint violation at x (max-norm over the rows and the bounds), computed
    here from the problem's definition."""
    g = g_hs071(x)
    return max(max(0.0, 25.0 - g[0]), abs(g[1] - 40.0), *np.maximum(0.0, 1.0 - x),
               *np.maximum(0.0, x - 5.0))


def test_intermediate_values_match_the_solve_and_the_unscaled_violation():
    """The intermediate callback sees every iteration once, in order, up to the count and the
    objective the solve returns; ``inf_pr_unscaled`` is the violation of the unscaled rows at
    the iterate (computed here), also with user scaling, where IPOPT's ``inf_pr`` is the
    scaled problem's."""
    infos, violations = [], []
    prob = None

    def record(info):
        infos.append(info)
        violations.append(_violation(prob.current_iterate()["x"]))

    prob = make_problem(intermediate=record)
    prob.set_scaling(1.0, g_scaling=[1e-2, 1e-2])
    prob.add_option("nlp_scaling_method", "user-scaling")
    res = prob.solve(X0)
    check_solution(res)
    iters = [i["iter_count"] for i in infos]
    assert iters == list(range(res.iterations + 1)) and res.iterations >= 5
    assert infos[-1]["obj_value"] == pytest.approx(res.obj, abs=1e-12)
    assert abs(infos[-1]["obj_value"] - F_STAR) < 1e-6
    unscaled = np.array([i["inf_pr_unscaled"] for i in infos])
    np.testing.assert_allclose(unscaled, violations, rtol=1e-9, atol=1e-12)
    scaled = np.array([i["inf_pr"] for i in infos])
    big = unscaled > 1e-3                 # the rows are scaled by 1/100: so is IPOPT's inf_pr
    assert big.sum() >= 2 and np.all(scaled[big] < 0.05 * unscaled[big])


def test_a_stopped_solve_returns_the_iterate_of_its_last_iteration():
    """Stopped by the callback (as on Ctrl-C), the solve returns the iterate IPOPT held at
    that iteration (``GetIpoptCurrentIterate`` in the callback), not the start."""
    seen = {}
    prob = None

    def stop_at_4(info):
        seen[info["iter_count"]] = prob.current_iterate()["x"]
        return info["iter_count"] < 4

    prob = make_problem(intermediate=stop_at_4)
    res = prob.solve(X0)
    assert res.status_name == "User_Requested_Stop" and res.iterations == 4
    np.testing.assert_array_equal(res.x, seen[4])
    assert not np.allclose(seen[4], seen[3])


@pytest.mark.parametrize("call", [2, 6])
def test_keyboard_interrupt_in_callback(free_calls, unraisable, call):
    """Keyboard interrupt in callback."""
    cb = HS071()
    cb.fail["grad"] = (call, KeyboardInterrupt())
    prob = make_problem(cb)
    with pytest.raises(KeyboardInterrupt) as excinfo:
        prob.solve(X0)
    partial = excinfo.value.ipopt_result
    # the failed evaluation makes IPOPT stop at once (Invalid_Number_Detected)
    assert partial.interrupted and not partial.success and partial.status in ipopt_c.RETURN_STATUS
    assert cb.calls["grad"] == call and sum(cb.calls.values()) < 6 * call
    assert len(free_calls) == 1 and unraisable == []
    if call > 2:   # past the starting point: the last iterate, not x0
        assert partial.iterations >= 1 and not np.allclose(partial.x, X0, atol=0.1)
    cb.fail.clear()
    check_solution(prob.solve(X0))


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="needs Python's default SIGINT handler")
def test_sigint_during_solve_stops_cleanly(free_calls, unraisable):
    """A real Ctrl-C (SIGINT) arriving during a callback: the callback is not interrupted
    (the temporary handler only sets a flag), IPOPT stops at its next iteration."""
    cb = HS071()
    finished = []

    def ctrl_c():
        signal.raise_signal(signal.SIGINT)
        finished.append(True)      # not reached if KeyboardInterrupt is raised right away

    cb.after["grad"] = (5, ctrl_c)
    with pytest.raises(KeyboardInterrupt) as excinfo:
        make_problem(cb).solve(X0)
    assert finished == [True]
    partial = excinfo.value.ipopt_result
    # evaluations went on normally; IPOPT stopped at the next iteration as if asked to
    assert partial.interrupted and partial.status == 5 and partial.iterations >= 1
    assert cb.calls["grad"] == 5 and len(free_calls) == 1 and unraisable == []
    assert not np.allclose(partial.x, X0, atol=0.1)
    assert abs(partial.obj - f_hs071(partial.x)) < 1e-12
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_warm_start_from_previous_solution():
    """Warm start from previous solution."""
    prob = make_problem()
    first = prob.solve(X0)
    for name, value in {"warm_start_init_point": "yes", "warm_start_bound_push": 1e-9,
                        "warm_start_mult_bound_push": 1e-9, "mu_init": 1e-8}.items():
        prob.add_option(name, value)
    again = prob.solve(first.x, first.mult_g, first.mult_x_L, first.mult_x_U)
    check_solution(again)
    assert again.iterations < first.iterations


def test_ipopt_opt_file_overrides_options_unless_disabled(tmp_path, monkeypatch):
    """Ipopt opt file overrides options unless disabled."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ipopt.opt").write_text("max_iter 2\n")
    prob = make_problem()
    prob.add_option("max_iter", 100)
    res = prob.solve(X0)
    assert res.status_name == "Maximum_Iterations_Exceeded" and res.iterations == 2
    prob.add_option("option_file_name", "")
    check_solution(prob.solve(X0))


def test_ipopt_version():
    """The library is IPOPT 3.14, and its return codes are those of IpReturnCodes_inc.h."""
    assert ipopt_c.ipopt_version()[:2] == (3, 14)
    assert ipopt_c.RETURN_STATUS[5] == "User_Requested_Stop"
    assert ipopt_c.STATUS_CODE["Maximum_WallTime_Exceeded"] == -5


def test_output_file_has_iteration_log_and_console_is_quiet(tmp_path, capfd):
    """Output file has iteration log and console is quiet."""
    log = tmp_path / "ipopt.log"
    prob = make_problem()
    prob.set_output_file(log, print_level=5)
    check_solution(prob.solve(X0))
    text = log.read_text()
    assert "EXIT: Optimal Solution Found." in text and "iter    objective" in text
    out, _err = capfd.readouterr()
    assert "EXIT:" not in out and "Ipopt" not in out
    with pytest.raises(ValueError):
        prob.set_output_file(log, print_level=13)
    with pytest.raises(FileNotFoundError):
        prob.set_output_file(tmp_path / "missing" / "x.log")


def test_limited_memory_hessian_and_unconstrained_problem():
    """Limited memory hessian and unconstrained problem."""
    # Rosenbrock, m = 0, no Hessian: L-BFGS
    def f(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

    def grad(x, out):
        out[0] = -2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2)
        out[1] = 200 * (x[1] - x[0] ** 2)

    prob = IpoptProblem(2, 0, [-np.inf] * 2, [np.inf] * 2, [], [], [], [], [], [],
                        objective=f, gradient=grad)
    prob.add_option("print_level", 0)
    prob.add_option("sb", "yes")
    assert prob.options["hessian_approximation"] == "limited-memory"
    res = prob.solve([-1.2, 1.0])
    assert res.success and res.g.shape == (0,) and res.mult_g.shape == (0,)
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-6)


def test_problem_definition_is_checked():
    """Problem definition is checked."""
    cb = HS071()
    kw = dict(objective=cb.objective, gradient=cb.gradient, constraints=cb.constraints,
              jacobian=cb.jacobian, hessian=cb.hessian)
    args = [4, 2, np.ones(4), np.full(4, 5.0), [25, 40], [np.inf, 40], JAC_ROWS, JAC_COLS]
    with pytest.raises(ValueError, match="upper triangle"):
        IpoptProblem(*args, HESS_COLS, HESS_ROWS, **kw)
    with pytest.raises(ValueError, match="jac_cols"):
        IpoptProblem(*args[:7], JAC_COLS + 1, HESS_ROWS, HESS_COLS, **kw)
    with pytest.raises(ValueError, match="x_lb"):
        IpoptProblem(4, 2, np.ones(3), *args[3:], HESS_ROWS, HESS_COLS, **kw)
    with pytest.raises(ValueError, match=r"bounds of x\[2\]"):
        IpoptProblem(4, 2, [1, 1, 6, 1], *args[3:], HESS_ROWS, HESS_COLS, **kw)
    with pytest.raises(ValueError, match="at least one entry when m > 0"):
        IpoptProblem(*args[:6], [], [], HESS_ROWS, HESS_COLS, **kw)
    with pytest.raises(ValueError, match="x0"):
        make_problem().solve([1.0, 2.0])


def test_library_lookup(monkeypatch, tmp_path):
    """Library lookup."""
    monkeypatch.delenv(ipopt_c.ENV_VAR, raising=False)
    found = ipopt_c.find_ipopt_library()
    assert found.is_file() and "ipopt" in found.name
    monkeypatch.setenv(ipopt_c.ENV_VAR, str(found))
    assert ipopt_c.find_ipopt_library() == found
    monkeypatch.setenv(ipopt_c.ENV_VAR, str(tmp_path / "nothing.so"))
    with pytest.raises(ipopt_c.IpoptLibraryNotFound, match=ipopt_c.ENV_VAR):
        ipopt_c.find_ipopt_library()
    monkeypatch.delenv(ipopt_c.ENV_VAR)
    monkeypatch.setattr(ipopt_c, "_casadi_library", lambda: (None, "not installed"))
    monkeypatch.setattr(ipopt_c.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(ipopt_c.IpoptLibraryNotFound, match="pip install casadi") as excinfo:
        ipopt_c.find_ipopt_library()
    assert isinstance(excinfo.value, RuntimeError) and ipopt_c.ENV_VAR in str(excinfo.value)
    not_ipopt = tmp_path / "libnot.so"
    not_ipopt.write_bytes(b"not a library")
    with pytest.raises(ipopt_c.IpoptLibraryNotFound, match="could not be loaded"):
        ipopt_c.load_ipopt_library(not_ipopt)
