"""The state of one job of :func:`pyomo_lap.solve_sector`: :class:`Job`, which its steps
(:mod:`pyomo_lap.api.job`, :mod:`pyomo_lap.api.refine`, :mod:`pyomo_lap.api.results`) fill in
turn, each field declared once with its type and its meaning.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Optional

__all__ = ["Job"]


@dataclasses.dataclass(eq=False, repr=False, slots=True)
class Job:
    """What one :func:`pyomo_lap.solve_sector` call knows, from its options to its results.

    The steps of the job set the fields in this order (each step's docstring names those it
    sets); a field not set yet is None (or as said). The fields are slots: setting a name that
    is not declared here raises AttributeError, so a misspelt field cannot pass unnoticed.

    Attributes
    ----------
    cfg : ConfigDict
        The job's options, checked (:data:`pyomo_lap.api.config.SOLVE_CONFIG`,
        :func:`pyomo_lap.api.config.job_options`).
    echo : callable
        ``echo(str)``: the progress lines.
    progress : callable or None
        ``progress(label, done, total)`` of the build and the channels (set when None by the
        build: :func:`pyomo_lap.util.progress.echo_progress` through ``echo``).
    cache : dict or None
        ``model_cache`` of :func:`pyomo_lap.solve_sector`: the kept model and its track.
    held : list
        The locks held on ``out_dir`` (released by :func:`pyomo_lap.solve_sector`).
    out_dir : Path or None
        The results folder (checked and locked by the loading step); None: nothing written
        (unless ``writer`` is given).
    writer : ResultsWriter or None
        A folder inside another being written whole (a stint's ``lap_NN``:
        :meth:`pyomo_lap.folders.writer.ResultsWriter.nested`): the export writes the job's
        files through it, and no fallback folder (the outer folder is written whole or not at
        all); None: ``out_dir``.
    on_iteration : callable or None
        ``on_iteration(info)`` at each IPOPT iteration (``lap_ipopt``).
    model : str
        The vehicle model's name (``'full'``, ``'racecar'`` ...: the option, or the one the
        vehicle file names).
    ocp_options : dict
        The OCP options, checked.
    solver_options : dict or None
        The solver options, checked (with the sensitivities' own added when asked).
    reuse : bool
        Whether a kept model (``cache``) may serve this job.
    track_key : str or None
        The key of the kept track in ``cache`` (with ``reuse``).
    start : float
        The sector's start on the track [m] (checked, wrapped on a closed track).
    length : float or None
        The sector's length [m]; None: to the end of the track (a closed lap).
    tr : Track
        The track, loaded.
    p : VehicleParameters
        The car, loaded (or the object given).
    corners : DataFrame or None
        The track's corners (:func:`pyomo_lap.track.corners.track_corners`).
    corners_source : str or None
        The corner file read, or ``'detected'``.
    sector_boundaries : dict or None
        The sector file's starts (summary.json ``sector_boundaries``); None without one.
    build_kwargs : dict
        The arguments of :func:`pyomo_lap.ocp.build.build_model` but the track and the car.
    reused : bool
        The kept model given the car instead of a build.
    m : ConcreteModel
        The model (replaced by a refined one when the mesh is refined).
    size : dict
        ``n_variables``, ``n_constraints`` of ``m`` (:func:`pyomo_lap.api.results.model_size`).
    info : dict
        The initial guess's report (:func:`pyomo_lap.ocp.initialize.initialize_model`:
        ``estimated_time_s`` [s] ...).
    warm : dict or None
        The single-track solve the job started from (``initial_guess = 'single-track'``).
    warm_source : dict or None
        What the results folder ``warm_start_from`` gave (summary.json ``warm_start_source``).
    init_s : float
        Wall time of the initial guess [s].
    setup_start : dict or None
        The free parameters: ``{name: (start, lower, upper)}`` (job option ``free``).
    setup_baseline : dict or None
        The car as given, solved first with ``free`` (``lap_time_s`` [s], ``iterations``,
        ``solve_time_s`` [s]); None: none, or its solve failed.
    used_options : dict or None
        The solver options of the solve that gave the result.
    warm_retry : dict or None
        The warm-started solve that failed before the usual start was solved.
    continuation : dict or None
        The coarse meshes solved first (summary.json ``mesh_continuation``).
    rep : SolveReport
        The solve's report (:class:`pyomo_lap.solvers.report.SolveReport`).
    refinement : dict or None
        What the job option ``refine_mesh`` did (summary.json ``mesh_refinement``).
    result_df : tuple or None
        ``(model, DataFrame)``: the channels the refinement's check computed, reused by the
        export when the model is still ``m``.
    result_defects : tuple or None
        ``(model, DefectReport)``: the collocation defects the refinement's check measured,
        reused by the self-check when the model is still ``m``.
    summary : Summary or None
        What summary.json holds (:class:`pyomo_lap.results.summary.Summary`).
    df : DataFrame or None
        The channels at the mesh points (:func:`pyomo_lap.results.table.trajectory_dataframe`).
    sens : DataFrame or None
        The lap-time sensitivities (``sensitivities=True``).
    self_check : dict or None
        The self-check of a solved result (summary.json ``self_check``).
    where : Path or None
        The folder the results were written to (``out_dir``, ``<out_dir>.failed``, a
        fallback folder), None when none was.
    """

    # the inputs
    cfg: Any
    echo: Callable[[str], None]
    progress: Optional[Callable] = None
    cache: Optional[dict] = None
    held: list = dataclasses.field(default_factory=list)
    out_dir: Optional[Path] = None
    writer: Any = None
    on_iteration: Optional[Callable] = None
    # the options checked (_check_job)
    model: Optional[str] = None
    ocp_options: Optional[dict] = None
    solver_options: Optional[dict] = None
    reuse: bool = False
    # what is loaded (_load_inputs, _track_corners)
    track_key: Optional[str] = None
    start: Optional[float] = None
    length: Optional[float] = None
    tr: Any = None
    p: Any = None
    corners: Any = None
    corners_source: Optional[str] = None
    sector_boundaries: Optional[dict] = None
    # the model (_build_or_reuse) and its start (_initial_guess)
    build_kwargs: Optional[dict] = None
    reused: bool = False
    m: Any = None
    size: Optional[dict] = None
    info: Optional[dict] = None
    warm: Optional[dict] = None
    warm_source: Optional[dict] = None
    init_s: Optional[float] = None
    setup_start: Optional[dict] = None
    setup_baseline: Optional[dict] = None
    # the solve (_solve_job) and the refinement (_refine_job)
    used_options: Optional[dict] = None
    warm_retry: Optional[dict] = None
    continuation: Optional[dict] = None
    rep: Any = None
    refinement: Optional[dict] = None
    result_df: Optional[tuple] = None
    result_defects: Optional[tuple] = None
    # the products (_summarize, _channels_and_export)
    summary: Any = None
    df: Any = None
    sens: Any = None
    self_check: Optional[dict] = None
    where: Optional[Path] = None

    def __repr__(self) -> str:
        """``Job(model=..., start=..., length=..., set: ...)``: the fields set, not their
        values (a model, a track)."""
        held = [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]
        return (f"Job(model={self.model!r}, start={self.start!r}, length={self.length!r}; "
                f"set: {', '.join(held)})")
