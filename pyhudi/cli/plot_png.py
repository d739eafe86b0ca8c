"""PNG rendering of a files_plot model with matplotlib.

Uses a bare `Figure` on the Agg canvas rather than pyplot: no global backend
switch, no display needed, nothing left behind in a long-lived process (a
notebook calling the CLI's main). All panels share bins and the y axis, so
before/after panels compare at a glance.
"""

from __future__ import annotations

from typing import Any

from pyhudi.cli import plot_labels

BASE_COLOR = "#4C72B0"
LOG_COLOR = "#DD8452"
LIMIT_COLOR = "#C44E52"
MAX_COLOR = "#8B1A1A"
BAND_COLOR = "#55A868"


def write(model: dict[str, Any], out: str) -> None:
    plot_labels.require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = model["panels"]
    fig = Figure(figsize=(min(6.0 * len(panels), 30.0), 4.8), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    x_unit, x_div = plot_labels.unit_for(model["limits"]["max_file_size"])
    tallest = max((b["base_bytes"] + b["log_bytes"] for p in panels for b in p["bins"]), default=0)
    y_unit, y_div = plot_labels.unit_for(tallest)
    for i, (ax, panel) in enumerate(zip(axes, panels, strict=True)):
        _draw_panel(ax, model, panel, x_div, y_div)
        ax.set_xlabel(f"base file size ({x_unit})")
        if i == 0:
            ax.set_ylabel(f"bytes stored ({y_unit}); labels: base files")
    legend: dict[str, Any] = {}
    for ax in axes:  # log bars may exist in some panels only
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="outside lower center", ncols=min(5, len(legend)),
               fontsize="small")
    tbl = model["table"]
    where = f", partition {model['partition']}" if model.get("partition") else ""
    fig.suptitle(f"{tbl['name']} ({tbl['type']}{where}): latest base file sizes of live file groups")
    fig.savefig(out, format="png")


def _draw_panel(ax: Any, model: dict[str, Any], panel: dict[str, Any], x_div: int, y_div: int) -> None:
    bins, lim = panel["bins"], model["limits"]
    width = (bins[0]["hi"] - bins[0]["lo"]) / x_div
    lefts = [b["lo"] / x_div for b in bins]
    base = [b["base_bytes"] / y_div for b in bins]
    ax.bar(lefts, base, width=width, align="edge", color=BASE_COLOR, edgecolor="white", linewidth=0.5,
           label="base file bytes")
    if any(b["log_bytes"] for b in bins):
        ax.bar(lefts, [b["log_bytes"] / y_div for b in bins], width=width, bottom=base, align="edge",
               color=LOG_COLOR, edgecolor="white", linewidth=0.5, label="log file bytes")
    for b, left in zip(bins, lefts, strict=True):
        if b["files"]:
            ax.annotate(str(b["files"]), (left + width / 2, (b["base_bytes"] + b["log_bytes"]) / y_div),
                        ha="center", va="bottom", fontsize=7, xytext=(0, 1), textcoords="offset points")
    small_text, max_text = plot_labels.limit_labels(model)
    small, max_size = lim["small_file_limit"], lim["max_file_size"]
    ax.axvspan(small / x_div, max_size * 1.1 / x_div, color=BAND_COLOR, alpha=0.12,
               label="well-sized [limit, 1.1x max]")
    if small > 0:
        ax.axvline(small / x_div, color=LIMIT_COLOR, linestyle="--", linewidth=1.2, label=small_text)
    ax.axvline(max_size / x_div, color=MAX_COLOR, linestyle="-", linewidth=1.2, label=max_text)
    ax.set_xlim(0, bins[-1]["hi"] / x_div)
    ax.set_title(f"{plot_labels.panel_title(panel)}\n{plot_labels.panel_subtitle(panel)}", fontsize=9)
    ax.margins(y=0.12)
