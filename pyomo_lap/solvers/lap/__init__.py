"""The fast solver ``lap_ipopt``.

IPOPT's C library on a Pyomo model whose pyomo_lap car is evaluated by compiled CasADi point
functions, split the way Pyomo's PyNumero splits an NLP, its C interface and a solver:

* the model as an NLP: :mod:`.nlp` (:class:`~.nlp.LapNLP`: bounds, sparsity, callbacks; the
  car's recorded rows found through Pyomo's component tree, :mod:`.car_blocks`), :mod:`.compiled`
  (the per-point functions compiled and cached, :mod:`.precompile` ahead of the first solve),
  :mod:`.checks` (the recorded rows and the compiled libraries checked before a solve, the
  fall-back), :mod:`.reduced` (the presolve: pyomo.dae's derivative variables eliminated);
* IPOPT's C interface: :mod:`.ipopt_c` (the ctypes binding), :mod:`.ipopt_problem` (a problem
  with its callbacks), :mod:`.ipopt_options` (the options' documentation and checks);
* the solver: :mod:`.solver` (``LapIpopt``, registered with Pyomo's ``SolverFactory`` as
  ``lap_ipopt`` when :mod:`pyomo_lap` is imported).
"""
