"""Giving the memory freed by Python back to the operating system, before the next large step.

glibc's ``malloc`` keeps the memory a process frees in its heap for later allocations; it gives
it back to the operating system only from the top of the heap, and only above a threshold that
grows with the largest blocks freed. The translation of a full lap into the solver's NLP
(:mod:`pyomo_lap.solvers.lap.nlp`) makes and frees hundreds of megabytes of index arrays; left
in the heap they stay in the resident set while IPOPT and MUMPS allocate theirs beside them
(about 160 MB of the peak on a full Nordschleife lap). :func:`release_free_memory` asks glibc to
return every free page (``malloc_trim(0)``: it unmaps the free pages inside the heap as well,
not only its top). It frees nothing in use and changes no result; a few milliseconds.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Optional

__all__ = ["release_free_memory", "resident_set_size"]

_TRIM = None          # glibc's malloc_trim, looked up once (False: not available)


def _malloc_trim():
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                trim = libc.malloc_trim
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
                _TRIM = trim
            except (OSError, AttributeError):   # not glibc (musl, ...): nothing to do
                _TRIM = False
    return _TRIM


def release_free_memory() -> bool:
    """Return the free memory of the process's heap to the operating system (glibc's
    ``malloc_trim(0)``).

    Returns
    -------
    bool
        True when glibc returned memory, False when it had none to return or the C library is
        not glibc (macOS, Windows, musl: nothing is done there).
    """
    trim = _malloc_trim()
    return bool(trim(0)) if trim else False


def resident_set_size() -> Optional[int]:
    """The process's resident set size now [bytes] (``VmRSS`` of ``/proc/self/status``);
    None where there is no ``/proc`` (macOS, Windows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
