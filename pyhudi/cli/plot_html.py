"""HTML rendering of a files_plot model: one self-contained page, inline SVG, no scripts, no network.

Written by hand rather than through matplotlib so the page needs nothing
beyond the standard library, opens anywhere (a CI artifact, an air-gapped
cluster) and stays small; every bar carries a tooltip with its exact numbers,
and a table under the charts lists the figures per panel for copying.
"""

from __future__ import annotations

import html
import math
from typing import Any

from pyhudi.cli import plot_labels, render

W, H = 520, 330
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 14, 46
BASE_COLOR, LOG_COLOR = "#4C72B0", "#DD8452"
LIMIT_COLOR, MAX_COLOR, BAND_COLOR = "#C44E52", "#8B1A1A", "#55A868"

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 0 0 2px; }
p.sub, p.note { margin: 0 0 8px; color: #555; font-size: 13px; }
.panels { display: flex; flex-wrap: wrap; gap: 18px; margin: 12px 0; }
.panel { border: 1px solid #ddd; border-radius: 6px; padding: 10px; }
.legend span { display: inline-block; margin-right: 16px; font-size: 13px; }
.sw { display: inline-block; width: 12px; height: 12px; margin-right: 5px; vertical-align: -1px; }
table { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
svg text { font-size: 11px; fill: #333; }
"""


def write(model: dict[str, Any], out: str) -> None:
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(page(model))


def page(model: dict[str, Any]) -> str:
    tbl, esc = model["table"], html.escape
    where = f", partition {model['partition']}" if model.get("partition") else ""
    title = f"{tbl['name']}: base file sizes"
    panels = model["panels"]
    tallest = max((b["base_bytes"] + b["log_bytes"] for p in panels for b in p["bins"]), default=0)
    body = [f"<h1>{esc(title)}</h1>",
            f"<p class=\"sub\">{esc(tbl['path'])} ({esc(tbl['type'])}{esc(where)}): latest base files of live "
            "file groups; bars are bytes (labels: number of base files)</p>",
            _legend(model), "<div class=\"panels\">"]
    body += [_panel(model, p, tallest) for p in panels]
    body += ["</div>", _numbers(model)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def _legend(model: dict[str, Any]) -> str:
    small_text, max_text = plot_labels.limit_labels(model)
    items = [(BASE_COLOR, "base file bytes"), (BAND_COLOR, "well-sized [limit, 1.1x max]"),
             (LIMIT_COLOR, small_text), (MAX_COLOR, max_text)]
    if any(b["log_bytes"] for p in model["panels"] for b in p["bins"]):
        items.insert(1, (LOG_COLOR, "log file bytes"))
    spans = "".join(f"<span><i class=\"sw\" style=\"background:{c}\"></i>{html.escape(t)}</span>" for c, t in items)
    return f"<p class=\"legend\">{spans}</p>"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2 or 5 x 10^k) up to at least `top`: axis labels people can read."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(top / step - 1e-9)) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.0f}" if v == int(v) else f"{v:g}"


def _panel(model: dict[str, Any], panel: dict[str, Any], tallest: int) -> str:
    esc = html.escape
    svg = _svg(model, panel, tallest)
    return (f"<section class=\"panel\" data-as-of=\"{esc(panel['label'])}\" "
            f"data-instant=\"{esc(panel['instant'] or '')}\">"
            f"<h2>{esc(plot_labels.panel_title(panel))}</h2>"
            f"<p class=\"sub\">{esc(plot_labels.panel_subtitle(panel))}</p>{svg}</section>")


def _svg(model: dict[str, Any], panel: dict[str, Any], tallest: int) -> str:
    bins, lim = panel["bins"], model["limits"]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    x_unit, x_div = plot_labels.unit_for(lim["max_file_size"])
    y_unit, y_div = plot_labels.unit_for(tallest)
    x_top = bins[-1]["hi"]
    y_ticks = nice_ticks(tallest * 1.1 / y_div)
    y_top = y_ticks[-1] * y_div

    def x(v: float) -> float:
        return LEFT + pw * v / x_top

    def y(v: float) -> float:
        return TOP + ph - ph * v / y_top

    small, max_size = lim["small_file_limit"], lim["max_file_size"]
    parts = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" "
             "role=\"img\">",
             _rect(x(small), TOP, x(min(max_size * 1.1, x_top)) - x(small), ph, BAND_COLOR, 0.13, None)]
    for b in bins:
        parts += _bar(b, x, y)
    for v in y_ticks:
        parts.append(f"<line x1=\"{LEFT - 4}\" x2=\"{LEFT}\" y1=\"{y(v * y_div):.1f}\" y2=\"{y(v * y_div):.1f}\" "
                     "stroke=\"#444\"/>")
        parts.append(f"<text x=\"{LEFT - 6}\" y=\"{y(v * y_div) + 4:.1f}\" text-anchor=\"end\">{_fmt(v)}</text>")
    for v in nice_ticks(x_top / x_div, 6):
        if v * x_div > x_top:
            break
        parts.append(f"<line x1=\"{x(v * x_div):.1f}\" x2=\"{x(v * x_div):.1f}\" y1=\"{TOP + ph}\" "
                     f"y2=\"{TOP + ph + 4}\" stroke=\"#444\"/>")
        parts.append(f"<text x=\"{x(v * x_div):.1f}\" y=\"{TOP + ph + 16}\" text-anchor=\"middle\">{_fmt(v)}</text>")
    if small > 0:
        parts.append(_vline(x(small), LIMIT_COLOR, "5,4"))
    parts.append(_vline(x(max_size), MAX_COLOR, None))
    parts += [f"<line x1=\"{LEFT}\" x2=\"{LEFT + pw}\" y1=\"{TOP + ph}\" y2=\"{TOP + ph}\" stroke=\"#444\"/>",
              f"<line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{TOP + ph}\" stroke=\"#444\"/>",
              f"<text x=\"{LEFT + pw / 2}\" y=\"{H - 8}\" text-anchor=\"middle\">base file size ({x_unit})</text>",
              f"<text x=\"14\" y=\"{TOP + ph / 2}\" text-anchor=\"middle\" "
              f"transform=\"rotate(-90 14 {TOP + ph / 2})\">bytes stored ({y_unit})</text>", "</svg>"]
    return "".join(parts)


def _bar(b: dict[str, int], x: Any, y: Any) -> list[str]:
    total = b["base_bytes"] + b["log_bytes"]
    if not total and not b["files"]:
        return []
    hb = render.human_bytes
    tip = (f"{hb(b['lo'])} .. {hb(b['hi'])}: {render.plural(b['files'], 'base file')}, {hb(b['base_bytes'])}"
           + (f", log files {hb(b['log_bytes'])}" if b["log_bytes"] else ""))
    left, width = x(b["lo"]) + 0.5, max(1.0, x(b["hi"]) - x(b["lo"]) - 1.0)
    out = [_rect(left, y(b["base_bytes"]), width, y(0) - y(b["base_bytes"]), BASE_COLOR, 1.0, tip)]
    if b["log_bytes"]:
        out.append(_rect(left, y(total), width, y(b["base_bytes"]) - y(total), LOG_COLOR, 1.0, tip))
    if b["files"]:
        out.append(f"<text x=\"{left + width / 2:.1f}\" y=\"{y(total) - 3:.1f}\" text-anchor=\"middle\">"
                   f"{b['files']}</text>")
    return out


def _rect(left: float, top: float, width: float, height: float, color: str, opacity: float,
          tip: str | None) -> str:
    title = f"<title>{html.escape(tip)}</title>" if tip else ""
    return (f"<rect x=\"{left:.1f}\" y=\"{top:.1f}\" width=\"{max(0.0, width):.1f}\" height=\"{max(0.0, height):.1f}\" "
            f"fill=\"{color}\" fill-opacity=\"{opacity}\">{title}</rect>")


def _vline(at: float, color: str, dash: str | None) -> str:
    dashes = f" stroke-dasharray=\"{dash}\"" if dash else ""
    return (f"<line x1=\"{at:.1f}\" x2=\"{at:.1f}\" y1=\"{TOP}\" y2=\"{H - BOTTOM}\" stroke=\"{color}\" "
            f"stroke-width=\"1.5\"{dashes}/>")


def _numbers(model: dict[str, Any]) -> str:
    """The figures behind the charts, one column per panel, exact bytes next to readable ones."""
    esc, hb = html.escape, render.human_bytes
    panels, lim = model["panels"], model["limits"]

    def size(n: int) -> str:
        return f"{hb(n)} ({n:,} B)"

    rows: list[tuple[str, list[str]]] = [
        ("as of", [p["label"] for p in panels]),
        ("newest commit seen", [p["instant"] or "-" for p in panels]),
        ("live file groups", [str(p["totals"]["live_file_groups"]) for p in panels]),
        ("base files", [str(p["totals"]["base_files"]) for p in panels]),
        ("base bytes", [size(p["totals"]["bytes"]) for p in panels]),
        ("log bytes", [size(p["totals"]["log_bytes"]) for p in panels]),
        ("small files (< limit)", [str(p["totals"]["small_files"]) for p in panels]),
        ("ideal file count", [str(p["totals"]["ideal_file_count"]) for p in panels]),
        ("bytes in well-sized files", [size(p["totals"]["well_sized_bytes"]) for p in panels]),
        ("% of bytes well-sized", ["-" if p["totals"]["well_sized_pct"] is None
                                   else f"{p['totals']['well_sized_pct']:.1f}%" for p in panels]),
    ]
    for i, bucket in enumerate(panels[0]["histogram"]):
        rows.append((f"files {bucket['label']} ({bucket['range']})",
                     [str(p["histogram"][i]["files"]) for p in panels]))
    head = "".join(f"<th>{esc(p['label'])}</th>" for p in panels)
    body = "".join(f"<tr><td>{esc(name)}</td>" + "".join(f"<td>{esc(v)}</td>" for v in values) + "</tr>"
                   for name, values in rows)
    limits = (f"small-file limit (hoodie.parquet.small.file.limit): {size(lim['small_file_limit'])} "
              f"[{lim['small_file_limit_source']}]; max file size (hoodie.parquet.max.file.size): "
              f"{size(lim['max_file_size'])} [{lim['max_file_size_source']}]")
    return (f"<h2>Numbers</h2><p class=\"note\">{esc(limits)}</p>"
            f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>")
