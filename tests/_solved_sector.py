"""A short solved sector shared by the replay, defect and single-track tests (solved once per
test session; a test solve takes seconds)."""
import functools

START, LENGTH, NFE = 1200.0, 160.0, 16
"""Nordschleife 1200-1360 m: a straight, then a corner taken at the friction limit."""


@functools.lru_cache(maxsize=None)
def solved(model: str = "full"):
    """(track, vehicle, model, SolveReport, trajectory DataFrame) of the short sector."""
    from pyomo_lap import build_model, initialize_model, load_track, load_vehicle, solve_model
    from pyomo_lap.results.table import trajectory_dataframe
    tr = load_track("nordschleife")
    p = load_vehicle("fsae")
    m = build_model(tr, p, start=START, length=LENGTH, nfe=NFE, ncp=3, model=model)
    initialize_model(m)
    rep = solve_model(m)
    assert rep.ok, rep.termination_condition
    return tr, p, m, rep, trajectory_dataframe(m)
