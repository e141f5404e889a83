"""The workbook reads well (issue 25): every sheet's header row frozen, columns sized, a unit
for every value of the summary (the channels' units in their headers, said in the summary),
the solver's effective options, no JSON text in any cell, the vehicle sheet with units and
descriptions from the schema."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pyomo_lap.results.table import effective_solver_options, write_results
from pyomo_lap.solvers.lap.solver import LAP_IPOPT_OPTIONS
from pyomo_lap.vehicle.car import load_vehicle
from pyomo_lap.vehicle.schema import PARAMETER_KEYS, VehicleParameters, field_of


def _frame(n=21):
    s = np.linspace(0.0, 200.0, n)
    return pd.DataFrame({"s": s, "s_sector": s, "t": s / 20.0, "speed": np.full(n, 20.0),
                         "speed_kmh": np.full(n, 72.0), "q2": np.zeros(n), "f_11z": np.full(n, 600.0),
                         "q3": np.linspace(0.0, 1.0 / 3.0, n),
                         "x_spine": s, "y_spine": 0 * s, "z_spine": 0 * s,
                         "width_left": np.full(n, 4.0), "width_right": np.full(n, 4.0)})


def _summary():
    """A summary with the nested entries a solve writes: dicts, dicts of dicts, a long list."""
    return {"lap_time_s": 10.0, "track": "ring", "vehicle": "fsae", "solver": "lap_ipopt",
            "solver_options": {"max_iter": 500, "mu_init": 1e-3},
            "ocp_options": {"adherence": "below-peak", "lift": [], "K_delta": 1.0},
            "timing": {"solve_s": 1.5, "function_s": {"f": 0.1, "grad_f": 0.2}},
            "mesh": {"n_elements": 20, "element_boundaries_m": list(np.linspace(0, 200, 21))},
            "nlp": {"n_variables": 1000}, "sectors": [
                {"sector": 1, "s_start_m": 0.0, "s_end_m": 200.0, "time_s": 10.0}],
            "vehicle_parameters": {"mass.total": 240.0, "aero.Cz1": 0.536},
            "track_processing": [], "track_assumptions": [], "track_repairs": []}


@pytest.fixture(scope="module")
def workbook(tmp_path_factory):
    import openpyxl
    out = write_results(tmp_path_factory.mktemp("wb") / "r", _frame(), _summary(),
                        vehicle_params=load_vehicle("fsae"))
    return openpyxl.load_workbook(out / "results.xlsx"), out


@pytest.mark.unit
def test_every_sheet_has_its_header_frozen_and_sized_columns(workbook):
    wb, _ = workbook
    assert {"summary", "channels", "channel_dictionary", "sectors", "vehicle", "track",
            "provenance", "lists"} <= set(wb.sheetnames)
    for ws in wb.worksheets:
        assert ws.freeze_panes == ("B2" if ws.title in ("channels", "track") else "A2"), ws.title
        header = [c.value for c in ws[1]]
        for j, text in enumerate(header, start=1):
            width = ws.column_dimensions[ws.cell(1, j).column_letter].width
            assert width >= min(len(str(text)) + 2, 60), (ws.title, text, width)


@pytest.mark.unit
def test_no_cell_holds_json_text(workbook):
    """No text cell parses as a JSON object or array (dicts and lists are rows; the long list
    of element boundaries is a column of the lists sheet)."""
    wb, _ = workbook
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                v = cell.value
                if isinstance(v, str) and v.strip()[:1] in "[{":
                    with pytest.raises(ValueError):
                        json.loads(v)
    rows = {r[1].value: r[2].value for r in wb["summary"].iter_rows(min_row=2)}
    assert rows["timing.function_s.grad_f"] == 0.2 and rows["ocp_options.adherence"] == "below-peak"
    assert rows["ocp_options.lift"] == "(none)"
    lists = [c.value for c in wb["lists"]["A"]]
    assert lists[0] == "mesh.element_boundaries_m" and lists[1:] == pytest.approx(np.linspace(0, 200, 21))


@pytest.mark.unit
def test_summary_units_and_the_effective_solver_options(workbook):
    """Each value with its unit (lap_time_s: s); the options IPOPT ran with: lap_ipopt's
    defaults (pyomo_lap.solvers.lap.solver.LAP_IPOPT_OPTIONS) overridden by those given."""
    wb, _ = workbook
    sheet = {r[1].value: (r[2].value, r[3].value, r[4].value) for r in wb["summary"].iter_rows(min_row=2)}
    assert [c.value for c in wb["summary"][1]] == ["group", "quantity", "value", "unit", "note"]
    assert sheet["lap_time_s"][:2] == (10.0, "s") and sheet["timing.solve_s"][1] == "s"
    assert "in brackets" in sheet["units"][2]
    expected = {**LAP_IPOPT_OPTIONS, "max_iter": 500, "mu_init": 1e-3}
    got = {k.removeprefix("solver_options."): v[0] for k, v in sheet.items()
           if k.startswith("solver_options.")}
    assert got == expected
    assert sheet["solver_options.max_iter"][2].startswith("given")
    assert sheet["solver_options.tol"][2].startswith("pyomo_lap default")
    assert effective_solver_options("ipopt", {})["nlp_scaling_method"] == ("user-scaling",
                                                                           "pyomo_lap default")
    assert effective_solver_options("other", {"a": 1}) == {"a": (1, "given")}


@pytest.mark.unit
def test_vehicle_sheet_has_units_and_descriptions_from_the_schema(workbook):
    wb, _ = workbook
    ws = wb["vehicle"]
    assert [c.value for c in ws[1]] == ["parameter", "value", "unit", "description"]
    rows = {r[0].value: (r[1].value, r[2].value, r[3].value) for r in ws.iter_rows(min_row=2)}
    car = load_vehicle("fsae")
    for key in PARAMETER_KEYS:
        info = VehicleParameters.model_fields[field_of(key)]
        if car.value(key) is None:      # an optional key the car has not: not on the sheet
            assert key not in rows
            continue
        assert rows[key][0] == pytest.approx(car.value(key))
        assert rows[key][1] == info.json_schema_extra["unit"]
        assert rows[key][2] and rows[key][2] in info.description
    assert rows["mass.total"][1] == "kg" and rows["powertrain.P_max"][1] == "W"


@pytest.mark.unit
def test_channels_keep_their_units_in_the_headers(workbook):
    """The channels as before (pandas reads them back with the first row as the header)."""
    _, out = workbook
    ch = pd.read_excel(out / "results.xlsx", sheet_name="channels")
    assert list(ch.columns[:3]) == ["s [m]", "s_sector [m]", "t [s]"]
    assert ch["f_11z [N]"].tolist() == [600.0] * 21


@pytest.mark.unit
def test_number_formats_by_unit_autofilter_and_full_precision(workbook):
    """Each column shows its unit's format (m 0.00, s 0.000, km/h 0.0, N 0, rad 0.0000), the
    value stays the full double (1/3 reads back exactly), an autofilter spans the table."""
    from openpyxl.utils import get_column_letter
    wb, _ = workbook
    want = {"s [m]": "0.00", "t [s]": "0.000", "speed_kmh [km/h]": "0.0", "f_11z [N]": "0",
            "q3 [rad]": "0.0000", "speed [m/s]": "0.00"}
    ws = wb["channels"]
    header = [c.value for c in ws[1]]
    for name, code in want.items():
        col = header.index(name) + 1
        assert ws.cell(2, col).number_format == code, name
        assert ws.cell(ws.max_row, col).number_format == code, name
    assert ws.cell(22, header.index("q3 [rad]") + 1).value == 1.0 / 3.0
    assert ws.auto_filter.ref == f"A1:{get_column_letter(len(header))}22"
    track = wb["track"]
    theader = [c.value for c in track[1]]
    assert track.auto_filter.ref == f"A1:{get_column_letter(len(theader))}22"
    assert track.cell(2, theader.index("x_spine [m]") + 1).number_format == "0.00"


@pytest.mark.unit
def test_every_unit_of_the_channels_has_a_number_format():
    from pyomo_lap.results.channels import UNITS
    from pyomo_lap.results.export import NUMBER_FORMATS, number_format
    assert set(UNITS.values()) <= set(NUMBER_FORMATS)
    assert number_format("element [-]") == "0" and number_format("q4 [m]") == "0.0000"
    assert number_format("no unit") == "General"


@pytest.mark.unit
def test_the_speed_chart_plots_speed_over_s_from_the_channels_sheet(workbook):
    """A chart sheet ``speed_chart`` whose one series takes its x from the column s and its y
    from speed_kmh of the channels sheet (xl/charts/chart1.xml inside the xlsx)."""
    import re
    import zipfile
    from openpyxl.utils import get_column_letter
    wb, out = workbook
    assert "speed_chart" in wb.sheetnames
    header = [c.value for c in wb["channels"][1]]
    x = get_column_letter(header.index("s [m]") + 1)
    y = get_column_letter(header.index("speed_kmh [km/h]") + 1)
    with zipfile.ZipFile(out / "results.xlsx") as z:
        xml = z.read("xl/charts/chart1.xml").decode()
    refs = re.findall(r"<c:f>([^<]+)</c:f>", xml)
    assert f"channels!${x}$2:${x}$22" in refs and f"channels!${y}$2:${y}$22" in refs
    assert "<c:scatterChart>" in xml
    s_col = [r[0].value for r in wb["channels"].iter_rows(min_row=2, min_col=header.index("s [m]") + 1,
                                                          max_col=header.index("s [m]") + 1)]
    bounds = [float(v) for v in re.findall(r'<c:(?:min|max) val="([^"]+)"/>', xml)]
    assert min(s_col) in bounds and max(s_col) in bounds     # the x axis ends at the table's s
