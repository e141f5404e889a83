"""Makes docs/figures/progress.png: captures of a real terminal while ``pyomo-lap solve`` runs
(the default 2 km sector), showing the progress line IPOPT's iterations rewrite in place.

    python docs/figures/make_progress_figure.py

It starts ``bash`` in a detached tmux session of its own (``tmux -L pyomo_lap_fig``, 110 x 30
characters), types ``pyomo-lap solve --length 2000 --out /tmp/pyomo_lap_progress_fig`` and
reads the screen (``tmux capture-pane -p -e``: the text with its escape sequences) every
0.2 s until the run's last line appears. The figure shows the screen of the last capture that
has a progress line showing an iteration before the last (IPOPT working), then each distinct
progress line in the order captured (the run's own output has no escape sequences, so it is
drawn in one colour). Needs tmux (for this figure only); ``pyomo-lap`` is taken from the
folder of this Python.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT_DIR = "/tmp/pyomo_lap_progress_fig"
COMMAND = f"pyomo-lap solve --length 2000 --out {OUT_DIR}"
COLS, ROWS = 110, 30
SOCKET = "pyomo_lap_fig"
SGR = re.compile(r"\x1b\[([0-9;]*)m")
OTHER_ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-ln-z]|\x1b[()][0-9A-Za-z]")
PALETTE = {30: "#3b3b3b", 31: "#f07178", 32: "#c3e88d", 33: "#ffcb6b", 34: "#82aaff",
           35: "#c792ea", 36: "#89ddff", 37: "#d0d0d0"}
FG, BG = "#d0d0d0", "#1c1c1c"


def capture(period_s: float = 0.2, timeout_s: float = 180.0) -> list[str]:
    """The screens (text with escape sequences) captured every ``period_s`` while the command
    runs in a detached tmux session; ends at the line ``sector time`` or after ``timeout_s``."""
    tmux = ["tmux", "-L", SOCKET]
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    shell = (f"env PS1='$ ' PYTHONPATH={REPO} PATH={Path(sys.executable).parent}:"
             f"{os.environ['PATH']} bash --norc --noprofile")
    subprocess.run(tmux + ["new-session", "-d", "-s", "fig", "-x", str(COLS), "-y", str(ROWS),
                           shell], check=True)
    frames = []
    try:
        time.sleep(0.5)
        subprocess.run(tmux + ["send-keys", "-t", "fig", f"cd /tmp && {COMMAND}", "Enter"],
                       check=True)
        t_end = time.monotonic() + timeout_s
        while time.monotonic() < t_end:
            time.sleep(period_s)
            frames.append(subprocess.run(tmux + ["capture-pane", "-p", "-e", "-t", "fig"],
                                         check=True, capture_output=True, text=True).stdout)
            if "sector time" in frames[-1]:
                break
    finally:
        subprocess.run(tmux + ["kill-server"], check=False)
    return frames


def runs(line: str) -> list[tuple[int, str, str, bool]]:
    """A captured line as ``(column, text, colour, bold)`` runs, from its SGR sequences (the
    foreground colours 30-37 and 90-97, bold, reset); other escape sequences dropped."""
    line = OTHER_ESC.sub("", line)
    out, col, colour, bold, pos = [], 0, FG, False, 0
    for m in list(SGR.finditer(line)) + [None]:
        text = line[pos:m.start() if m else len(line)]
        if text:
            out.append((col, text, colour, bold))
            col += len(text)
        if m is None:
            break
        pos = m.end()
        for code in [int(c) for c in m.group(1).split(";") if c] or [0]:
            if code == 0:
                colour, bold = FG, False
            elif code == 1:
                bold = True
            elif code in PALETTE or code - 60 in PALETTE:
                colour = PALETTE[code if code in PALETTE else code - 60]
            elif code == 39:
                colour = FG
    return out


def draw(screen: list[str], lines: list[str], png: Path) -> None:
    """The screen, a gap, then ``lines``: monospace text on a dark background, one character
    cell 0.602 x 1.3 em of an 8.5-point font."""
    body = screen + ["", "the same line in successive captures (rewritten in place; the last "
                         "stays when IPOPT ends):"] + lines
    pt, cw, lh = 8.5, 0.602, 1.3
    w_in, h_in = (COLS + 2) * cw * pt / 72, (len(body) + 1) * lh * pt / 72
    fig = plt.figure(figsize=(w_in, h_in), dpi=140, facecolor=BG)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(-1, COLS + 1)
    ax.set_ylim(len(body) + 0.5, -0.5)
    ax.axis("off")
    for i, line in enumerate(body):
        for col, text, colour, bold in runs(line):
            ax.text(col, i + 0.5, text, family="DejaVu Sans Mono", size=pt, va="baseline",
                    color="#8fa1b3" if i == len(screen) + 1 else colour,
                    weight="bold" if bold else "normal")
    ax.axhline(len(screen) + 0.2, color="#555555", lw=0.8)
    fig.savefig(png, facecolor=BG)
    plt.close(fig)


def main(png: Path = HERE / "progress.png") -> None:
    if shutil.which("tmux") is None:
        sys.exit("error: tmux not found; this figure needs tmux (Debian: apt-get install tmux)")
    frames = capture()
    working = [f for f in frames if "IPOPT iteration" in f and "optimal (" not in f]
    if not working:
        sys.exit(f"error: no capture of the {len(frames)} showed IPOPT working; run it again")
    def line(frame):
        return next(x for x in frame.split("\n") if "IPOPT iteration" in x)
    middle = [f for f in working if line(f) != line(frames[-1])] or working
    screen = middle[-1].rstrip("\n").split("\n")
    while screen and not screen[-1].strip():
        screen.pop()
    progress = []
    for f in working + frames[-1:]:
        if line(f) not in progress:
            progress.append(line(f))
    draw(screen, progress, png)
    print(f"{png} ({png.stat().st_size // 1024} KB; {len(frames)} captures, "
          f"{len(working)} while IPOPT worked)")


if __name__ == "__main__":
    main()
