"""Solving a built model: :func:`.solve.solve_model` (:mod:`.solve`) with any Pyomo solver and
its report (:mod:`.report`), and the fast path ``lap_ipopt`` (the subpackage :mod:`.lap`: the
model as an NLP of compiled functions, IPOPT's C interface, the Pyomo solver); Pyomo → CasADi
(:mod:`.casadi_expr`), the CasADi twin used by the benchmarks (:mod:`.casadi_ocp`), the linear
solvers IPOPT can load (:mod:`.linear_solvers`), warm re-solves (:mod:`.warm_start`). A
pyomo_lap model's car is found through Pyomo's component tree (:mod:`.lap.car_blocks`): nothing
here imports the ocp layer (``util`` and ``vehicle`` only).
"""
