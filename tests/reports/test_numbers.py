"""Every number a dashboard shows is the metrics report's value for the same filters (issue 13).

Each page is rendered on ``syn`` (a synthetic study with a stored metric run) for several filter combinations and
read back as HTML: every cell of every table, and every number in the titles, captions and the run line, must
be the value at the report key it stands for, formatted as the page formats it. The figures are pictures of the
rows their CSV download serves, so every CSV row is checked the same way (at full precision).

Where each number comes from is written out here, key by key, from the report's shape (docs/metrics.md#report-keys), not
by calling the page's own catalogue (reports/charts.py): a block that read the wrong key, dropped a row or showed a row
the filters exclude fails. The last tests show the check can fail.
"""

from __future__ import annotations

import copy
import csv
import io
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any
from xml.etree import ElementTree

import pytest
from django.urls import reverse
from scipy.stats import binomtest

from annotation.models import Study
from metrics.core.report_warnings import MIN_BOOTSTRAP_CLUSTERS
from metrics.models import MetricRun
from tests import scenarios

pytestmark = pytest.mark.django_db

Rows = dict[tuple[str, ...], dict[str, Any]]  # key columns' text -> {column: report value}


# --- reading a rendered page ------------------------------------------------------------------------------------


@dataclass
class Section:
    title: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    text: str = ""  # everything outside the table: title, caption, download links


class ReportBody(HTMLParser):
    """The ``#report-body`` of a report page: the run line, and per block its table cells and other text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._code_depth = 0  # inside a code's name (a cell's text is its code, data-code)
        self._header_key: str | None = None
        self.sections: dict[str, Section] = {}
        self.run_line = ""
        self._in_body = False
        self._depth = 0  # open <div>s inside the body
        self._section: Section | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._in_head = False
        self._run_line = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("id") == "report-body":
            self._in_body, self._depth = True, 0
        if not self._in_body:
            return
        if tag == "div":
            self._depth += 1
        elif tag == "section" and "block" in (a.get("class") or ""):
            self._section = self.sections.setdefault(a.get("id") or "", Section())
        elif tag == "p" and "run-line" in (a.get("class") or "").split() and self._section is None:
            self._run_line = True
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._section is not None and not self._in_head:
            self._row = []
        elif tag == "th" and self._in_head and self._section is not None:
            # A header shows a human name; the report key it stands for is its data-key (reports/labels.py).
            self._cell = []
            self._header_key = a.get("data-key")
        elif tag in ("td", "th") and self._section is not None:
            self._cell = []
        elif tag == "span" and self._cell is not None and "data-code" in a:
            self._cell.append(a["data-code"] or "")
            self._code_depth = 1
        elif tag == "span" and self._code_depth:
            self._code_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if not self._in_body:
            return
        if tag == "div":
            self._depth -= 1
            self._in_body = self._depth > 0
        elif tag == "section":
            self._section = None
        elif tag == "p":
            self._run_line = False
        elif tag == "thead":
            self._in_head = False
        elif tag == "span" and self._code_depth:
            self._code_depth -= 1
        elif tag in ("td", "th") and self._cell is not None and self._section is not None:
            text = " ".join("".join(self._cell).split())
            if self._in_head:
                self._section.columns.append(self._header_key or text)
                self._header_key = None
            elif self._row is not None:
                self._row.append(text)
            self._cell = None
        elif tag == "tr" and self._row is not None and self._section is not None:
            self._section.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if not self._in_body:
            return
        if self._code_depth:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._section is not None:
            self._section.text += data
        elif self._run_line:
            self.run_line += data


def read_page(html: str) -> ReportBody:
    body = ReportBody()
    body.feed(html)
    return body


def shown(value: Any) -> str:
    """A report value as a table cell shows it (templates/reports/cell.html and the ``cell`` filter)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def in_csv(value: Any) -> str:
    """A report value as the CSV download writes it: full precision, empty for undefined."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, int | float) else str(value)


MARK = re.compile(r"^(?P<value>.*?)(?: (?P<mark>[▲▼]) (?:highest|lowest))?$")
# A value with its interval in one cell, "0.450 [0.410–0.480]"; a κ with its band, "0.452 Moderate".
INTERVAL = re.compile(r"^(?P<value>\S+)(?: \[(?P<low>[^–\]]+)–(?P<high>[^\]]+)\])?$")
BAND = re.compile(r"^(?P<value>\S+)(?: (?P<band>.+))?$")


# --- where each number comes from: the report keys, block by block ----------------------------------------------


def at(data: Any, *path: Any) -> Any:
    """The value at a report key path; None where any part is missing."""
    for part in path:
        if not isinstance(data, Mapping) or part not in data:
            return None
        data = data[part]
    return data


@dataclass(frozen=True)
class View:
    round: str = ""
    model: str = ""
    dataset: str = ""
    scale: str = ""
    signal: str = ""
    kind: str = ""

    def query(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


def _round(report: dict, view: View) -> str:
    return view.round or at(report, "calibration", "last_round")


def reviewers_rows(report: dict, view: View) -> Rows:
    reviewers = at(report, "calibration", "reviewers") or {}
    rows: Rows = {}
    for name, per in reviewers.items():
        for round_name, cell in per.items():
            if round_name == "delta_pp":
                continue
            bands = cell.get("kappa_bands") or {}
            rows[(name, round_name)] = {
                "exact": cell["exact"], "bucketed": cell["bucketed"], "delta_pp": per["delta_pp"],
                **{k: cell[k] for k in ("kappa_user", "kappa_response", "kappa_flags", "bias", "n_items",
                                        "n_clusters")},
                **{f"band_{g}": bands.get(f"kappa_{g}", "") for g in ("user", "response", "flags")}}
    return rows


def panel_rows(report: dict, view: View) -> Rows:
    ranking = at(report, "calibration", "panel_ranking")
    retained = at(report, "parameters", "panel")
    return {(str(item["rank"]), item["reviewer"]): {
        "bucketed": item["bucketed"], "in_top_k": "yes" if item["rank"] <= ranking["panel_size"] else "",
        "retained_on_panel": "not yet chosen" if retained is None else "yes" if item["reviewer"] in retained else "no",
    } for item in ranking["ranking"]}


def experts_rows(report: dict, view: View) -> Rows:
    r = _round(report, view)
    experts = at(report, "calibration", "experts", r, "experts") or {}
    keys = ("exact", "bucketed", "kappa_user", "kappa_response", "kappa_flags", "bias", "n_items")
    return {(name, r): {k: cell[k] for k in keys} for name, cell in experts.items()}


def agreement_rows(report: dict, view: View) -> Rows:
    r = _round(report, view)
    reviewers = at(report, "calibration", "reviewers")
    return {(n, r): {"bucketed": reviewers[n][r]["bucketed"],
                     "ci_low": at(report, "calibration", "agreement_ci", r, n, "bucketed", "low"),
                     "ci_high": at(report, "calibration", "agreement_ci", r, n, "bucketed", "high")}
            for n in reviewers if r in reviewers[n]}


def kappa_rows(report: dict, view: View) -> Rows:
    r = _round(report, view)
    reviewers = at(report, "calibration", "reviewers")
    return {(n, a["code"]): {"kappa": at(reviewers, n, r, "kappa_by_attribute", a["code"], "kappa")}
            for n in reviewers if r in reviewers[n] for a in report["attributes"]}


def pairwise_rows(report: dict, view: View) -> Rows:
    pairs = at(report, "calibration", "pairwise", _round(report, view)) or {}
    return {tuple(key.split("|")): dict(cell) for key, cell in pairs.items()}


def stability_rows(report: dict, view: View) -> Rows:
    bootstrap = at(report, "calibration", "bootstrap")
    b = bootstrap["resamples"]
    rows: Rows = {}
    for k, shares in bootstrap["top_k"].items():
        for name, share in shares.items():
            # The whiskers: the 95 % Wilson interval of a share of B resamples, as scipy computes it.
            interval = binomtest(round(share * b), b).proportion_ci(0.95, method="wilson")
            rows[(name, k)] = {"share": share, "ci_low": interval.low, "ci_high": interval.high}
    return rows


def alpha_rows(report: dict, view: View) -> Rows:
    r = _round(report, view)
    reviewers = at(report, "calibration", "alpha", r) or {}
    experts = at(report, "calibration", "experts", r, "alpha") or {}
    return {(a,): {"level": at(reviewers, a, "level"), "alpha_reviewers": at(reviewers, a, "alpha"),
                   "alpha_expert_panel": at(experts, a, "alpha")} for a in set(reviewers) | set(experts)}


def uiri_rows(report: dict, view: View) -> Rows:
    uiri = report["indices"]["uiri"]
    per = {"all datasets": uiri["bands"], **uiri["by_dataset_bands"]}
    return {(d, band): {"share": bands[band]} for d, bands in per.items() if view.dataset in ("", d)
            for band in ("low", "medium", "high")}


def _mean_defined(values) -> float | None:
    defined = [v for v in values if v is not None]
    return statistics.fmean(defined) if defined else None


def uiri_means_rows(report: dict, view: View) -> Rows:
    uiri = report["indices"]["uiri"]
    rows: Rows = {("all datasets",): {"mean_uiri": uiri["mean"], "n_turns": uiri["n_turns"],
                                      "mean_multi_turn_peak": uiri["peak_mean"]}}
    peaks = uiri["peaks"]
    rows.update({(d,): {"mean_uiri": mean, "n_turns": uiri["by_dataset_n_turns"][d],
                        "mean_multi_turn_peak": _mean_defined((peaks.get(d) or {}).values())}
                 for d, mean in uiri["by_dataset"].items() if view.dataset in ("", d)})
    return rows


def user_scores_rows(report: dict, view: View) -> Rows:
    scores = report["indices"]["uiri"]["attributes"]
    per = {"all datasets": scores["all"], **scores["by_dataset"]}
    codes = {c for values in per.values() for c in values}
    return {(d, c): {"mean_score": at(values, c, "mean"), "n_turns": at(values, c, "n_turns")}
            for d, values in per.items() if view.dataset in ("", d) for c in codes}


def _part(section: dict, view: View) -> dict:
    """A section's figures over the conversations chosen: all; one dataset's (by_dataset[DATASET]); one kind's
    (by_kind[KIND]); or one kind's within one dataset (by_dataset[DATASET].by_kind[KIND]). docs/metrics.md."""
    if view.dataset:
        section = section["by_dataset"].get(view.dataset) or {}
    if view.kind:
        section = at(section, "by_kind", view.kind) or {}
    return section


def _risk_tables(report: dict, view: View) -> tuple[dict, dict, list[str]]:
    """The per-model tables of the conversations chosen, their intervals, models."""
    tables = _part(report["indices"], view)
    return tables, tables.get("ari_ci") or {}, [m for m in tables.get("ari") or {} if view.model in ("", m)]


def ari_table_rows(report: dict, view: View) -> Rows:
    tables, intervals, models = _risk_tables(report, view)
    # the clusters each model's intervals rest on: the study's count by model, or the chosen conversations'
    clusters = (tables if view.dataset or view.kind else report["indices"]["ci"])["n_clusters_by_model"]
    rows: Rows = {}
    for m in models:
        row: dict[str, Any] = {"n_responses": tables["ari"][m]["n_responses"], "n_clusters": clusters[m]}
        for c in ("D", "E", "R", "F", "ARI"):
            row[c] = tables["ari"][m][c]
            row[f"{c}_ci_low"] = at(intervals, m, c, "low")
            row[f"{c}_ci_high"] = at(intervals, m, c, "high")
        rows[(m,)] = row
    return rows


def ari_rows(report: dict, view: View) -> Rows:
    tables, intervals, models = _risk_tables(report, view)
    return {(m, c): {"value": tables["ari"][m][c], "ci_low": at(intervals, m, c, "low"),
                     "ci_high": at(intervals, m, c, "high")} for m in models for c in ("D", "E", "R", "F", "ARI")}


def fingerprint_rows(report: dict, view: View) -> Rows:
    tables, _, models = _risk_tables(report, view)
    codes = {c for per in (tables.get("fingerprint") or {}).values() for c in per}
    return {(m, c): {"z": at(tables, "fingerprint", m, c)} for m in models for c in codes}


def flags_rows(report: dict, view: View) -> Rows:
    tables, _, models = _risk_tables(report, view)
    codes = {c for per in (tables.get("flags") or {}).values() for c in per}
    return {(m, c): {"share": at(tables, "flags", m, c)} for m in models for c in codes}


def coupling_rows(report: dict, view: View) -> Rows:
    scale = view.scale or "risk"
    per_model = _part(report["indices"]["coupling"], view).get(scale) or {}
    model = view.model or min(per_model, default="")
    return {(model, scale, u, o): {**{k: cell[k] for k in ("rho", "p", "q", "n")},
                                   "significant": bool(cell["significant"])}
            for u, outputs in (per_model.get(model) or {}).items() for o, cell in outputs.items()}


def _trajectory_summaries(report: dict, view: View) -> tuple[str, dict[str, dict]]:
    """The chosen signal's summaries per series name, over the chosen dataset's conversations (or all)."""
    trajectories = report["indices"]["trajectories"]
    if view.dataset:
        trajectories = trajectories["by_dataset"].get(view.dataset) or {"user": {}, "models": {}}
    signal = view.signal or "ARI"
    if signal in trajectories["user"]:
        return signal, {"all models (user-level)": trajectories["user"][signal]}
    return signal, {m: per[signal] for m, per in trajectories["models"].items()
                    if signal in per and view.model in ("", m)}


def uiri_lines_rows(report: dict, view: View) -> Rows:
    lines = report["indices"]["trajectories"]["uiri_conversations"]
    return {(d, name, t): {"uiri": v, "slope": line["slope"], "class": line["class"]}
            for d, conversations in lines.items() if view.dataset in ("", d)
            for name, line in conversations.items() for t, v in line["uiri"].items()}


def trajectory_rows(report: dict, view: View) -> Rows:
    signal, per = _trajectory_summaries(report, view)
    return {(name, signal, t): {"mean_change_from_turn1": v} for name, summary in per.items()
            for t, v in summary["change_from_turn1"].items()}


def trajectory_classes_rows(report: dict, view: View) -> Rows:
    signal, per = _trajectory_summaries(report, view)
    return {(name, signal, c): {"share": summary["classes"][c]} for name, summary in per.items()
            for c in ("escalating", "flat", "de-escalating")}


def trajectory_summary_rows(report: dict, view: View) -> Rows:
    signal, per = _trajectory_summaries(report, view)
    keys = ("open", "peak", "mean", "delta", "sd", "slope", "n_conversations", "n_classified")
    return {(name, signal): {k: summary[k] for k in keys} for name, summary in per.items()}


def spans_rows(report: dict, view: View) -> Rows:
    spans = report["indices"]["spans"]
    evidence = _part(spans, view).get("evidence") or {}
    return {(m, s): dict(evidence[m][s]) for m in evidence if view.model in ("", m) for s in spans["subcategories"]}


def span_ratio_rows(report: dict, view: View) -> Rows:
    ratios = _part(report["indices"]["spans"], view).get("ratios") or {}
    return {(m, name): dict(cell) for m, per in ratios.items() if view.model in ("", m) for name, cell in per.items()}


@dataclass(frozen=True)
class Block:
    keys: int  # how many leading columns name the row
    rows: Callable[[dict, View], Rows]
    table: bool = False  # shown as an HTML table (else a figure: its numbers are checked in its CSV)
    marked: tuple[str, ...] = ()  # columns whose highest and lowest values carry ▲ and ▼
    # Shown in the cell of another column: a value's interval ends (low, high), a κ's band.
    intervals: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    bands: Mapping[str, str] = field(default_factory=dict)


PAGES: dict[str, dict[str, Block]] = {
    "reliability": {"reviewers": Block(2, reviewers_rows, table=True,
                                       bands={f"kappa_{g}": f"band_{g}" for g in ("user", "response", "flags")}),
                    "agreement": Block(2, agreement_rows),
                    "kappa": Block(2, kappa_rows), "pairwise": Block(2, pairwise_rows),
                    "stability": Block(2, stability_rows), "alpha": Block(1, alpha_rows),
                    "experts": Block(2, experts_rows, table=True),
                    "panel": Block(2, panel_rows, table=True)},
    "user-input": {"uiri": Block(2, uiri_rows), "uiri-means": Block(1, uiri_means_rows, table=True),
                   "user-scores": Block(2, user_scores_rows)},
    "risk": {"ari-table": Block(1, ari_table_rows, table=True, marked=("D", "E", "R", "F", "ARI"),
                                intervals={c: (f"{c}_ci_low", f"{c}_ci_high") for c in ("D", "E", "R", "F", "ARI")}),
             "ari": Block(2, ari_rows),
             "fingerprint": Block(2, fingerprint_rows), "flags": Block(2, flags_rows)},
    "coupling": {"coupling": Block(4, coupling_rows)},
    "trajectories": {"uiri-lines": Block(3, uiri_lines_rows), "trajectory": Block(3, trajectory_rows),
                     "trajectory-classes": Block(3, trajectory_classes_rows),
                     "trajectory-summary": Block(2, trajectory_summary_rows, table=True,
                                                 marked=("open", "peak", "mean", "delta"))},
    "spans": {"spans": Block(2, spans_rows), "span-ratios": Block(2, span_ratio_rows, table=True)},
}


# --- numbers in titles, captions and the run line ---------------------------------------------------------------

# Text with digits that is wording, not a report value: removed before the numbers are read.
WORDING = ("95 %", "[0, 1]", "0–2", "0/1", "turn 1", "κ < 0 Poor; 0–0.20 Slight; 0.21–0.40 Fair; 0.41–0.60 Moderate; "
           "0.61–0.80 Substantial; 0.81–1 Almost perfect", f"fewer than {MIN_BOOTSTRAP_CLUSTERS}")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def prose_numbers(report: dict, page: str, name: str, view: View) -> list[str]:
    """The numbers a block's title and caption show, from the report (those of a block with rows only)."""
    calibration, indices = report.get("calibration") or {}, report["indices"]
    if name == "stability":
        n = len({r for shares in calibration["bootstrap"]["top_k"].values() for r in shares})
        all_in = [int(k) for k in calibration["bootstrap"]["top_k"] if int(k) >= n]
        return [str(calibration["bootstrap"]["resamples"]), *([str(n), str(min(all_in))] if all_in else [])]
    if name == "panel":
        experts = {r: (v or {}).get("pairwise_mean") or {} for r, v in calibration["experts"].items()}
        means = calibration["pairwise_mean"]
        two = [f"{v:.2f}" if v is not None else "n/a" for r in sorted(set(means) | set(experts))
               for v in (at(means, r, "bucketed"), at(experts, r, "bucketed"))]
        size, ranked = calibration["panel_ranking"]["panel_size"], len(calibration["panel_ranking"]["ranking"])
        top = [str(size)] if size <= ranked else [str(ranked), str(ranked), str(size)]  # "top 3 of 3: k = 6 capped"
        return [*top, *(v for v in two if v != "n/a")]
    if name == "uiri":
        thresholds = indices["uiri"]["thresholds"]
        return [str(thresholds["medium"]), str(thresholds["high"]), str(thresholds["high"])]
    if name == "coupling":
        return [str(indices["coupling"]["min_abs_rho"]), str(indices["coupling"]["max_q"])]
    if name == "ari-table":  # the clusters the intervals rest on: the study's, and the chosen split's of them
        study = indices["ci"].get("n_clusters")
        split = indices["by_dataset"].get(view.dataset) or {} if view.dataset else indices
        split = (split.get("by_kind") or {}).get(view.kind) or {} if view.kind in ("single", "multi") else split
        if not (view.dataset or view.kind in ("single", "multi")):
            return [str(study)]
        return [str(split["n_clusters"]), str(study)] if "n_clusters" in split else []
    if name == "trajectory-classes":
        return [str(indices["trajectories"]["threshold"])]
    if name == "uiri-lines":
        lines = [line for d, per in indices["trajectories"]["uiri_conversations"].items() if view.dataset in ("", d)
                 for line in per.values()]
        return [str(len(lines)), *(str(sum(1 for line in lines if line["class"] == c))
                                   for c in ("escalating", "flat", "de-escalating"))]
    return []


def names_in(report: dict) -> list[str]:
    """Identifiers that contain digits (round names, attribute codes, reviewer names…), longest first."""
    calibration = report.get("calibration") or {}
    found = {*calibration.get("reviewers", {}), *(r for per in calibration.get("reviewers", {}).values() for r in per),
             *(a["code"] for a in report["attributes"]), *report["indices"]["uiri"]["by_dataset"],
             *report["indices"]["ari"], *report["indices"]["spans"]["subcategories"]}
    return sorted((n for n in found if any(ch.isdigit() for ch in n)), key=len, reverse=True)


def numbers_in_prose(text: str, report: dict) -> list[str]:
    for phrase in (*WORDING, *names_in(report)):
        text = text.replace(phrase, " ")
    return NUMBER.findall(text)


# --- the check ---------------------------------------------------------------------------------------------------


def mismatches(client: Any, study: Study, page: str, view: View, report: dict, run: MetricRun | None = None,
               ) -> list[str]:
    """Every disagreement between the page (and its CSV downloads) and ``report`` for these filters."""
    query = {**view.query(), **({"run": str(run.pk)} if run else {})}
    response = client.get(reverse("reports-page", args=[study.slug, page]), query)
    assert response.status_code == 200
    body = read_page(response.content.decode())
    found: list[str] = []
    if not any(name in body.sections for name in PAGES[page]):
        return [f"{page} {view}: no block shown"]
    parameters = report["parameters"]
    line = re.search(r"B = (\d+), seed (\d+)(?:, k = (\d+))?", body.run_line)
    if line is None or line.groups() != (str(parameters["bootstrap"]), str(parameters["seed"]),
                                         str(parameters["panel_size"])):
        found.append(f"{page} {view}: run line {body.run_line!r} is not B, seed, k of the report {parameters}")
    read = report.get("input", {})
    if read and (f"{read['judgments']} judgments read" not in body.run_line
                 or read["fingerprint"][:19] not in body.run_line):
        found.append(f"{page} {view}: run line {body.run_line!r} does not say the report's input {read}")
    for name, block in PAGES[page].items():
        section = body.sections.pop(name, None)
        where = f"{page} {view} {name}"
        if section is None:
            found.append(f"{where}: not on the page")
            continue
        expected = block.rows(report, view)
        if not expected:
            if "Nothing to show" not in section.text or section.rows:
                found.append(f"{where}: the report has nothing for it, yet the page shows something")
            continue
        if block.table:
            found += _table_mismatches(where, section, block, expected)
        found += _csv_mismatches(where, client, study, page, name, query, block, expected)
        prose = numbers_in_prose(section.title + " " + section.text, report)
        if sorted(prose) != sorted(prose_numbers(report, page, name, view)):
            found.append(f"{where}: title and caption show {prose}, the report has "
                         f"{prose_numbers(report, page, name, view)}")
    found += [f"{page} {view}: block {name!r} is not checked here" for name in body.sections
              if name != "span-examples"]
    return found


def _table_mismatches(where: str, section: Section, block: Block, expected: Rows) -> list[str]:
    found = []
    seen = set()
    value_columns = section.columns[block.keys:]
    marked: dict[str, dict[str, list[tuple[str, ...]]]] = {}
    for cells in section.rows:
        key = tuple(cells[:block.keys])
        seen.add(key)
        if key not in expected:
            found.append(f"{where}: row {key} is not in the report for these filters")
            continue
        for column, text in zip(value_columns, cells[block.keys:], strict=True):
            parts = MARK.match(text)
            assert parts is not None
            if parts["mark"]:
                marked.setdefault(column, {}).setdefault(parts["mark"], []).append(key)
            found += _cell_mismatches(f"{where}: {key}", column, parts["value"], expected[key], block)
    found += [f"{where}: row {key} of the report is missing" for key in set(expected) - seen]
    merged = {k for pair in block.intervals.values() for k in pair} | set(block.bands.values())
    for column in sorted({c for row in expected.values() for c in row} - set(value_columns) - merged):
        found.append(f"{where}: column {column} of the report is not shown")
    # ▲ / ▼ sit on the highest and lowest value of their column (ties included), read from the report; a column
    # with fewer than two distinct values has neither.
    for column in set(marked) | set(block.marked):
        values = {key: expected[key][column] for key in seen if key in expected and expected[key][column] is not None}
        for mark, pick in (("▲", max), ("▼", min)):
            want = sorted(k for k, v in values.items() if v == pick(values.values())) \
                if column in block.marked and len(set(values.values())) > 1 else []
            if sorted(marked.get(column, {}).get(mark, [])) != want:
                found.append(f"{where}: {mark} in {column} on {marked.get(column, {}).get(mark)}, expected on {want}")
    return found


def _cell_mismatches(where: str, column: str, text: str, expected: Mapping[str, Any], block: Block) -> list[str]:
    """A cell's text against the report: its value, and the interval or band the cell shows beside it."""
    value = expected[column]
    if column in block.intervals:
        low, high = (expected[k] for k in block.intervals[column])
        parts = INTERVAL.match(text)
        want = shown(value) + (f" [{shown(low)}–{shown(high)}]" if value is not None and (low, high) != (None, None)
                               else "")
        if parts is None or text != want:
            return [f"{where} {column} shows {text!r}, the report has {value!r} [{low!r}, {high!r}]"]
        return []
    if column in block.bands:
        band = expected[block.bands[column]]
        want = shown(value) + (f" {band}" if value is not None and band else "")
        if BAND.match(text) is None or text != want:
            return [f"{where} {column} shows {text!r}, the report has {value!r} ({band!r})"]
        return []
    if text != shown(value):
        return [f"{where} {column} shows {text!r}, the report has {value!r}"]
    return []


def _csv_mismatches(where: str, client: Any, study: Study, page: str, name: str, query: dict, block: Block,
                    expected: Rows) -> list[str]:
    response = client.get(reverse("reports-file", args=[study.slug, page, name, "csv"]), query)
    assert response.status_code == 200, where
    header, *lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    found, seen = [], set()
    for cells in lines:
        key = tuple(cells[:block.keys])
        seen.add(key)
        if key not in expected:
            found.append(f"{where} CSV: row {key} is not in the report for these filters")
            continue
        for column, text in zip(header[block.keys:], cells[block.keys:], strict=True):
            want = expected[key][column]
            if isinstance(want, float) and text and column.startswith("ci_") and "stability" in where:
                ok = math.isclose(float(text), want, abs_tol=1e-9)  # a closed form beside scipy's: equal to 1e-9
            else:
                ok = text == in_csv(want)
            if not ok:
                found.append(f"{where} CSV: {key} {column} is {text!r}, the report has {want!r}")
    found += [f"{where} CSV: row {key} of the report is missing" for key in set(expected) - seen]
    return found


# --- the study and the views -------------------------------------------------------------------------------------

MULTI, SINGLE = "Synthetic multi-turn", "Synthetic single-turn"

VIEWS: dict[str, list[View]] = {
    "reliability": [View(), View(round="calibration-1"), View(round="calibration-2")],
    "user-input": [View(), View(dataset=MULTI), View(dataset=SINGLE)],
    "risk": [View(), View(model="GPT"), View(kind="single"), View(kind="multi", model="Claude"),
             View(dataset=MULTI), View(dataset=SINGLE, model="Gemini"), View(dataset=MULTI, kind="multi"),
             View(dataset=SINGLE, kind="multi")],
    "coupling": [View(), View(model="Qwen", scale="raw"), View(model="Llama", scale="risk"),
                 View(dataset=MULTI, model="GPT"), View(kind="single", scale="raw"),
                 View(dataset=SINGLE, kind="single", model="Claude", scale="raw"), View(dataset=MULTI, kind="single")],
    "trajectories": [View(), View(dataset=MULTI), View(signal="UIRI"), View(signal="U2", dataset=MULTI),
                     View(model="GPT", signal="D", dataset=MULTI), View(signal="F3", model="Gemini"),
                     View(dataset=SINGLE)],
    "spans": [View(), View(model="Llama"), View(dataset=MULTI), View(kind="single", model="GPT"),
              View(dataset=SINGLE, kind="single"), View(dataset=SINGLE, kind="multi")],
}


@pytest.fixture(scope="module")
def synthetic_study_id(shared_state):
    with shared_state():
        yield scenarios.synthetic_calibrated_study().pk


@pytest.fixture
def synthetic(db, synthetic_study_id):
    """``syn`` (tests/scenarios.py): two calibration rounds, a main round with single- and multi-turn
    conversations from two datasets, five models, a succeeded metric run."""
    return Study.objects.get(pk=synthetic_study_id)


def _stored(study: Study) -> tuple[MetricRun, dict]:
    run = MetricRun.objects.get(study=study, status="succeeded")
    return run, run.result


def test_the_views_cover_every_page_and_filter():
    from reports import charts

    assert set(VIEWS) == set(PAGES) == set(charts.PAGES)
    for slug, page in charts.PAGES.items():
        used = {name for view in VIEWS[slug] for name, value in vars(view).items() if value}
        assert used == set(page.filters), slug


@pytest.mark.parametrize("page", list(PAGES))
def test_every_number_shown_is_the_reports_value_for_the_same_filters(client, synthetic, researcher, page):
    run, report = _stored(synthetic)
    assert report["indices"]["trajectories"]["by_dataset"], "the study needs multi-turn conversations"
    client.force_login(researcher)
    for view in VIEWS[page]:
        assert mismatches(client, synthetic, page, view, report) == []


# The heatmaps write each cell's value in the picture (two decimals, * when significant): those numbers too.
HEATMAPS = [("reliability", "kappa", View(round="calibration-1")), ("reliability", "pairwise", View()),
            ("risk", "fingerprint", View(kind="single")), ("coupling", "coupling", View(model="GPT", scale="raw")),
            ("risk", "fingerprint", View(dataset=MULTI)),
            ("coupling", "coupling", View(model="Qwen", scale="risk", dataset=MULTI, kind="multi"))]


def heatmap_texts(report: dict, page: str, name: str, view: View) -> Counter[str]:
    rows = PAGES[page][name].rows(report, view)
    value = {"kappa": "kappa", "pairwise": "bucketed", "fingerprint": "z", "coupling": "rho"}[name]
    texts = Counter("n/a" if cell[value] is None else f"{cell[value]:.2f}" + ("*" if cell.get("significant") else "")
                    for cell in rows.values())
    if name == "pairwise":  # a symmetric matrix: each pair twice, and 1.00 down the diagonal
        texts = texts + texts + Counter({"1.00": len({n for pair in rows for n in pair})})
    return texts


@pytest.mark.parametrize(("page", "name", "view"), HEATMAPS, ids=[f"{h[1]}-{i}" for i, h in enumerate(HEATMAPS)])
def test_the_numbers_written_in_a_heatmap_are_the_reports(client, synthetic, researcher, page, name, view):
    run, report = _stored(synthetic)
    client.force_login(researcher)
    svg = client.get(reverse("reports-file", args=[synthetic.slug, page, name, "svg"]), view.query()).content
    picture = ElementTree.fromstring(svg)  # noqa: S314 - our own server's drawing
    written = Counter("".join(element.itertext()).strip() for element in picture.iter()
                      if element.tag.endswith("}text"))
    expected = heatmap_texts(report, page, name, view)
    assert sum(expected.values()) > 4
    assert expected - written == Counter(), f"not in the picture: {expected - written}"
    # …and a report with other values would not be found in it: the check can fail.
    other = copy.deepcopy(report)
    for cell in _cells(other, page, name, view):
        cell.update({k: -0.777 for k in ("kappa", "bucketed", "rho") if isinstance(cell.get(k), float)})
    if name == "fingerprint":
        tables = _part(other["indices"], view)
        tables["fingerprint"] = {m: dict.fromkeys(per, -0.777) for m, per in tables["fingerprint"].items()}
    assert heatmap_texts(other, page, name, view) - written != Counter()


def _cells(report: dict, page: str, name: str, view: View) -> list[dict]:
    """The report's own dicts behind a heatmap's cells (to change them in place)."""
    calibration = report["calibration"]
    if name == "kappa":
        r = _round(report, view)
        return [c for per in calibration["reviewers"].values() if r in per
                for c in per[r]["kappa_by_attribute"].values()]
    if name == "pairwise":
        return list(calibration["pairwise"][_round(report, view)].values())
    if name == "coupling":
        return [c for per in _part(report["indices"]["coupling"], view)[view.scale][view.model].values()
                for c in per.values()]
    return []


def test_the_run_filter_shows_the_chosen_runs_numbers(client, synthetic, researcher):
    old, report = _stored(synthetic)
    newer = copy.deepcopy(report)
    newer["indices"]["ari"]["GPT"]["ARI"] = 0.123456
    newer["calibration"]["reviewers"]["syn-r01"]["calibration-2"]["exact"] = 0.5
    MetricRun.objects.create(study=synthetic, status="succeeded", result=newer, parameters=old.parameters,
                             finished_at=old.finished_at + timedelta(minutes=1))
    client.force_login(researcher)
    for page in ("risk", "reliability"):
        assert mismatches(client, synthetic, page, View(), newer) == []  # the newest run by default
        assert mismatches(client, synthetic, page, View(), report, run=old) == []


# Where a wrong number would be: one report key per page, in a table (first) and in a figure's CSV.
PERTURBED = [
    ("reliability", ("calibration", "reviewers", "syn-r03", "calibration-1", "kappa_flags"), View()),
    ("reliability", ("calibration", "pairwise", "calibration-2", "syn-r01|syn-r02", "bucketed"), View()),
    ("reliability", ("calibration", "bootstrap", "resamples"), View()),
    ("reliability", ("calibration", "experts", "calibration-1", "experts", "syn-e2", "bias"),
     View(round="calibration-1")),
    ("user-input", ("indices", "uiri", "by_dataset", MULTI), View(dataset=MULTI)),
    ("user-input", ("indices", "uiri", "bands", "medium"), View()),
    ("risk", ("indices", "by_kind", "multi", "ari", "Claude", "R"), View(kind="multi")),
    ("risk", ("indices", "ari_ci", "Gemini", "E", "high"), View()),
    ("risk", ("indices", "fingerprint", "Llama", "TD"), View()),
    ("coupling", ("indices", "coupling", "raw", "Qwen", "U3", "EMP", "q"), View(model="Qwen", scale="raw")),
    ("trajectories", ("indices", "trajectories", "by_dataset", MULTI, "models", "GPT", "D", "slope"),
     View(model="GPT", signal="D", dataset=MULTI)),
    ("trajectories", ("indices", "trajectories", "user", "UIRI", "change_from_turn1", "2"), View(signal="UIRI")),
    ("spans", ("indices", "spans", "ratios", "Llama", "directive:tentative", "tokens"), View(model="Llama")),
    ("spans", ("indices", "spans", "evidence", "GPT", "explores", "spans_per_response"), View()),
    ("risk", ("indices", "by_dataset", MULTI, "ari_ci", "GPT", "ARI", "low"), View(dataset=MULTI)),
    ("risk", ("indices", "by_dataset", SINGLE, "by_kind", "single", "ari", "Gemini", "D"),
     View(dataset=SINGLE, kind="single")),
    ("risk", ("indices", "by_kind", "multi", "ari_ci", "Qwen", "F", "high"), View(kind="multi")),
    ("coupling", ("indices", "coupling", "by_dataset", MULTI, "risk", "GPT", "U3", "EMP", "rho"),
     View(model="GPT", dataset=MULTI)),
    ("coupling", ("indices", "coupling", "by_kind", "single", "raw", "Claude", "U3", "EMP", "p"),
     View(model="Claude", scale="raw", kind="single")),
    ("spans", ("indices", "spans", "by_dataset", SINGLE, "evidence", "Llama", "explores", "tokens_per_response"),
     View(dataset=SINGLE)),
    ("spans", ("indices", "spans", "by_dataset", MULTI, "by_kind", "multi", "ratios", "GPT", "directive:tentative",
               "spans"), View(dataset=MULTI, kind="multi")),
]


@pytest.mark.parametrize(("page", "path", "view"), PERTURBED, ids=lambda v: "/".join(v) if isinstance(v, tuple)
                         else None)
def test_a_number_that_differs_from_the_report_is_caught(client, synthetic, researcher, page, path, view):
    run, report = _stored(synthetic)
    shown_report = copy.deepcopy(report)
    *parents, last = path
    holder = shown_report
    for part in parents:
        holder = holder[part]
    value = holder[last]
    assert isinstance(value, int | float) and not isinstance(value, bool), (path, value)
    holder[last] = value + (7 if isinstance(value, int) else 0.0071)
    MetricRun.objects.filter(pk=run.pk).update(result=shown_report)
    client.force_login(researcher)
    found = mismatches(client, synthetic, page, view, report)
    assert found, f"changing {path} went unnoticed"
    assert all(page in line for line in found)
    print("\n".join(found))


def test_a_block_the_page_adds_without_a_check_here_is_caught(client, synthetic, researcher, monkeypatch):
    from reports import charts

    page = charts.PAGES["spans"]
    monkeypatch.setitem(charts.PAGES, "spans", charts.Page(page.slug, page.title, page.filters,
                                                            (*page.blocks, charts.ari_table)))
    client.force_login(researcher)
    run, report = _stored(synthetic)
    assert mismatches(client, synthetic, "spans", View(), report) == [
        "spans View(round='', model='', dataset='', scale='', signal='', kind=''): block 'ari-table' is not "
        "checked here"]


def test_a_row_the_filters_exclude_is_caught(client, synthetic, researcher, monkeypatch):
    from reports import charts

    monkeypatch.setattr(charts, "_models", lambda report, filters: sorted(charts._model_tables(report, filters)
                                                                          .get("ari") or {}))
    client.force_login(researcher)
    run, report = _stored(synthetic)
    found = mismatches(client, synthetic, "risk", View(model="GPT"), report)
    assert any("row ('Claude',) is not in the report for these filters" in line for line in found)
    assert any("CSV: row ('Claude', 'D') is not in the report" in line for line in found)

