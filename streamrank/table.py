"""Plain-text tables for the command line."""

from __future__ import annotations


def _fmt(v) -> str:
    if v is None:  # a figure that does not apply to the row
        return "-"
    if isinstance(v, float):
        if v != v:
            return "-"
        if v == 0:
            return "0"
        if abs(v) >= 1e4 or abs(v) < 1e-3:
            return f"{v:.2e}"
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def format_table(rows: list, columns: list) -> str:
    """Render ``rows`` (dicts) as an aligned table of ``columns`` ((key, header) pairs)."""
    cells = [[h for _, h in columns]] + [[_fmt(r.get(k, "-")) for k, _ in columns] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = ["  ".join(c[i].rjust(widths[i]) for i in range(len(columns))) for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
