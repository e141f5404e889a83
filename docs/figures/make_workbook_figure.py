"""Makes docs/figures/workbook_channels.png and docs/figures/workbook_speed_chart.png: the
``results.xlsx`` of the default job (``pyomo-lap solve``, the Nordschleife's first 2 km) as
LibreOffice Calc renders it.

    python docs/figures/make_workbook_figure.py [RESULTS_FOLDER]

Without RESULTS_FOLDER it solves the default job into a temporary folder first (about 10 s).

Needs LibreOffice (``soffice``; Debian: ``apt-get install libreoffice-calc-nogui``) and
poppler's ``pdftoppm`` (``poppler-utils``) for this figure only: pyomo_lap and its tests do not
use them. The workbook itself is not changed; two copies of it are rendered:

* ``channels``: the sheet alone (openpyxl), 13 of its columns and the rows around the first
  braking point, printed with Calc's row and column headings and gridlines. The cells keep the
  number formats pyomo_lap wrote; hidden rows and columns are not printed, so the headings
  show which are left out.
* ``speed_chart``: the workbook as written, with every other sheet hidden (an edit of
  ``xl/workbook.xml``: openpyxl would drop the chart), so the chart is drawn from the
  ``channels`` cells by Calc itself.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import openpyxl
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.dimensions import ColumnDimension
from PIL import Image, ImageChops

HERE = Path(__file__).resolve().parent
COLUMNS = ["s [m]", "t [s]", "q2 [m]", "q3 [rad]", "f_xa [N]", "delta [rad]",
           "speed_kmh [km/h]", "a_x [m/s^2]", "throttle [%]", "brake [%]",
           "steering_wheel_angle [deg]", "a_x_g [g]", "Omega_z [1/m]"]
ROWS_BEFORE, ROWS_AFTER = 8, 16     # around the first row with brake > 5 %
DPI = 150


def channels_copy(xlsx: Path, out: Path) -> Path:
    """The ``channels`` sheet alone, a print area of COLUMNS and the rows around the first
    braking point (the other rows and columns hidden), one landscape page."""
    wb = openpyxl.load_workbook(xlsx)
    for name in wb.sheetnames:
        if name != "channels":
            del wb[name]
    ws = wb["channels"]
    header = [c.value for c in ws[1]]
    brake = header.index("brake [%]") + 1
    first = next(r for r in range(2, ws.max_row + 1) if (ws.cell(r, brake).value or 0) > 5.0)
    top, bottom = max(2, first - ROWS_BEFORE), min(ws.max_row, first + ROWS_AFTER)
    ws.column_dimensions.clear()             # xlsxwriter's widths are column ranges
    for j, name in enumerate(header, 1):
        letter = get_column_letter(j)
        ws.column_dimensions[letter] = ColumnDimension(
            ws, index=letter, width=max(9, len(name) + 2), hidden=name not in COLUMNS)
    for r in list(range(2, top)) + list(range(bottom + 1, ws.max_row + 1)):
        ws.row_dimensions[r].hidden = True
    ws.print_area = f"A1:{get_column_letter(len(header))}{bottom}"
    ws.print_options.headings = True
    ws.print_options.gridLines = True
    ws.page_setup.orientation = "landscape"
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = ws.page_setup.fitToHeight = 1
    wb.save(out)
    return out


def speed_chart_copy(xlsx: Path, out: Path) -> Path:
    """The workbook byte for byte except ``xl/workbook.xml``: every sheet but ``speed_chart``
    hidden and ``speed_chart`` the active one."""
    with zipfile.ZipFile(xlsx) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "xl/workbook.xml":
                xml = data.decode("utf-8")
                k = re.findall(r'<sheet name="([^"]+)"', xml).index("speed_chart")
                xml = re.sub(r'<sheet name="(?!speed_chart")', '<sheet state="hidden" name="', xml)
                xml = xml.replace("<workbookView ",
                                  f'<workbookView activeTab="{k}" firstSheet="{k}" ', 1)
                data = xml.encode("utf-8")
            zout.writestr(item, data)
    return out


def render(xlsx: Path, png: Path, tmp: Path) -> Path:
    """``soffice --convert-to pdf``, ``pdftoppm -png`` of the first page, cropped to what is
    drawn plus a margin of 12 pixels."""
    subprocess.run(["soffice", "--headless", "--convert-to", "pdf", "--outdir", str(tmp),
                    str(xlsx)], check=True, capture_output=True)
    stem = tmp / xlsx.stem
    subprocess.run(["pdftoppm", "-png", "-r", str(DPI), "-f", "1", "-l", "1", "-singlefile",
                    str(stem.with_suffix(".pdf")), str(stem)], check=True)
    im = Image.open(stem.with_suffix(".png")).convert("RGB")
    box = ImageChops.difference(im, Image.new("RGB", im.size, "white")).getbbox()
    m = 12
    im = im.crop((max(0, box[0] - m), max(0, box[1] - m),
                  min(im.width, box[2] + m), min(im.height, box[3] + m)))
    im.quantize(colors=64).save(png, optimize=True)
    return png


def main(results: Path | None = None) -> None:
    for tool in ("soffice", "pdftoppm"):
        if shutil.which(tool) is None:
            sys.exit(f"error: {tool} not found; this figure needs LibreOffice and poppler-utils")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if results is None:
            results = tmp / "run"
            subprocess.run([sys.executable, "-m", "pyomo_lap.cli", "solve", "-q",
                            "--out", str(results)], check=True)
        xlsx = Path(results) / "results.xlsx"
        for png in (render(channels_copy(xlsx, tmp / "channels.xlsx"),
                           HERE / "workbook_channels.png", tmp),
                    render(speed_chart_copy(xlsx, tmp / "speed_chart.xlsx"),
                           HERE / "workbook_speed_chart.png", tmp)):
            print(f"{png} ({png.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
