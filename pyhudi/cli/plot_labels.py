"""Axis units, legend and panel titles shared by the PNG and HTML renderings of `pyhudi files --plot`.

Both renderers and files_plot.py import these from here, so no renderer imports files_plot (which
imports the renderers): no import cycle.
"""

from __future__ import annotations

from typing import Any

from pyhudi.cli import render
from pyhudi.errors import HudiError

_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024), ("B", 1))


def unit_for(n: float) -> tuple[str, int]:
    """The largest binary unit that keeps `n` at 1 or more, so axes show 12.5 MiB, not 13107200."""
    for name, size in _UNITS:
        if n >= size:
            return name, size
    return "B", 1


def limit_labels(model: dict[str, Any]) -> tuple[str, str]:
    """Legend texts for the two lines, naming where each value came from."""
    lim, hb = model["limits"], render.human_bytes
    small = lim["small_file_limit"]
    small_text = (f"small-file limit {hb(small)}" if small > 0 else "small-file limit 0 (sizing off)") \
        + f" [{lim['small_file_limit_source']}]"
    return small_text, f"max file size {hb(lim['max_file_size'])} [{lim['max_file_size_source']}]"


def panel_subtitle(panel: dict[str, Any]) -> str:
    tot, hb = panel["totals"], render.human_bytes
    well = "-" if tot["well_sized_pct"] is None else f"{tot['well_sized_pct']:.1f}%"
    text = f"{render.plural(tot['base_files'], 'base file')}, {hb(tot['bytes'])}; {well} of bytes well-sized"
    return text + (f"; logs {hb(tot['log_bytes'])}" if tot.get("log_bytes") else "")


def panel_title(panel: dict[str, Any]) -> str:
    shown = panel["instant"] or "no commit"
    if panel["as_of"] is None:
        return f"latest ({shown})"
    return f"as of {panel['as_of']}" + ("" if shown == panel["as_of"] else f" (commit {shown})")


def require_matplotlib() -> Any:
    """matplotlib is the optional extra `plot` (only PNG plots need it): say what to install instead."""
    try:
        import matplotlib
    except ImportError as exc:
        raise HudiError("--plot with a .png file needs matplotlib, which the base install leaves out: "
                        "pip install 'pyhudi[plot]' (or pip install matplotlib); or write .html, which needs "
                        "nothing extra") from exc
    return matplotlib
