"""An input file with every problem listed at once: :class:`FileProblemsError`, the base of
the vehicle files' and the arc-track files' errors."""
from __future__ import annotations

import sys

__all__ = ["FileProblemsError", "nested_too_deep"]


class FileProblemsError(ValueError):
    """A file that cannot be used; ``problems`` lists one line per problem (each naming the
    key, the value and what was expected). The message names the file as ``kind`` (a class
    attribute: "vehicle file", "arc track file") and lists the problems.

    Parameters
    ----------
    path : str or Path
    problems : list of str
    """

    kind = "file"

    def __init__(self, path, problems: list):
        self.path = str(path)
        self.problems = list(problems)
        if len(self.problems) == 1:
            msg = f"{self.kind} {self.path}: {self.problems[0]}"
        else:
            msg = (f"{self.kind} {self.path}: {len(self.problems)} problems:\n"
                   + "\n".join(f"  - {p}" for p in self.problems))
        super().__init__(msg)


def nested_too_deep(expected: str) -> str:
    """The problem of a JSON or TOML file whose arrays or tables are nested deeper than the
    parser can follow (Python's ``RecursionError``, about a thousand levels): one phrase, with
    the structure that was ``expected``.

    Parameters
    ----------
    expected : str
        The file's expected structure, e.g. ``'{"pts": [{"lat", "lon", "elev"}, ...]}'``.
    """
    return (f"nested too deep to read (more than about {sys.getrecursionlimit()} levels of "
            f"[ ] or {{ }}); expected {expected}")
