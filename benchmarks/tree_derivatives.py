"""Derivatives of the inverse dynamics of a kinematic tree: analytic recursion or CasADi AD?

Usage (from the repository root, with the virtual environment's Python; about a minute)::

    python benchmarks/tree_derivatives.py
    python benchmarks/tree_derivatives.py --sizes 6 12 --repeat 5

For random trees of ``n`` revolute/prismatic joints (generic axes and placements, seeded;
a serial chain and a branched tree per size) it computes ``dtau/dq`` and ``dtau/dqd`` of
:func:`pyomo_lap.spatial.dynamics.rnea` five ways and prints the time per evaluation:

``analytic, floats``
    :func:`pyomo_lap.spatial.derivatives.rnea_derivatives` on Python floats (one nominal pass and one
    tangent pass per unit direction, the differentiated Kim Table 2).
``analytic, SX``
    the same recursion run once on CasADi ``SX`` symbols, then evaluated as a CasADi
    ``Function`` (virtual machine, no JIT); ``build`` is the symbolic run plus the Function.
``CasADi AD``
    ``casadi.jacobian`` of the ``SX`` expression of :func:`pyomo_lap.spatial.dynamics.rnea` with respect
    to ``q`` and ``qd``, evaluated the same way; ``build`` includes the symbolic RNEA.
``Pinocchio``
    ``pinocchio.computeRNEADerivatives`` (C++, a reference of what compiled code does; only
    with the ``pin`` package of the test extra).
``finite diff``
    central differences of :func:`pyomo_lap.spatial.dynamics.rnea` on floats (2 x 2 nv RNEA calls).

``instr`` is the number of instructions of the CasADi Function (its evaluation cost), and
``max|diff|`` the largest difference to the analytic float result. Times are the best of
``--repeat`` runs of a loop of calls, per call.

Measured when written (2-core shared machine, CasADi 3.7, Pinocchio 4.1; times vary by
+-30 % from run to run there):

=========  ==  ================  ======  ========  =======
tree       nv  method            build   per call  instr
=========  ==  ================  ======  ========  =======
chain       6  analytic, floats            13 ms
chain       6  analytic, SX      0.32 s    116 us    13315
chain       6  CasADi AD         0.04 s    170 us    13568
chain       6  Pinocchio                   4.3 us
chain       6  finite diff                  46 ms
chain      24  analytic, floats           148 ms
chain      24  analytic, SX      4.1 s     986 us   188791
chain      24  CasADi AD         0.29 s    664 us   188672
chain      24  Pinocchio                    17 us
chain      24  finite diff                 939 ms
=========  ==  ================  ======  ========  =======

On CasADi symbols the analytic recursion buys nothing: AD of the RNEA graph gives a graph of
the same size (instruction counts within 1-4 %), evaluates as fast (within the timing noise)
and builds 8-15 times faster. The recursion is the derivative for the float and Pyomo
evaluations (3-6 times faster than central differences on floats, and exact) and an
independent check of either.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import casadi as ca

from pyomo_lap.spatial import derivatives as der
from pyomo_lap.spatial import dynamics as dyn
from pyomo_lap.spatial import tree as tr

try:
    import pinocchio as pin
except ImportError:                       # pin is a test-only dependency
    pin = None


def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_tree(rng, n, branched):
    parent = [i - 1 if not branched or i % 3 else int(rng.integers(-1, i)) for i in range(n)]
    parent[0] = -1
    jtype = [tr.REVOLUTE if rng.random() < 0.7 else tr.PRISMATIC for _ in range(n)]
    axis = [a / np.linalg.norm(a) for a in rng.normal(size=(n, 3))]
    placement = [(random_rotation(rng), rng.normal(size=3) * 0.3) for _ in range(n)]
    inertia = []
    for _ in range(n):
        m, c = rng.uniform(0.5, 3.0), rng.normal(size=3) * 0.1
        d = rng.uniform(0.05, 0.5, 3)
        R = random_rotation(rng)
        Ic = R @ np.diag([d[1] + d[2], d[0] + d[2], d[0] + d[1]]) @ R.T
        C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        inertia.append(np.block([[m * np.eye(3), -m * C], [m * C, Ic - m * C @ C]]))
    return tr.KinematicTree(parent=parent, joint_type=jtype, axis=axis, placement=placement,
                            inertia=inertia, gravity=(0.0, 0.0, -9.81))


def pinocchio_model(t):
    """Pinocchio model of a tree whose bodies are in depth-first order (checked)."""
    model = pin.Model()
    model.gravity = pin.Motion(np.array(t.gravity), np.zeros(3))
    for i in range(t.n_bodies):
        R, p = t.placement[i]
        a = np.array(t.axis[i])
        jm = (pin.JointModelRevoluteUnaligned(a) if t.joint_type[i] == tr.REVOLUTE
              else pin.JointModelPrismaticUnaligned(a))
        j = model.addJoint(t.parent[i] + 1, jm, pin.SE3(np.array(R), np.array(p)), f"j{i}")
        I = np.array(t.inertia[i])
        m = I[0, 0]
        c = np.array([I[5, 1], I[3, 2], I[4, 0]]) / m
        C = pin.skew(c)
        model.appendBodyToJoint(j, pin.Inertia(m, c, I[3:, 3:] + m * C @ C), pin.SE3.Identity())
    return model


def is_depth_first(t):
    stack = []
    for i, p in enumerate(t.parent):
        while stack and stack[-1] != p:
            stack.pop()
        if p >= 0 and not stack:
            return False
        stack.append(i)
    return True


def best_time(f, repeat, min_time=0.2):
    f()
    loops = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(loops):
            f()
        dt = time.perf_counter() - t0
        if dt > min_time or loops > 1_000_000:
            break
        loops *= 4
    best = dt / loops
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(loops):
            f()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


def sx_function(name, inputs, outputs):
    return ca.Function(name, inputs, [ca.vertcat(*[ca.SX(x) for x in outputs])])


def run(t, label, repeat):
    nv = t.nv
    rng = np.random.default_rng(nv)
    q, qd, qdd = rng.normal(size=nv), rng.normal(size=nv), rng.normal(size=nv)
    ref = np.concatenate([np.ravel(x) for x in der.rnea_derivatives(t, list(q), list(qd),
                                                                     list(qdd))])
    rows = []

    def row(method, build, per_call, instr, value):
        rows.append((label, nv, method, build, per_call, instr,
                     float(np.max(np.abs(np.ravel(value) - ref)))))

    # analytic, floats
    per = best_time(lambda: der.rnea_derivatives(t, list(q), list(qd), list(qdd)), repeat)
    row("analytic, floats", None, per, None, ref)

    Q, QD, A = (ca.SX.sym(s, nv) for s in ("q", "qd", "a"))
    qs, qds, qdds = ([X[i] for i in range(nv)] for X in (Q, QD, A))
    # analytic, SX
    t0 = time.perf_counter()
    dq, dqd = der.rnea_derivatives(t, qs, qds, qdds)
    f_an = sx_function("analytic", [Q, QD, A], [x for r in dq for x in r]
                       + [x for r in dqd for x in r])
    build = time.perf_counter() - t0
    per = best_time(lambda: f_an(q, qd, qdd), repeat)
    # row-major dq then dqd, as ref
    row("analytic, SX", build, per, f_an.n_instructions(), np.array(f_an(q, qd, qdd)))

    # CasADi AD
    t0 = time.perf_counter()
    tau = ca.vertcat(*[ca.SX(x) for x in dyn.rnea(t, qs, qds, qdds)])
    f_ad = ca.Function("ad", [Q, QD, A], [ca.jacobian(tau, Q), ca.jacobian(tau, QD)])
    build = time.perf_counter() - t0
    per = best_time(lambda: f_ad(q, qd, qdd), repeat)
    Jq, Jqd = (np.array(x) for x in f_ad(q, qd, qdd))
    row("CasADi AD", build, per, f_ad.n_instructions(),
        np.concatenate([Jq.ravel(), Jqd.ravel()]))

    # Pinocchio
    if pin is not None and is_depth_first(t):
        model = pinocchio_model(t)
        data = model.createData()
        per = best_time(lambda: pin.computeRNEADerivatives(model, data, q, qd, qdd), repeat)
        d_q, d_v, _ = pin.computeRNEADerivatives(model, data, q, qd, qdd)
        row("Pinocchio", None, per, None, np.concatenate([d_q.ravel(), d_v.ravel()]))

    # finite differences
    def fd():
        h = 1e-6
        blocks = []
        for k in (0, 1):                        # d/dq, then d/dqd
            cols = []
            for j in range(nv):
                plus, minus = [q.copy(), qd.copy()], [q.copy(), qd.copy()]
                plus[k][j] += h
                minus[k][j] -= h
                cols.append((np.array(dyn.rnea(t, list(plus[0]), list(plus[1]), list(qdd)))
                             - np.array(dyn.rnea(t, list(minus[0]), list(minus[1]),
                                                list(qdd)))) / (2 * h))
            blocks.append(np.array(cols).T.ravel())
        return np.concatenate(blocks)

    per = best_time(fd, repeat, min_time=0.1)
    row("finite diff", None, per, None, fd())
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[6, 12, 24])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"{'tree':<10}{'nv':>4}  {'method':<18}{'build s':>9}{'per call':>12}"
          f"{'instr':>9}{'max|diff|':>11}")
    for n in args.sizes:
        for branched in (False, True):
            t = random_tree(np.random.default_rng(n + 100 * branched), n, branched)
            label = "branched" if branched else "chain"
            for r in run(t, label, args.repeat):
                lab, nv, method, build, per, instr, diff = r
                b = f"{build:9.3f}" if build is not None else f"{'':>9}"
                i = f"{instr:9d}" if instr is not None else f"{'':>9}"
                unit = (f"{per * 1e6:9.1f} us" if per < 1e-3 else f"{per * 1e3:9.2f} ms")
                print(f"{lab:<10}{nv:>4}  {method:<18}{b}{unit:>12}{i}{diff:11.1e}")
        print()


if __name__ == "__main__":
    main()
