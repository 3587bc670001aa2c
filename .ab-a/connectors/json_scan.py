"""Single-edge JSON objects with integer ids, scanned by a compiled kernel.

The common message of an edge stream is one edge as a one-line JSON object,
``{"op":"+","src":1,"dst":2}`` (or with blanks after ``:`` and ``,``, as ``json.dumps`` writes it).
:func:`scan_edge_objects` reads a whole fetch of such messages from their joined bytes in one
compiled pass (Numba, no Python work per message, the GIL released), about ten times faster than
pyarrow's JSON reader on these short lines.

It accepts a message only in this strict form, where the per-message parser
(:func:`connectors.records.parse_message`) is known to give the same edge:

- ``{``, then members separated by ``,``, then ``}``, nothing before or after; spaces (only)
  around the separators;
- member names exactly ``"src"``, ``"dst"`` and ``"op"`` (no escapes), each at most once, src and
  dst present;
- src and dst JSON integers of 1 to 18 digits without a sign or a leading zero (so 0 <= id < 2^63);
- op ``"+"``, ``"-"``, ``"insert"``, ``"delete"`` (lower case), ``1`` or ``-1``; absent: insert.

Anything else (other members, strings of digits, nulls, other op spellings, bad JSON) is left to
the general decoders, which accept or reject it exactly as the per-message parser would, with
its reason. So the scan only makes the common case fast; it never decides a rejection.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_SPACE, _QUOTE, _COMMA, _COLON, _LBRACE, _RBRACE, _MINUS, _ZERO = 32, 34, 44, 58, 123, 125, 45, 48
#: Most digits of an id taken here (10^18 - 1 < 2^63 - 1); longer ones go to the general decoders.
_MAX_DIGITS = 18


@njit(cache=True, nogil=True, inline="always")
def _skip_spaces(buf, p, end):
    while p < end and buf[p] == _SPACE:
        p += 1
    return p


@njit(cache=True, nogil=True, inline="always")
def _is(buf, p, end, a, b, c, d):
    """Whether the (up to) four bytes at ``p`` are ``a b c d`` (``d`` < 0: three bytes)."""
    if d < 0:
        return p + 3 <= end and buf[p] == a and buf[p + 1] == b and buf[p + 2] == c
    return p + 4 <= end and buf[p] == a and buf[p + 1] == b and buf[p + 2] == c and buf[p + 3] == d


@njit(cache=True, nogil=True, inline="always")
def _member_name(buf, p, end):
    """``(0 src / 1 dst / 2 op, position after the closing quote)``, or ``(-1, -1)``."""
    if p >= end or buf[p] != _QUOTE:
        return -1, -1
    if _is(buf, p + 1, end, 115, 114, 99, _QUOTE):    # src"
        return 0, p + 5
    if _is(buf, p + 1, end, 100, 115, 116, _QUOTE):   # dst"
        return 1, p + 5
    if _is(buf, p + 1, end, 111, 112, _QUOTE, -1):    # op"
        return 2, p + 4
    return -1, -1


@njit(cache=True, nogil=True, inline="always")
def _id(buf, p, end):
    """``(value, position after the digits)`` of an unsigned JSON integer, or ``(-1, -1)``."""
    v = 0
    q = p
    while q < end and 48 <= buf[q] <= 57 and q - p < _MAX_DIGITS + 1:
        v = v * 10 + (buf[q] - 48)
        q += 1
    n = q - p
    if n == 0 or n > _MAX_DIGITS or (n > 1 and buf[p] == _ZERO):
        return -1, -1
    return v, q


@njit(cache=True, nogil=True, inline="always")
def _op(buf, p, end):
    """``(1 insert / 0 delete, position after the value)``, or ``(-1, -1)``."""
    if p >= end:
        return -1, -1
    c = buf[p]
    if c == 49:                                        # 1
        return 1, p + 1
    if c == _MINUS:                                    # -1
        return (0, p + 2) if p + 2 <= end and buf[p + 1] == 49 else (-1, -1)
    if c != _QUOTE:
        return -1, -1
    if p + 3 <= end and buf[p + 1] == 43 and buf[p + 2] == _QUOTE:        # "+"
        return 1, p + 3
    if p + 3 <= end and buf[p + 1] == _MINUS and buf[p + 2] == _QUOTE:    # "-"
        return 0, p + 3
    if _is(buf, p + 1, end, 105, 110, 115, 101) and _is(buf, p + 5, end, 114, 116, _QUOTE, -1):  # "insert"
        return 1, p + 8
    if _is(buf, p + 1, end, 100, 101, 108, 101) and _is(buf, p + 5, end, 116, 101, _QUOTE, -1):  # "delete"
        return 0, p + 8
    return -1, -1


@njit(cache=True, nogil=True)
def _scan(buf, starts, lens, max_bytes, ok, src, dst, ins):
    for m in range(starts.shape[0]):
        p = starts[m]
        end = p + lens[m]
        if lens[m] > max_bytes or lens[m] < 2 or buf[p] != _LBRACE or buf[end - 1] != _RBRACE:
            continue
        p += 1
        seen = 0
        s = -1
        d = -1
        insert = 1
        good = False
        while True:
            p = _skip_spaces(buf, p, end)
            which, p = _member_name(buf, p, end)
            if which < 0 or seen & (1 << which):
                break
            seen |= 1 << which
            p = _skip_spaces(buf, p, end)
            if p >= end or buf[p] != _COLON:
                break
            p = _skip_spaces(buf, p + 1, end)
            if which == 0:
                s, p = _id(buf, p, end)
            elif which == 1:
                d, p = _id(buf, p, end)
            else:
                insert, p = _op(buf, p, end)
            if p < 0:
                break
            p = _skip_spaces(buf, p, end)
            if p >= end:
                break
            if buf[p] == _COMMA:
                p += 1
                continue
            good = buf[p] == _RBRACE and p == end - 1 and (seen & 3) == 3
            break
        if good:
            ok[m] = True
            src[m] = s
            dst[m] = d
            ins[m] = insert == 1


def scan_edge_objects(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, *, max_bytes: int):
    """Scan the messages ``buf[starts[i] : starts[i] + lens[i]]`` as single-edge JSON objects.

    Parameters
    ----------
    buf : ndarray of uint8
        The messages' bytes (for example newline-joined).
    starts, lens : ndarray of int64
        Where each message lies in ``buf``.
    max_bytes : int
        Longer messages are left to the general decoders (which reject them as ``oversize``).

    Returns
    -------
    ok : ndarray of bool
        The messages taken here (the strict form of the module docs).
    src, dst : ndarray of int64
        Their ids (undefined where not ``ok``).
    insert : ndarray of bool
    """
    n = starts.shape[0]
    ok = np.zeros(n, dtype=np.bool_)
    src = np.zeros(n, dtype=np.int64)
    dst = np.zeros(n, dtype=np.int64)
    ins = np.zeros(n, dtype=np.bool_)
    if n:
        _scan(buf, np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(lens, dtype=np.int64),
              int(max_bytes), ok, src, dst, ins)
    return ok, src, dst, ins
