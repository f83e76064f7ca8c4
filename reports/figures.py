"""Drawing a chart (``reports.charts.Chart``) as SVG or PNG, server-side with matplotlib.

Why server-side matplotlib: the site's CSP forbids inline scripts and ``eval``, and a picture drawn on the server
is the same file on the page, in the SVG download and in the PNG download, with no JavaScript charting library
to vendor and keep CSP-safe. Charts are drawn to be read without colour: values are written in heatmap cells,
significant cells are outlined and starred, undefined cells are hatched and say "n/a", and series differ by
marker and hatch as well as by colour (a colour-blind-safe palette). Imported only by the chart download view,
so web workers that never draw a chart never load matplotlib.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TypeGuard

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller files, selectable and searchable

from matplotlib.axes import Axes  # noqa: E402 - after choosing the backend
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from reports.charts import Chart  # noqa: E402

# Okabe–Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
HATCHES = ["", "//", "..", "xx", "\\\\", "++", "oo", "--"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
SVG_SALT = "cab-figure"


def render(chart: Chart, fmt: str, metadata: Mapping[str, str] | None = None) -> bytes:
    """The chart as an SVG or PNG file (``fmt`` one of FORMATS), saying ``metadata`` of itself (a download's
    provenance: ``common.provenance.figure_metadata``)."""
    return save(draw(chart), fmt, metadata)


def save(figure: Figure, fmt: str, metadata: Mapping[str, str] | None = None) -> bytes:
    """A drawn figure as an SVG or PNG file. The figure's constrained layout already fits every label, legend and
    (wrapped) title inside it, so it is drawn once: ``bbox_inches="tight"`` would draw it twice to measure it."""
    out = io.BytesIO()
    # No creation date in the metadata: the same chart of the same run is the same file.
    said: dict[str, str | None] = {"Date": None} if fmt == "svg" else {}
    # and a fixed salt for the SVG's element ids (random by default), unless the caller chose one (reports.bundle)
    with matplotlib.rc_context({"svg.hashsalt": matplotlib.rcParams["svg.hashsalt"] or SVG_SALT}):
        figure.savefig(out, format=fmt, dpi=150, metadata={**said, **(metadata or {})})
    return out.getvalue()


def draw(chart: Chart) -> Figure:
    drawers = {"bars": _bars, "heatmap": _heatmap, "lines": _lines, "intervals": _intervals,
               "class_lines": _class_lines, "scatter": _scatter}
    figure = drawers[chart.kind](chart)
    if chart.spec.get("sessions"):
        _sessions_axis(figure, int(chart.spec["sessions"]))
    return figure


def _sessions_axis(figure: Figure, sessions: int) -> None:
    """A trajectory over sessions: whole sessions on the x axis, the reference line (the first, labelled
    "reference (…)") drawn bold and black, and named in the legend."""
    axes = figure.axes[0]
    axes.set_xticks(range(1, sessions + 1))
    if axes.lines and str(axes.lines[0].get_label()).startswith("reference ("):
        axes.lines[0].set_linewidth(2.6)
        axes.lines[0].set_color("#000000")
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # the legend shows it too


def _defined(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))


def _figure(width: float, height: float, title: str) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots()
    axes.set_title(title, loc="left", fontsize=11, wrap=True)  # a long title takes two lines, never the cut edge
    return figure, axes


def _label_room(labels: Sequence[str], rotation: int) -> float:
    """The height (inches) tick labels at 8 pt need beyond the 0.6 in every figure's height already leaves them: a
    named code ("Directiveness (D)") turned on its side is longer than its code, and without the room the
    constrained layout would collapse a one-row heatmap's axes to nothing."""
    longest = max((len(str(label)) for label in labels), default=0)
    per_character = {90: 0.075, 45: 0.055}.get(rotation, 0.0)
    return max(0.0, per_character * longest - 0.6)


def _bars(chart: Chart) -> Figure:
    """Grouped bars: one group per category, one bar per series; optional (low, high) error bars."""
    spec = chart.spec
    categories: Sequence[str] = spec["categories"]
    series: dict[str, Sequence[float | None]] = spec["series"]
    intervals: dict[str, Sequence[tuple[float | None, float | None] | None]] = spec.get("intervals", {})
    turned = len(categories) > 6 or max((len(str(c)) for c in categories), default=0) > 14
    figure, axes = _figure(min(11.0, max(6.0, 0.3 * len(categories) * max(1, len(series)) + 2)),
                           3.6 + _label_room(categories, 45 if turned else 0), chart.title)
    width = 0.8 / max(1, len(series))
    for s, (name, values) in enumerate(series.items()):
        xs = [i + (s - (len(series) - 1) / 2) * width for i in range(len(categories))]
        heights = [v if _defined(v) else 0.0 for v in values]
        bars = axes.bar(xs, heights, width=width * 0.95, label=name, color=PALETTE[s % len(PALETTE)],
                        hatch=HATCHES[s % len(HATCHES)], edgecolor="#333333", linewidth=0.5)
        for bar, value in zip(bars, values, strict=True):
            if not _defined(value):
                axes.annotate("n/a", (bar.get_x() + bar.get_width() / 2, 0), ha="center", va="bottom", fontsize=7)
        ranges = intervals.get(name)
        if ranges:
            for x, value, pair in zip(xs, values, ranges, strict=True):
                if pair and _defined(value) and _defined(pair[0]) and _defined(pair[1]):
                    # An interval reaching the bound can miss the estimate by a rounding error: never below 0.
                    below, above = max(0.0, value - pair[0]), max(0.0, pair[1] - value)
                    axes.errorbar([x], [value], yerr=[[below], [above]], fmt="none",
                                  ecolor="#000000", capsize=3, linewidth=1)
    axes.set_xticks(range(len(categories)), categories, rotation=45 if turned else 0,
                    ha="right" if turned else "center", fontsize=8)
    axes.set_ylabel(spec.get("ylabel", ""))
    if spec.get("ylim"):
        axes.set_ylim(*spec["ylim"])
    if len(series) > 1:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(axis="y", linewidth=0.3)
    return figure


def _heatmap(chart: Chart) -> Figure:
    """A matrix with every value written in its cell; ``outlined`` cells get a thick border and a star,
    undefined cells are hatched grey with "n/a"."""
    spec = chart.spec
    rows: Sequence[str] = spec["rows"]
    columns: Sequence[str] = spec["columns"]
    values: Sequence[Sequence[float | None]] = spec["values"]
    outlined = {tuple(cell) for cell in spec.get("outlined", ())}
    vmin, vmax = spec.get("vmin", 0.0), spec.get("vmax", 1.0)
    turned = len(columns) > 8 or max((len(str(c)) for c in columns), default=0) > 6
    figure, axes = _figure(max(5.0, 0.55 * len(columns) + 2.5),
                           max(2.5, 0.42 * len(rows) + 1.5) + _label_room(columns, 90 if turned else 0), chart.title)
    if not rows or not columns:  # no cell (no model yet, or the filter leaves none): an empty frame, as bars draw
        axes.text(0.5, 0.5, "n/a", ha="center", va="center", transform=axes.transAxes)
        axes.set_xticks([])
        axes.set_yticks([])
        return figure
    grid = [[v if _defined(v) else math.nan for v in row] for row in values]
    image = axes.imshow(grid, cmap=spec.get("cmap", "RdBu_r" if vmin < 0 else "viridis"), vmin=vmin, vmax=vmax,
                        aspect="auto")
    figure.colorbar(image, ax=axes, shrink=0.8, label=spec.get("label", ""))
    number = spec.get("number_format", "{:.2f}")
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            if not _defined(value):
                axes.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#dddddd", hatch="///",
                                         edgecolor="#999999", linewidth=0))
                axes.text(j, i, "n/a", ha="center", va="center", fontsize=6, color="#333333")
                continue
            star = "*" if (i, j) in outlined else ""
            axes.text(j, i, number.format(value) + star, ha="center", va="center", fontsize=6.5,
                      color=_ink(value, vmin, vmax), fontweight="bold" if star else "normal")
            if star:
                axes.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#000000", linewidth=2.2))
    axes.set_xticks(range(len(columns)), columns, rotation=90 if turned else 0, fontsize=8)
    axes.set_yticks(range(len(rows)), rows, fontsize=8)
    return figure


def _ink(value: float, vmin: float, vmax: float) -> str:
    """Text colour readable on the cell: dark on the light middle of the scale, light on its ends."""
    share = (value - vmin) / (vmax - vmin) if vmax > vmin else 0.5
    if vmin < 0:
        return "#000000" if 0.25 < share < 0.75 else "#ffffff"
    return "#000000" if share > 0.55 else "#ffffff"


def _lines(chart: Chart) -> Figure:
    """One line per series over an x axis; series differ by marker and dash as well as colour."""
    spec = chart.spec
    figure, axes = _figure(7.0, 3.8, chart.title)
    dashes = ["-", "--", "-.", ":"]
    for s, (name, points) in enumerate(spec["series"].items()):
        defined = [(x, y) for x, y in points if _defined(y)]
        if not defined:
            continue
        xs, ys = zip(*defined, strict=True)
        axes.plot(xs, ys, label=name, color=PALETTE[s % len(PALETTE)], marker=MARKERS[s % len(MARKERS)],
                  linestyle=dashes[s % len(dashes)], linewidth=1.2, markersize=4)
    axes.set_xlabel(spec.get("xlabel", ""))
    axes.set_ylabel(spec.get("ylabel", ""))
    if spec.get("hline") is not None:
        axes.axhline(spec["hline"], color="#666666", linewidth=0.8)
    if spec["series"]:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(linewidth=0.3)
    return figure


CLASS_STYLE = {"escalating": (PALETTE[5], "-"), "flat": (PALETTE[0], ":"), "de-escalating": (PALETTE[2], "--"),
               "undefined": ("#888888", "-.")}


def _class_lines(chart: Chart) -> Figure:
    """Many thin lines, one per conversation; colour and dash say the line's class; the legend lists classes."""
    spec = chart.spec
    figure, axes = _figure(7.0, 3.8, chart.title)
    labelled: set[str] = set()
    for line in spec["lines"]:
        defined = [(x, y) for x, y in line["points"] if _defined(y)]
        if not defined:
            continue
        xs, ys = zip(*defined, strict=True)
        colour, dash = CLASS_STYLE.get(line["class"], CLASS_STYLE["undefined"])
        label = line["class"] if line["class"] not in labelled else None
        labelled.add(line["class"])
        axes.plot(xs, ys, color=colour, linestyle=dash, linewidth=0.9, alpha=0.75, marker=".", markersize=3,
                  label=label)
    axes.set_xlabel(spec.get("xlabel", ""))
    axes.set_ylabel(spec.get("ylabel", ""))
    if spec.get("ylim"):
        axes.set_ylim(*spec["ylim"])
    if labelled:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(linewidth=0.3)
    return figure


def _intervals(chart: Chart) -> Figure:
    """Point estimates with intervals, one row per category (a forest plot)."""
    spec = chart.spec
    categories: Sequence[str] = spec["categories"]
    figure, axes = _figure(6.5, max(2.2, 0.4 * len(categories) + 1.2), chart.title)
    for i, (value, pair) in enumerate(zip(spec["values"], spec["intervals"], strict=True)):
        if not _defined(value):
            axes.text(0.0, i, "n/a", va="center", fontsize=7)
            continue
        if pair and _defined(pair[0]) and _defined(pair[1]):
            axes.plot([pair[0], pair[1]], [i, i], color="#000000", linewidth=1.4)
        axes.plot([value], [i], marker="D", color=PALETTE[0], markersize=6)
    axes.set_yticks(range(len(categories)), categories, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(spec.get("xlabel", ""))
    if spec.get("xlim"):
        axes.set_xlim(*spec["xlim"])
    axes.grid(axis="x", linewidth=0.3)
    return figure


def _scatter(chart: Chart) -> Figure:
    """One point per coder with its name written beside it, a distinct marker and colour (Okabe–Ito), and its
    intervals as whiskers on both axes: readable without colour."""
    spec = chart.spec
    figure, axes = _figure(7.0, 4.6, chart.title)
    for i, point in enumerate(spec["points"]):
        x, y = point["x"], point["y"]
        x_low, x_high = point.get("x_ci") or (None, None)
        y_low, y_high = point.get("y_ci") or (None, None)
        xerr = [[max(0.0, x - x_low)], [max(0.0, x_high - x)]] if None not in (x_low, x_high) else None
        yerr = [[max(0.0, y - y_low)], [max(0.0, y_high - y)]] if None not in (y_low, y_high) else None
        colour = PALETTE[i % len(PALETTE)]
        axes.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=MARKERS[i % len(MARKERS)], color=colour,
                      ecolor=colour, elinewidth=0.9, capsize=3, markersize=7, label=point["name"])
        axes.annotate(point["name"], (x, y), textcoords="offset points", xytext=(6, 6), fontsize=8)
    axes.set_xlabel(spec.get("xlabel", ""))
    axes.set_ylabel(spec.get("ylabel", ""))
    if spec.get("ylim"):
        axes.set_ylim(*spec["ylim"])
    if spec["points"]:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(linewidth=0.3)
    return figure
