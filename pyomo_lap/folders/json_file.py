"""The one reader of the JSON files of a results folder (``summary.json``, the manifest,
``sweep.json``, the units stored in ``trajectory.parquet``): :func:`parse_json` and
:func:`read_json`. Any file that is not UTF-8 JSON, or is nested deeper than the parser can
follow (Python's ``RecursionError``), is bad input: :class:`FolderJSONError`, one line naming
the file, never a traceback.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..util.errors import nested_too_deep

__all__ = ["FolderJSONError", "parse_json", "read_json"]


class FolderJSONError(ValueError):
    """A JSON file of a results folder that cannot be read: one line, ``"<file>: <problem>"``;
    ``problem`` the part after the file's name.

    Parameters
    ----------
    path : str or Path
        The file.
    problem : str
        What is wrong, with what was expected.
    """

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{self.path}: {problem}")


def parse_json(data: bytes | str, path, expected: str = "a JSON object"):
    """The value of the JSON text ``data`` read from ``path``.

    Parameters
    ----------
    data : bytes or str
        The file's content.
    path : str or Path
        The file, for the message.
    expected : str
        What the file should hold, for the message.

    Returns
    -------
    object
        What ``json.loads`` returns.

    Raises
    ------
    FolderJSONError
        Not UTF-8, not valid JSON, or nested too deep.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise FolderJSONError(path, f"is not UTF-8 text; expected {expected}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise FolderJSONError(path, f"is {nested_too_deep(expected)}") from None
    except json.JSONDecodeError as exc:
        raise FolderJSONError(path, f"is not valid JSON (line {exc.lineno} col {exc.colno}): "
                                    f"{exc.msg}; expected {expected}") from None
    except ValueError as exc:      # e.g. an integer of more digits than Python converts
        raise FolderJSONError(path, f"is not valid JSON ({str(exc)[:120]}); expected "
                                    f"{expected}") from None


def read_json(path, expected: str = "a JSON object"):
    """The value of the JSON file ``path`` (:func:`parse_json`).

    Raises
    ------
    FileNotFoundError
        No such file.
    FolderJSONError
        As :func:`parse_json`, or the file cannot be read (an ``OSError`` other than a missing
        file).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FolderJSONError(path, f"cannot be read ({exc.strerror or exc})") from None
    return parse_json(data, path, expected)
