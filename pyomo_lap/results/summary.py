"""``summary.json`` typed: :class:`Summary`, what a solve says of its result (the result,
the solver's report, the problem, the inputs and their provenance, the channels' figures, the
self-check), read from a file or a dict in one place (:meth:`Summary.from_dict`,
:meth:`Summary.read`) and turned back into JSON's dict in one place (:meth:`Summary.to_dict`,
which :func:`pyomo_lap.results.table.write_results` writes).

A key of the file is a field of :class:`Summary` of the same name; a file written by an
earlier version (keys missing: the field's default, and absent from :meth:`Summary.to_dict`
as from the file) or holding keys this version does not know (kept in :attr:`Summary.extra`,
written back) reads all the same: ``Summary.from_dict(d).to_dict() == d`` for every dict of
string keys. Keys are added, never renamed: a key renamed or given another meaning would
need a new :data:`SUMMARY_FORMAT`. The summary is also a mutable mapping of its keys
(``summary["lap_time_s"]``, ``summary.get("self_check")``, ``dict(summary)``), as the dict it
replaces was.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from ..folders.json_file import read_json

__all__ = ["Summary", "SUMMARY_FORMAT", "SUMMARY_KEYS", "as_summary"]

SUMMARY_FORMAT = 1
"""The format of ``summary.json`` this version writes (its key ``summary_format``). 1: the
keys of :class:`Summary`; a file without the key was written before it existed (version 0.1,
the same keys, those of its time). A key renamed, removed or given another meaning would make
it 2 (and :meth:`Summary.from_dict` read both)."""


@dataclasses.dataclass(init=False, eq=False, repr=False, slots=True)
class Summary(MutableMapping):
    """The contents of ``summary.json``: one field per key, in the file's order.

    Made by a solve (:func:`pyomo_lap.api.results.solve_summary`, then the job's own fields:
    :func:`pyomo_lap.solve_sector`), read from a results folder (:meth:`read`,
    :func:`pyomo_lap.results.table.read_summary`) or from a dict (:meth:`from_dict`); written
    by :func:`pyomo_lap.results.table.write_results` (:meth:`to_dict`). A key the summary does
    not hold (an earlier version's file, a stint lap's, a failed solve's) reads as the field's
    default (None unless said) and is left out of :meth:`to_dict`; :meth:`is_set` tells the two
    apart. Setting a field that does not exist raises AttributeError (the fields are slots).

    As a :class:`collections.abc.MutableMapping` it is the dict of its keys: ``s["lap_time_s"]``
    (KeyError for a key it does not hold), ``s.get(...)``, ``"corners" in s``, ``dict(s)``,
    ``s == d`` (equal keys and values), ``s["mine"] = 1`` (a key of no field: into
    :attr:`extra`).

    Attributes
    ----------
    summary_format : int or None
        :data:`SUMMARY_FORMAT` (``write_results`` sets it); None: written before the key.
    lap_time_s : float or None
        The sector's time (a closed lap's: the lap time) [s], the time alone (``objective``
        less the penalties); None when a failed solve left no values.
    termination_condition : str
        The solver's termination condition (``'optimal'``, ``'maxIterations'`` ...).
    outcome : str
        What the solve came to (:attr:`pyomo_lap.solvers.report.SolveReport.kind`:
        ``'optimal'``, ``'iteration limit'``, ``'interrupted'`` ...).
    solver_hint : str
        What to try when it is not optimal (``''`` when optimal).
    solver_status, solver_message, ipopt_exit : str
        The solver's status, its message and IPOPT's exit line.
    optimal : bool
        Whether the solver ended optimal.
    n_variables, n_constraints : int
        The size of the NLP the solver saw (without the fixed variables and, for ``ipopt``,
        pyomo.dae's eliminated derivatives); the Pyomo model's counts when the solver does not
        say.
    iterations : int or None
        The solver's iterations.
    build_time_s, init_time_s, solve_time_s : float
        Wall times of the build, the initial guess and the solve [s].
    model_reused : bool
        The kept model given the car (``model_cache``) instead of a build.
    nfe : int
        Finite elements of the mesh.
    ncp : int
        Collocation points per element.
    scheme : str
        The collocation scheme (default ``'LAGRANGE-RADAU'``: results before the key).
    ocp_options : dict
        The OCP options (:data:`pyomo_lap.ocp.build.OCP_CONFIG`) but those recorded at the top
        level (``ncp``, ``scheme`` ...): ``control_form``, ``element_length``, ``mesh`` ...
    n_points : int
        Points of the mesh (rows of the mesh table).
    start_m, length_m : float
        The sector's start on the track and its length [m].
    periodic : bool
        A closed lap (the end state equal to the start state; default False).
    model : str
        The vehicle model (``'full'``, ``'single-track'``, ``'point-mass'``, ``'racecar'``
        ...; default ``'full'``: results before the key, of the full model, the only one then).
    initial_guess : str
        ``'cold'`` or ``'single-track'``.
    warm_start : dict or str or None
        A job: the single-track solve it started from (``single_track_time_s`` [s],
        ``single_track_iterations``, ``single_track_solve_time_s`` [s]); a stint lap: how it
        was started (text).
    warm_start_from : str or None
        The results folder the solve was warm-started from.
    warm_start_source : dict
        What that folder gave (``covered_share``, ``covered_m`` [m], ``multipliers_used``,
        ``source_car`` ...: :func:`pyomo_lap.api.warm_start.apply_warm_start`).
    warm_start_failed : dict
        The warm-started solve that failed before the usual start was solved
        (``termination_condition``, ``iterations``, ``solve_time_s`` [s]).
    initial_speed_mps : float
        The entry speed of an open sector [m/s].
    track, vehicle : str
        Names of the track and the car.
    solver : str
        The solver's name (``'lap_ipopt'``, ``'ipopt'`` ...).
    solver_options : dict
        The options given to the solve that gave the result.
    solver_options_effective : dict
        The options it ran with (pyomo_lap's defaults updated by those given).
    objective : float or None
        What the solver minimised: ``lap_time_s`` + ``penalty_s`` [s].
    pyomo_lap_version, pyomo_version, python, solver_version : str
        Versions of the code, Pyomo, Python and the solver.
    pyomo_lap_git_commit : str
        The checkout's commit (when it is one).
    track_file, vehicle_file : str
        Absolute paths of the files read (when they are files).
    track_file_sha256, vehicle_file_sha256, vehicle_parameters_sha256 : str
        SHA-256 of those files and of the car's parameters as solved.
    created_utc : str
        When the summary was made (ISO 8601, UTC).
    track_width_m : float or None
        ``track_width`` of the job [m each side], when given.
    track_flat : bool
        The track loaded flat (elevation, banking and slope dropped).
    track_lat_lon_order : dict
        ``option``, ``order`` (of a GPS file's columns), ``given``, ``why``.
    track_processing, track_assumptions, track_repairs : list
        What was done to the track's data, the values assumed, the repairs
        (:func:`pyomo_lap.track.report.provenance_rows`).
    nlp : dict
        IPOPT's count of the NLP: ``n_variables``, ``n_equalities``, ``n_inequalities``,
        ``jac_nnz``, ``hess_nnz``.
    timing : dict
        Wall times [s]: ``build_s``, ``dae_transformation_s``, ``init_s``, ``solve_s``,
        ``channels_s``, ``self_check_s``, IPOPT's ``ipopt_internal_s``, ``ipopt_eval_s`` ...
    mesh_refinement : dict or None
        The job option ``refine_mesh``: ``elements_split``, ``nfe_before``, ``nfe_after``,
        ``defect_max_before``, ``rounds`` ... (None: not refined).
    mesh_continuation : dict or None
        The coarse meshes solved first: ``reason``, ``stages``, ``iterations``,
        ``coarse_time_s`` [s] (None: a direct solve).
    hybrid : dict
        A car with ``[hybrid]``: the battery's energies
        (:func:`pyomo_lap.ocp.hybrid.hybrid_summary`).
    interrupted_at_iteration : int
        The iteration an interrupted solve's last iterate is of.
    max_speed_kmh, mean_speed_kmh : float
        Top speed and time-averaged speed of the car [km/h].
    energy : dict
        The integrals of ``m.energy`` [J] (and the fuel [kg]):
        :func:`pyomo_lap.ocp.integrals.energy_summary`.
    channel_quality : dict
        Zig-zag counts and speed consistency of the channels
        (:func:`pyomo_lap.verify.quality.channel_quality`).
    mesh : dict
        ``placement``, ``n_elements``, ``shortest_m``, ``longest_m`` [m],
        ``element_boundaries_m`` [m from the sector start].
    sectors : list of dict
        The timed sectors: ``sector``, ``s_start_m``, ``s_end_m`` [m], ``time_s`` [s].
    corners : list of dict
        The per-corner table (:func:`pyomo_lap.results.corners.corner_records`).
    corners_source : str
        The corner file read, or ``'detected'``.
    sector_boundaries : dict
        The sector file's starts: ``s_start_m`` [m], ``names``, ``track_length_m`` [m],
        ``closed``, ``source``.
    vehicle_parameters : dict
        The car's parameters as solved, by dotted name (SI units).
    regularization : dict
        The objective's penalties (:func:`pyomo_lap.ocp.common.regularization`): ``terms``
        [s], ``total_s`` [s], ``share`` [-] (and ``lap_time_cost_s`` [s] with
        ``penalty_cost``).
    penalty_s : float
        ``objective`` - ``lap_time_s`` [s].
    objective_note : str
        What the objective is, in words.
    self_check : dict
        The fast checks of the result (:func:`pyomo_lap.verify.verdict.self_check`):
        ``verdict``, ``checks``, ``not_run``, ``wall_time_s`` [s].
    setup, setup_baseline : dict
        A setup optimization: the optimal parameters (``value``, ``start``, ``lower``,
        ``upper``, ``at_bound``, ``unit``) and the car as given (``lap_time_s``, ``gain_s``
        [s], ``gain_pct`` [%] ...).
    sensitivities : list of dict
        d(lap time)/d(parameter) per parameter
        (:func:`pyomo_lap.analysis.sensitivities.lap_time_sensitivities`).
    trajectory_step_m : float
        The fixed distance step of the table written [m] (``--every``).
    fixed_step : dict
        How the rows on the fixed step were made (``--every``, ``pyomo-lap export``): the
        columns computed and interpolated, the rows whose algebraic loop failed, the bounds
        applied (:mod:`pyomo_lap.results.fixed_step_points`).
    partial : bool
        Written by a solve that did not end optimal (partial results).
    interrupted : bool
        The last iterate of an interrupted solve.
    exported_from : str
        The results folder ``pyomo-lap export --every`` wrote this one from.
    lap : int
        A stint's lap: its number (1 ...).
    mass_start_kg : float
        A stint's lap: the car's mass at its start [kg].
    limits : dict
        A stint's lap: the limits of its energy integrals
        (:data:`pyomo_lap.vehicle.limits.LIMIT_OF`).
    extra : dict
        The keys of the file that are no field (a later version's, a user's), kept as read
        and written back.
    """

    summary_format: Optional[int] = None
    lap_time_s: Optional[float] = None
    termination_condition: Optional[str] = None
    outcome: Optional[str] = None
    solver_hint: Optional[str] = None
    solver_status: Optional[str] = None
    solver_message: Optional[str] = None
    ipopt_exit: Optional[str] = None
    optimal: Optional[bool] = None
    n_variables: Optional[int] = None
    n_constraints: Optional[int] = None
    iterations: Optional[int] = None
    build_time_s: Optional[float] = None
    model_reused: Optional[bool] = None
    init_time_s: Optional[float] = None
    solve_time_s: Optional[float] = None
    nfe: Optional[int] = None
    ncp: Optional[int] = None
    scheme: str = "LAGRANGE-RADAU"
    ocp_options: Optional[dict] = None
    n_points: Optional[int] = None
    start_m: Optional[float] = None
    length_m: Optional[float] = None
    periodic: bool = False
    model: str = "full"
    initial_guess: Optional[str] = None
    warm_start: Union[dict, str, None] = None
    warm_start_from: Optional[str] = None
    warm_start_source: Optional[dict] = None
    warm_start_failed: Optional[dict] = None
    initial_speed_mps: Optional[float] = None
    track: Optional[str] = None
    vehicle: Optional[str] = None
    solver: Optional[str] = None
    solver_options: Optional[dict] = None
    solver_options_effective: Optional[dict] = None
    objective: Optional[float] = None
    pyomo_lap_version: Optional[str] = None
    pyomo_version: Optional[str] = None
    python: Optional[str] = None
    track_file: Optional[str] = None
    track_file_sha256: Optional[str] = None
    vehicle_file: Optional[str] = None
    vehicle_file_sha256: Optional[str] = None
    vehicle_parameters_sha256: Optional[str] = None
    pyomo_lap_git_commit: Optional[str] = None
    solver_version: Optional[str] = None
    created_utc: Optional[str] = None
    track_width_m: Optional[float] = None
    track_flat: Optional[bool] = None
    track_lat_lon_order: Optional[dict] = None
    track_processing: Optional[list] = None
    track_assumptions: Optional[list] = None
    track_repairs: Optional[list] = None
    nlp: Optional[dict] = None
    timing: Optional[dict] = None
    mesh_refinement: Optional[dict] = None
    mesh_continuation: Optional[dict] = None
    hybrid: Optional[dict] = None
    interrupted_at_iteration: Optional[int] = None
    max_speed_kmh: Optional[float] = None
    energy: Optional[dict] = None
    channel_quality: Optional[dict] = None
    mesh: Optional[dict] = None
    sectors: Optional[list] = None
    corners: Optional[list] = None
    corners_source: Optional[str] = None
    sector_boundaries: Optional[dict] = None
    mean_speed_kmh: Optional[float] = None
    vehicle_parameters: Optional[dict] = None
    regularization: Optional[dict] = None
    penalty_s: Optional[float] = None
    objective_note: Optional[str] = None
    self_check: Optional[dict] = None
    setup: Optional[dict] = None
    setup_baseline: Optional[dict] = None
    sensitivities: Optional[list] = None
    trajectory_step_m: Optional[float] = None
    fixed_step: Optional[dict] = None
    partial: Optional[bool] = None
    interrupted: Optional[bool] = None
    exported_from: Optional[str] = None
    lap: Optional[int] = None
    mass_start_kg: Optional[float] = None
    limits: Optional[dict] = None
    extra: dict = dataclasses.field(default_factory=dict)
    _set: set = dataclasses.field(default_factory=set)

    def __init__(self, **values: Any) -> None:
        """A summary holding the keys given (each a field; ``extra`` a dict of other keys).

        Raises
        ------
        TypeError
            A keyword that is no field (the message names it): a file's other keys go
            through :meth:`from_dict`.
        """
        for f in _FIELDS:
            object.__setattr__(self, f.name, f.default if f.default is not dataclasses.MISSING
                               else f.default_factory())
        for key, value in values.items():
            if key == "extra":
                object.__setattr__(self, "extra", dict(value))
            elif key in _KEY_SET:
                setattr(self, key, value)
            else:
                raise TypeError(f"Summary({key}=...): {key!r} is no field of the summary; "
                                "expected one of SUMMARY_KEYS (other keys: Summary.from_dict, "
                                "kept in extra)")

    def __setattr__(self, name: str, value: Any) -> None:
        """Set a field (the summary then holds its key); AttributeError for another name."""
        if name in _KEY_SET:
            object.__setattr__(self, name, value)
            self._set.add(name)
        elif name in ("extra", "_set"):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(f"Summary has no field {name!r}: expected one of "
                                 "SUMMARY_KEYS (summary[key] = value keeps any other key, in "
                                 "extra)")

    @classmethod
    def from_dict(cls, data: Mapping) -> "Summary":
        """The summary of a dict of ``summary.json``'s keys (any version's): the fields of
        the keys it has, its other keys in :attr:`extra`; a copy of ``data``'s top level.

        Raises
        ------
        TypeError
            ``data`` is not a mapping, or has a key that is not a string.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"summary = {data!r:.80}: expected a Summary or a dict of "
                            "summary.json's keys")
        out = cls()
        for key, value in data.items():
            out[key] = value
        return out

    @classmethod
    def read(cls, path) -> "Summary":
        """The ``summary.json`` of a results folder (``path``: the folder or the file).

        Raises
        ------
        FileNotFoundError
            No summary.json there.
        ValueError
            The file is not JSON or nested too deep
            (:class:`pyomo_lap.folders.json_file.FolderJSONError`, one line), or not a JSON
            object.
        """
        path = Path(path)
        if path.is_dir():
            path = path / "summary.json"
        if not path.exists():
            raise FileNotFoundError(f"no summary.json at {str(path)!r}: is it a pyomo_lap "
                                    "results folder?")
        data = read_json(path, "an object of summary.json's keys")
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a JSON {type(data).__name__}, expected an object of "
                             "summary.json's keys")
        return cls.from_dict(data)

    def to_dict(self) -> dict:
        """``summary.json``'s dict: the keys held, the fields' in their order, then
        :attr:`extra`'s (values as they are, not copied)."""
        out = {k: getattr(self, k) for k in SUMMARY_KEYS if k in self._set}
        out.update(self.extra)
        return out

    def copy(self) -> "Summary":
        """A copy of the top level (the values, dicts and lists among them, shared)."""
        return Summary.from_dict(self)

    def is_set(self, key: str) -> bool:
        """Whether the summary holds ``key`` (a field set, or a key of :attr:`extra`)."""
        return key in self._set or key in self.extra

    def __getitem__(self, key: str) -> Any:
        """The value of ``key``; KeyError when the summary does not hold it."""
        if key in _KEY_SET:
            if key in self._set:
                return getattr(self, key)
            raise KeyError(key)
        return self.extra[key]

    def __setitem__(self, key: str, value: Any) -> None:
        """Set ``key``: its field, or :attr:`extra` for a key of no field."""
        if not isinstance(key, str):
            raise TypeError(f"summary key {key!r}: expected a string (a JSON object's key)")
        if key in _KEY_SET:
            setattr(self, key, value)
        else:
            self.extra[key] = value

    def __delitem__(self, key: str) -> None:
        """Drop ``key`` (a field back to its default, not held); KeyError when not held."""
        if key in _KEY_SET:
            if key not in self._set:
                raise KeyError(key)
            f = _FIELD_OF[key]
            object.__setattr__(self, key, f.default)
            self._set.discard(key)
        else:
            del self.extra[key]

    def __iter__(self) -> Iterator[str]:
        """The keys held, in :meth:`to_dict`'s order."""
        return iter(self.to_dict())

    def __len__(self) -> int:
        """How many keys the summary holds."""
        return len(self._set) + len(self.extra)

    def __contains__(self, key: object) -> bool:
        """Whether the summary holds ``key`` (:meth:`is_set`)."""
        return key in self._set or key in self.extra

    def __repr__(self) -> str:
        """``Summary({...})``: the keys held and their values."""
        return f"Summary({self.to_dict()!r})"

    def __reduce__(self):
        """Pickled (and copied) as its dict: the keys held stay the keys held."""
        return Summary.from_dict, (self.to_dict(),)


_FIELDS = dataclasses.fields(Summary)
SUMMARY_KEYS = tuple(f.name for f in _FIELDS if f.name not in ("extra", "_set"))
"""The keys of ``summary.json`` that are fields of :class:`Summary`, in the file's order."""
_KEY_SET = frozenset(SUMMARY_KEYS)
_FIELD_OF = {f.name: f for f in _FIELDS}


def as_summary(summary) -> Summary:
    """``summary`` typed: a :class:`Summary` as it is, a dict of ``summary.json``'s keys as
    :meth:`Summary.from_dict` reads it (for the functions that took the dict before).

    Raises
    ------
    TypeError
        Neither (the message names the value).
    """
    return summary if isinstance(summary, Summary) else Summary.from_dict(summary)
