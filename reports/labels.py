"""Display names of the dashboards (docs/metrics.md#display-names): the one home of what a report key, a cluster
code or an index is called on a page. Every report template's column headers, interval cells, κ bands and
legends come from here; the CSV downloads keep the raw keys (``Table.columns``), so a header's tooltip names the
key a CSV column has.

Plain Python over a table's columns and rows, like ``reports.charts``. The names of a study's own codes (its
schema's clusters and attributes) are data, passed in as ``names`` (``reports.selectors.code_names``); the
fixed vocabulary of the report (its keys and indices) is here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Report keys shown as table columns -> the header a page shows. A key missing here is shown as its words
# ("n_action" -> "N action"); a study's own code is shown with its schema name.
COLUMNS: dict[str, str] = {
    # reliability
    "reviewer": "Reviewer", "round": "Round", "expert": "Expert", "exact": "Exact agreement",
    "bucketed": "Bucketed agreement", "delta_pp": "Δ bucketed (pp)", "kappa_user": "κ, user-level",
    "kappa_response": "κ, response-level", "kappa_flags": "κ, flags", "band_user": "Band of κ, user-level",
    "band_response": "Band of κ, response-level", "band_flags": "Band of κ, flags", "bias": "Bias vs gold",
    "n_items": "Items", "n_clusters": "Clusters behind the intervals",
    "rank": "Rank", "in_top_k": "In the top k", "retained_on_panel": "Retained on the panel",
    "ci_low": "95 % interval, low", "ci_high": "95 % interval, high",
    # user input
    "dataset": "Dataset", "mean_uiri": "Mean UIRI", "n_turns": "Turns", "mean_multi_turn_peak": "Mean peak UIRI "
                                                                                                 "(multi-turn)",
    # atrophy risk
    "model": "Model", "n_responses": "Responses", "ARI": "Atrophy risk index (ARI)",
    # trajectories
    "signal": "Signal", "open": "Open (turn 1)", "peak": "Peak", "mean": "Mean", "delta": "Δ last − first",
    "sd": "σ", "slope": "Slope per turn", "n_conversations": "Conversations", "n_classified": "Classified",
    # span evidence
    "ratio": "Ratio", "spans": "Spans", "tokens": "Tokens",
}

# The fixed indices and abbreviations of the report, for the legends (a study's clusters and attributes come from
# its schema). Per page kind: the CAB pages here; a kind's page registers its own (``register_terms``).
TERMS: dict[str, tuple[tuple[str, str], ...]] = {
    "main": (
        ("ARI", "atrophy risk index: the mean of the cluster risks D, E, R and F of a response, in [0, 1]"),
        ("UIRI", "user input risk index of a turn: the mean of U1–U5 each over the top of its scale; Low < 0.30, "
                 "Medium to 0.60, High ≥ 0.60"),
        ("κ", "quadratic weighted kappa with gold (Cohen's unweighted κ on a nominal scale), with its "
              "Landis–Koch band"),
        ("Δ (pp)", "change of bucketed agreement from the first to the last calibration round, in percentage "
                   "points"),
        ("[low–high]", "95 % bootstrap interval"),
        ("z", "a model's mean risk on an attribute minus the mean over models, in standard deviations"),
        ("ρ", "Spearman correlation; q: Benjamini–Hochberg adjusted p"),
    ),
}


# Report keys whose name is too long for the narrow column of a wide table -> the short header a page shows; the
# column's name (``COLUMNS``) stays its accessible name and is said in its tooltip. A kind registers its own
# (``register_columns``).
SHORT_COLUMNS: dict[str, str] = {}


def register_columns(names: Mapping[str, str], short: Mapping[str, str] | None = None) -> None:
    """The display names of a kind's report columns (its section's keys), and the short headers of those too long
    for a column (``SHORT_COLUMNS``); a column another kind names already keeps its name, and must be named alike
    (refused otherwise)."""
    short = short or {}
    clashes = sorted({key for key, name in names.items() if COLUMNS.get(key, name) != name}
                     | {key for key, name in short.items() if SHORT_COLUMNS.get(key, name) != name})
    if clashes:
        raise ValueError(f"columns named otherwise already: {', '.join(clashes)}")
    unnamed = sorted(set(short) - set(names) - set(COLUMNS))
    if unnamed:
        raise ValueError(f"short headers of columns without a name: {', '.join(unnamed)}")
    COLUMNS.update(names)
    SHORT_COLUMNS.update(short)


def register_terms(kind: str, terms: tuple[tuple[str, str], ...]) -> None:
    """The fixed terms a kind's page explains in its legend (refused for a kind that has them already)."""
    if kind in TERMS:
        raise ValueError(f"the legend {kind!r} has its terms already")
    TERMS[kind] = terms


# Codes of the report itself that appear as values of a code column (a study's codes are named by its schema).
VALUE_NAMES: dict[str, str] = {
    "marker_direction": "Marker direction (below, at or above the reference state)",
    "UIRI": "User input risk index", "ARI": "Atrophy risk index",
}

# Columns whose values are a study's codes (an attribute or cluster): a cell shows the code's name, the code in
# its title.
CODE_COLUMNS = frozenset({"field", "signal", "attribute", "cluster", "flag", "crisis_type"})

# Landis–Koch bands as the report names them (docs/metrics.md#landis-koch-bands).
BANDS = ("Poor", "Slight", "Fair", "Moderate", "Substantial", "Almost perfect")


@dataclass(frozen=True)
class Header:
    label: str
    keys: tuple[str, ...]  # the report keys (CSV columns) the column shows: a value, or a value and its interval
    full: str = ""  # the column's name when ``label`` is its short header (``SHORT_COLUMNS``)

    @property
    def key(self) -> str:
        return self.keys[0]

    @property
    def title(self) -> str:
        keys = ("Report key " if len(self.keys) == 1 else "Report keys ") + ", ".join(self.keys)
        return f"{self.full} ({keys[0].lower()}{keys[1:]})" if self.full else keys


@dataclass(frozen=True)
class Cell:
    value: Any
    mark: str = ""
    interval: tuple[Any, Any] | None = None  # (low, high) when the column has an interval
    band: str | None = None  # the κ's Landis–Koch band when the column is a κ with one
    name: str | None = None  # the code's name when the value is a study's code with one


def column_label(key: str, names: Mapping[str, str] | None = None) -> str:
    """The header of a report key: the vocabulary above, else a study's code with its name ("Directiveness (D)"),
    else the key's words."""
    if key in COLUMNS:
        return COLUMNS[key]
    name = (names or {}).get(key)
    if name:
        return f"{name} ({key})"
    if key.startswith("session_") and key[len("session_"):].isdigit():
        return f"Session {key[len('session_'):]}"
    words = key.replace("_", " ")
    return words[:1].upper() + words[1:]


def _partners(columns: Sequence[str], i: int) -> tuple[tuple[int, int] | None, int | None]:
    """The interval columns (low, high) and the band column of column i, when the table has them."""
    key, index = columns[i], {c: n for n, c in enumerate(columns)}
    interval = None
    for low, high in ((f"{key}_ci_low", f"{key}_ci_high"), (f"{key}_low", f"{key}_high")):
        if low in index and high in index:
            interval = (index[low], index[high])
            break
    band = index.get(f"band_{key[len('kappa_'):]}") if key.startswith("kappa_") else None
    return interval, band


def shown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], marks: Mapping[tuple[int, int], str],
                names: Mapping[str, str] | None = None) -> tuple[list[Header], list[list[Cell]]]:
    """A table as a page shows it: a value and its interval columns (``X``, ``X_ci_low``, ``X_ci_high`` or
    ``X_low``, ``X_high``) as one column "0.450 [0.410–0.480]"; a κ and its band (``kappa_G``, ``band_G``) as one
    column "0.452 Moderate"; every header a human name, with the keys it shows (``Header.keys``); a study's code
    in a code column (``CODE_COLUMNS``) with its name (``Cell.name``)."""
    used: set[int] = set()
    plan: list[tuple[int, tuple[int, int] | None, int | None]] = []
    for i in range(len(columns)):
        interval, band = _partners(columns, i)
        plan.append((i, interval, band))
        used |= set(interval or ()) | ({band} if band is not None else set())
    plan = [entry for entry in plan if entry[0] not in used]
    headers = []
    for i, interval, band in plan:
        label, short = column_label(columns[i], names), SHORT_COLUMNS.get(columns[i])
        keys = (columns[i], *(columns[j] for j in interval or ()), *((columns[band],) if band is not None else ()))
        headers.append(Header(short, keys, full=label) if short else Header(label, keys))
    names = {**VALUE_NAMES, **(names or {})}
    shown = [[Cell(row[i], marks.get((r, i), ""), (row[interval[0]], row[interval[1]]) if interval else None,
                   (row[band] or "") if band is not None else None,
                   names.get(row[i]) if columns[i] in CODE_COLUMNS and isinstance(row[i], str) else None)
              for i, interval, band in plan] for r, row in enumerate(rows)]
    return headers, shown


@dataclass(frozen=True)
class Legend:
    codes: list[tuple[str, str]]  # the study's clusters: (code, name)
    values: list[tuple[str, str]]  # the values a kind's page explains: (code, meaning)
    attributes: list[tuple[str, str]]  # the study's attributes: (code, name)
    terms: tuple[tuple[str, str], ...]


def legend(kind: str, clusters: Mapping[str, str], attributes: Mapping[str, str],
           values: Mapping[str, str] | None = None) -> Legend:
    """What a page's codes mean: the study's clusters (on the main pages), attributes and (on a kind's page) the
    values its legend explains, from its schema, and the report's fixed terms for this kind of page (``main`` or
    a kind's section: ``TERMS``)."""
    return Legend(codes=list(clusters.items()) if kind == "main" else [],
                  values=list((values or {}).items()) if kind != "main" else [],
                  attributes=list(attributes.items()), terms=TERMS.get(kind, ()))


# The parts of a chart (``Chart.spec``) that hold codes its page's table names (a ``CODE_COLUMNS`` column): by chart
# name. The drawn chart names them as the table does; the chart's CSV keeps the codes (``Chart.rows``).
CHART_CODES: dict[str, tuple[str, ...]] = {
    "kappa": ("columns",),  # the table's "attribute"
    "alpha": ("categories",),  # "attribute"
    "user-scores": ("categories",),  # "attribute"
    "ari": ("series",),  # "cluster" (D, E, R, F and ARI)
    "fingerprint": ("columns",),  # "attribute"
    "flags": ("categories",),  # "flag"
}


def chart_label(code: Any, names: Mapping[str, str]) -> Any:
    """A code as a drawn chart shows it: its name with the code, "Directiveness (D)"; anything else as it is."""
    name = names.get(code) if isinstance(code, str) else None
    return f"{name} ({code})" if name and name != code else code


def chart_named(chart: Any, names: Mapping[str, str]) -> Any:
    """``chart`` (a ``reports.charts.Chart``) with the codes of ``CHART_CODES`` named (``chart_label``) for
    drawing; a series' intervals follow its renamed series. Other charts come back as they are."""
    from dataclasses import replace

    parts = CHART_CODES.get(chart.name)
    if not parts:
        return chart
    names = {**VALUE_NAMES, **names}
    spec = dict(chart.spec)
    for part in parts:
        if part == "series":
            spec["series"] = {chart_label(k, names): v for k, v in (spec.get("series") or {}).items()}
            if spec.get("intervals"):
                spec["intervals"] = {chart_label(k, names): v for k, v in spec["intervals"].items()}
        elif spec.get(part) is not None:
            spec[part] = [chart_label(code, names) for code in spec[part]]
    return replace(chart, spec=spec)
