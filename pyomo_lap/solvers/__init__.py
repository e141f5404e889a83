"""Solving a built model: :func:`.solve.solve_model` with any Pyomo solver, and the fast path
``lap_ipopt`` (:mod:`.lap_solver`: the model as an NLP of compiled functions, :mod:`.lap_nlp`;
IPOPT's C interface, :mod:`.ipopt_lib`; Pyomo → CasADi, :mod:`.casadi_expr`), and the CasADi
twin used by the benchmarks (:mod:`.casadi_ocp`). A pyomo_lap model's car is found through
Pyomo's component tree (:mod:`.car_blocks`): nothing here imports the ocp layer (``util`` and
``vehicle`` only).
"""
