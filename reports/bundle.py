"""A metric run's study bundle (docs/bundle.md): one zip with the judgments and the texts they were given, the gold,
the report, every figure and table, a printable HTML report and a Frictionless ``datapackage.json`` describing every
file and column; from it anyone recomputes the report without the server (``python -m metrics.core.recompute``).

Why here: the bundle draws the dashboards' figures (``reports.charts``, ``reports.figures``), and ``reports`` is the
lowest layer that reads both them and the study's material. It writes no row: only the zip, cached on disk.

Deterministic: the same run (and the same judgments) gives the same bytes — entries in name order, every entry
dated 1980-01-01, no creation date in an SVG or PNG, SVG element ids from a fixed salt — so a download can resume
against a strong ETag. A bundle is built once per run (its id and times), input fingerprint and software version, under
``settings.BUNDLE_DIR``.

Fresh or refused: the bundle's judgments are read from the database when it is built, so they are checked against
the run: the fingerprint of the written ``data/judgments.csv`` (read back by the recompute's own reader), with the
rows of the section of the study's kind (``provenance.fingerprint_rows``), must be the run's ``input.fingerprint``, or
the study's judgments changed since the run and the bundle is refused (``BundleRefusedError``: start a new run).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import tempfile
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string

from annotation import long_format
from annotation.kinds import kind_of
from annotation.models import Study
from annotation.selectors import conversations_of_study
from benchmark.models import Conversation, ModelResponse, Session, Turn
from common.cells import csv_stream
from common.downloads import Spooled, resumable
from common.provenance import figure_metadata, run_facts, run_headers
from metrics import selectors
from metrics.apis import run_provenance
from metrics.core.report_file import report_file_text
from metrics.kind_sections import ReportSection, section_of
from metrics.models import MetricRun
from reports import charts, kind_pages, labels
from reports import selectors as report_selectors

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can carry: no build time in the bytes
SVG_SALT = "cab-study-bundle"  # matplotlib's SVG ids come from uuid4 unless salted


class BundleRefusedError(Exception):
    """A run that has no bundle (not succeeded), or whose study's judgments changed since: the reason, in words."""


@dataclass(frozen=True)
class BundleFile:
    path: Path
    sha256: str
    size: int


def bundle_name(run: MetricRun) -> str:
    return f"{run.study.slug}-run{run.pk}-bundle.zip"


def bundle_download(request: HttpRequest, run: MetricRun, built: BundleFile) -> HttpResponseBase:
    """The kept bundle as a download that can be resumed (``common.downloads``: its ETag is the zip's SHA-256), with
    the run's provenance in its headers too (``common.provenance``)."""
    kept = Spooled.kept(built.path.open("rb"), size=built.size, sha256=built.sha256)
    return resumable(request, kept, content_type="application/zip", filename=bundle_name(run),
                     provenance=run_headers(run, run.result))


# --- the cached file ---------------------------------------------------------------------------------------------


def bundle_file(*, run: MetricRun) -> BundleFile:
    """The run's bundle on disk, built the first time it is asked for (and again only if its file went away)."""
    result = run.result if run.status == MetricRun.Status.SUCCEEDED else None
    if not isinstance(result, dict):
        raise BundleRefusedError(f"Run {run.pk} is {run.status}; only a succeeded run has a bundle.")
    stored = str((result.get("input") or {}).get("fingerprint") or "")
    if not stored:
        raise BundleRefusedError(f"Run {run.pk} was computed before reports carried an input fingerprint, so its "
                                 "judgments cannot be checked: start a new metric run.")
    folder = Path(settings.BUNDLE_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    # Named by all that makes the bundle's bytes: the run (its id, and when it was asked for and finished: another
    # database's run of that id, after a reinstall, is another run), its input and the code that draws the bundle.
    identity = "|".join((str(run.pk), _moment(run.created_at), _moment(run.finished_at), stored,
                         str(settings.CAB_VERSION), str(settings.CAB_COMMIT)))
    stem = folder / f"run{run.pk}-{hashlib.sha256(identity.encode()).hexdigest()[:24]}"
    zip_path, facts_path = stem.with_suffix(".zip"), stem.with_suffix(".json")
    if zip_path.is_file() and facts_path.is_file():
        facts = json.loads(facts_path.read_text())
        if facts.get("size") == zip_path.stat().st_size:
            return BundleFile(zip_path, facts["sha256"], facts["size"])
    # built beside its final name and moved there whole: a reader never sees half a file, and two builds at once
    # write the same bytes
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=stem.name, suffix=".part")
    try:
        with os.fdopen(handle, "w+b") as out:
            bundle_write(run=run, out=out)
            out.seek(0)
            digest = hashlib.file_digest(out, "sha256").hexdigest()
            size = out.tell()
        os.replace(temporary, zip_path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    handle, facts_temporary = tempfile.mkstemp(dir=folder, prefix=stem.name, suffix=".json.part")
    with os.fdopen(handle, "w") as facts_out:
        facts_out.write(json.dumps({"sha256": digest, "size": size}))
    os.replace(facts_temporary, facts_path)
    return BundleFile(zip_path, digest, size)


def _moment(moment: Any) -> str:
    return moment.isoformat() if moment else ""


# --- the contents ------------------------------------------------------------------------------------------------


def bundle_write(*, run: MetricRun, out: Any) -> None:
    """Write the run's bundle to the seekable binary stream ``out``."""
    # the computation core (numpy) loads only in the processes that build a bundle: the web workers' URL conf
    # imports this module (tests/cab/test_urls.py)
    from metrics.core import recompute as core_bundle
    from metrics.core.provenance import fingerprint, fingerprint_rows

    phases: dict[str, float] = {}  # wall seconds of each step, logged when the bundle is written (numbers only)
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        phases[name] = now - clock[0]
        clock[0] = now

    study = Study.objects.select_related("schema").get(pk=run.study_id)
    report = run.result
    if not isinstance(report, dict):
        raise BundleRefusedError(f"Run {run.pk} has no report.")
    entries: dict[str, bytes] = {}
    tables: dict[str, tuple[list[str], list[dict[str, str]], str]] = {}  # path -> (columns, fields, description)

    judgments_csv = "".join(long_format.judgments_csv(study=study))
    judgments, spans = core_bundle.bundle_tables(judgments_csv)
    # the rows of the section of the study's kind (docs/bundle.md#what-each-kind-gets): the fingerprint covers them too
    section = section_of(study)
    kind_rows = section.bundle_rows(study) if section is not None else None
    now = fingerprint_rows(fingerprint(judgments, spans), kind_rows() if kind_rows else None)
    stored = report["input"]["fingerprint"]
    if now != stored:
        raise BundleRefusedError(
            f"The judgments of study {study.slug} (or its section's rows) changed since run {run.pk} read them (its "
            f"input fingerprint {stored[:19]}…, now {now[:19]}…): start a new metric run, and download its bundle.")
    lap("judgments")
    columns = long_format.columns_for(study)
    entries[core_bundle.JUDGMENTS_FILE] = judgments_csv.encode("utf-8")
    tables[core_bundle.JUDGMENTS_FILE] = (list(columns), _judgment_fields(columns),
                                          "Every scored judgment of the study's rounds in the long format "
                                          "(docs/reference.md#long-format-of-judgments): the rows the run read.")
    gold = _gold_only(judgments_csv)
    if gold.count(b"\n") > 1:  # a study without gold has no gold.csv
        entries["data/gold.csv"] = gold
        tables["data/gold.csv"] = (list(columns), _judgment_fields(columns),
                                   "The gold rows of judgments.csv alone (is_gold true): the gold panel's consensus.")
    judged_slots = {str(model) for model in judgments.model.tolist() if model}
    for path, (header, rows, fields, description) in _material(study, judged_slots).items():
        text = "".join(csv_stream(header, rows))
        if text.count("\n") > 1:  # a table without rows is left out (a header alone loads nowhere as a table)
            entries[path] = text.encode("utf-8")
            tables[path] = (header, fields, description)

    kind_blocks, kind_tables = kind_rows() if kind_rows else ({}, {})
    if section is not None:
        for path, (kind_header, body) in kind_tables.items():  # written even without rows: the recompute reads them
            entries[path] = "".join(csv_stream(kind_header, body)).encode("utf-8")
            tables[path] = (list(kind_header), _kind_fields(section, kind_header), section.files[path])
    lap("material")
    provenance = run_provenance(run)
    report_text = report_file_text(provenance, report)
    entries[core_bundle.REPORT_FILE] = report_text.encode("utf-8")
    entries[core_bundle.RUN_FILE] = _json({**_run_file(study, run, report, provenance), **kind_blocks})

    blocks = _blocks(study, report)
    figures = _figures(blocks, names=report_selectors.code_names(study=study).all, facts=run_facts(run, report))
    lap("figures")
    for page, block in blocks:
        if not block.rows:  # nothing to show, as on the page: no table, no figure
            continue
        path = f"tables/{page.slug}/{block.name}.csv"
        entries[path] = "".join(csv_stream(block.columns, block.rows)).encode("utf-8")
        tables[path] = (list(block.columns), _block_fields(block),
                        f"{page.title}: {block.title}" + (f" — {block.caption}" if block.caption else ""))
    entries.update(figures)
    entries["report.html"] = _html(study, run, provenance, report, blocks, figures).encode("utf-8")
    entries["README.md"] = _readme(study, run).encode("utf-8")
    entries["datapackage.json"] = _json(_datapackage(study, run, entries, tables))
    lap("tables and pages")

    with zipfile.ZipFile(out, "w") as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_STORED if name.endswith(".png") else zipfile.ZIP_DEFLATED
            archive.writestr(info, entries[name], compresslevel=6)
    lap("zip")
    log.info("bundle of run %s: %s; total %.1f s", run.pk,
             ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items()), sum(phases.values()))


def _json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8")


def _gold_only(judgments_csv: str) -> bytes:
    """The CSV's header and its gold rows, their cells as written (already formula-neutralised)."""
    reader = csv.reader(io.StringIO(judgments_csv, newline=""))
    header = next(reader)
    gold = header.index("is_gold")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(row for row in reader if row[gold] == "true")
    return buffer.getvalue().encode("utf-8")


def _run_file(study: Study, run: MetricRun, report: Mapping[str, Any], provenance: dict) -> dict[str, Any]:
    from metrics.core import recompute as core_bundle

    """What the recompute reads beside the data: the run and its software, the report's parameters, the schema's
    attributes as the core takes them, the subcategories in schema order, and the judgments without a score (not
    in the long format, counted by the report)."""
    specs = selectors.core_attributes(selectors.attribute_specs(study=study))
    return {
        "format": core_bundle.FORMAT,
        "version": core_bundle.VERSION,
        "run": provenance,
        "study": {**report.get("study", {}), "kind": kind_of(study).slug},
        "software": report.get("software", {}),
        "parameters": report.get("parameters", {}),
        "attributes": [{"code": a.code, "group": a.group, "cluster": a.cluster, "scale": list(a.scale),
                        "level": a.level, "bucket": {str(k): v for k, v in a.bucket.items()},
                        "risk": None if a.risk is None else {str(k): v for k, v in a.risk.items()},
                        "uiri": a.uiri, "unit": a.unit} for a in specs],
        "subcategories": [[slug, code] for slug, code in selectors.subcategory_attributes(study=study).items()],
        "unscored_judgments": int(((report.get("input") or {}).get("dropped") or {}).get("unscored", 0)),
    }


# --- the material: conversations, sessions, turns, responses --------------------------------------------------

Field = dict[str, str]


def _field(name: str, kind: str, description: str) -> Field:
    return {"name": name, "type": kind, "description": description}


def _material(study: Study, judged_slots: set[str]) -> dict[str, tuple[list[str], Iterable, list[Field], str]]:
    """The study's conversations (``conversations_of_study``: every section's material), their sessions, turns and
    the responses of the study's model slots and of any slot it judged, in a fixed order: one query each."""
    mine = conversations_of_study(study=study)
    conversations = (Conversation.objects.filter(pk__in=mine.values("pk")).order_by("dataset__name", "external_id")
                     .values_list("dataset__name", "external_id", "kind", "topic", "complexity", "title"))
    sessions = (Session.objects.filter(conversation__in=mine.values("pk"))
                .order_by("conversation__dataset__name", "conversation__external_id", "index")
                .values_list("conversation__dataset__name", "conversation__external_id", "index", "kind",
                             "crisis_type"))
    turns = (Turn.objects.filter(conversation__in=mine.values("pk"))
             .order_by("conversation__dataset__name", "conversation__external_id", "index")
             .values_list("conversation__dataset__name", "conversation__external_id", "index", "session__index",
                          "client_text", "therapist_reference"))
    slots = sorted(set(study.model_slots or ()) | judged_slots)
    of_study = ModelResponse.objects.filter(turn__conversation__in=mine.values("pk"))
    if study.model_slots:
        of_study = of_study.filter(model_slot__in=slots)
    responses = (of_study.order_by("turn__conversation__dataset__name", "turn__conversation__external_id",
                                    "turn__index", "model_slot")
                 .values_list("turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index",
                              "model_slot", "model_version", "text"))
    key = [_field("dataset", "string", "the dataset (source corpus) by name"),
           _field("conversation_id", "string", "the conversation's id in its dataset")]
    return {
        "data/conversations.csv": (
            ["dataset", "conversation_id", "kind", "topic", "complexity", "title"], conversations.iterator(), [
                *key, _field("kind", "string", "single, multi or longitudinal"),
                _field("topic", "string", "one of the topic labels (docs/reference.md#topic-labels)"),
                _field("complexity", "string", "high, medium or low for a single-turn conversation; empty otherwise"),
                _field("title", "string", "an optional title")],
            "The study's conversations: those it ingested, judged, put in a round or labelled."),
        "data/sessions.csv": (
            ["dataset", "conversation_id", "session_index", "kind", "crisis_type"], sessions.iterator(), [
                *key, _field("session_index", "integer", "the session's position in the history, from 1"),
                _field("kind", "string", "chat, crisis, callback or counseling"),
                _field("crisis_type", "string", "the session's crisis type; empty when none")],
            "The sessions of the longitudinal histories (empty for a study without them)."),
        "data/turns.csv": (
            ["dataset", "conversation_id", "turn_index", "session_index", "client", "therapist_reference"],
            turns.iterator(), [
                *key, _field("turn_index", "integer", "the turn's position in the conversation, from 1"),
                _field("session_index", "integer", "the turn's session in a history; empty otherwise"),
                _field("client", "string", "the client's message, exactly as stored"),
                _field("therapist_reference", "string", "the therapist's reference reply; empty when none")],
            "Every turn of the study's conversations: the texts reviewers read."),
        "data/responses.csv": (
            ["dataset", "conversation_id", "turn_index", "model", "model_version", "text"], responses.iterator(), [
                *key, _field("turn_index", "integer", "the turn the response answers"),
                _field("model", "string", "the model slot"),
                _field("model_version", "string", "the model's version; empty when not given"),
                _field("text", "string", "the response exactly as stored: span offsets index into it (characters, "
                                         "end exclusive)")],
            "The model responses reviewers coded: every span of judgments.csv resolves in its response's text."),
    }


def _judgment_fields(columns: Sequence[str]) -> list[Field]:
    described = {
        "study": ("string", "the study's slug"),
        "round": ("string", "calibration-N or main"),
        "reviewer": ("string", "the coder's username (a gold row: who recorded it)"),
        "is_gold": ("boolean", "true for the gold panel's consensus"),
        "dataset": ("string", "the dataset by name"),
        "conversation_id": ("string", "the conversation's id in its dataset"),
        "turn_index": ("integer", "the turn; empty for a session- or conversation-level code"),
        "model": ("string", "the model slot of a response-level code; empty for a user-level code"),
        "attribute": ("string", "the attribute's code in the study's schema"),
        "score": ("number", "the score on the attribute's scale (a session label's value may be fractional)"),
        "instance_count": ("integer", "instances counted (response-level attributes); empty when not counted"),
        "spans": ("string", "a JSON list of {start, end, subcategory}: character offsets into the response's text "
                            "(data/responses.csv), end exclusive; empty when none"),
        "role": ("string", "reviewer, expert, method or reference"),
        "session_index": ("integer", "the session of a longitudinal history's row; empty otherwise"),
        "seed": ("integer", "the run of a method's session label; empty otherwise"),
    }
    return [_field(name, *described[name]) for name in columns]


# The columns the kinds' sections' rows share, described once; a kind's section describes its own
# (``ReportSection.columns``), and a description of its own wins.
KIND_COLUMNS: dict[str, tuple[str, str]] = {
    "dataset": ("string", "the dataset by name"),
    "model": ("string", "the history's model slot (the first in name order of its responses)"),
    "coder": ("string", "the coder's username (a gold row: who recorded it)"),
    "is_gold": ("boolean", "true for the gold panel's consensus"),
    "turn_index": ("integer", "the turn of a turn- or response-level code; empty otherwise"),
    "on_response": ("boolean", "true for a code of a model response"),
    "score": ("number", "the score on the attribute's scale; empty when not scored yet"),
    "seed": ("integer", "the run of a method's label; empty when none"),
    "turns": ("string", "the indexes of the session's turns, space-separated, in order"),
    "crisis_type": ("string", "the session's crisis type; empty when none"),
}


def _kind_fields(section: ReportSection, columns: Sequence[str]) -> list[Field]:
    """The columns of a kind's section's rows."""
    described = {**KIND_COLUMNS, **section.columns}
    return [_field(name, *described[name]) for name in columns]


def _block_fields(block: charts.Block) -> list[Field]:
    """Each column's type from its values: integer, number, boolean or string (a column of none is a string)."""
    fields = []
    for position, name in enumerate(block.columns):
        values = [row[position] for row in block.rows if position < len(row) and row[position] is not None]
        if values and all(isinstance(v, bool) for v in values):
            kind = "boolean"
        elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            kind = "integer"
        elif values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            kind = "number"
        else:
            kind = "string"
        fields.append(_field(str(name), kind, ""))
    return fields


# --- figures, tables and the printable report ---------------------------------------------------------------


def _blocks(study: Study, report: Mapping[str, Any]) -> list[tuple[charts.Page, charts.Block]]:
    """The figures and tables of every dashboard page the study's kind has (``reports.kind_pages``: the six pages
    of the default kind, or the tabs of the study's kind),
    unfiltered (all rounds' defaults, all models, datasets and kinds)."""
    return [(page, block) for page in kind_pages.pages_of(study)
            for block in charts.page_blocks(page, report, charts.Filters())]


def _figures(blocks: list[tuple[charts.Page, charts.Block]], *, names: Mapping[str, str],
             facts: Mapping[str, Any]) -> dict[str, bytes]:
    """Every chart as SVG and PNG, drawn as the dashboards' downloads draw them: the codes their tables name named
    (``labels.chart_named``), the run, software and input fingerprint in the files' metadata
    (docs/metrics.md#provenance)."""
    import matplotlib

    from reports import figures as _drawing  # noqa: F401 - its settings first: the context below restores them

    figures: dict[str, bytes] = {}
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT}):
        for page, block in blocks:
            if isinstance(block, charts.Chart) and block.rows:
                for fmt in ("svg", "png"):
                    figures[f"figures/{page.slug}/{block.name}.{fmt}"] = _drawing.render(
                        labels.chart_named(block, names), fmt, figure_metadata(facts, title=block.title, fmt=fmt))
    return figures


def _html(study: Study, run: MetricRun, provenance: dict, report: Mapping[str, Any],
          blocks: list[tuple[charts.Page, charts.Block]], figures: Mapping[str, bytes]) -> str:
    pages: list[dict[str, Any]] = []
    for page, block in blocks:
        if not pages or pages[-1]["page"] is not page:
            pages.append({"page": page, "blocks": []})
        svg = figures.get(f"figures/{page.slug}/{block.name}.svg")
        pages[-1]["blocks"].append({"block": block, "svg": _inline_svg(svg) if svg else "",
                                    "csv": f"tables/{page.slug}/{block.name}.csv"})
    from reports.views import names_context  # the pages' names of the study's codes and their legend

    return render_to_string("reports/bundle_report.html", {
        **names_context(study, kind_pages.legend_of(study)),
        "study": study, "run": provenance, "report": report, "pages": pages,
        "software": report.get("software", {}), "input": report.get("input", {}),
        "warnings": [w.get("message", "") for w in report.get("warnings") or [] if isinstance(w, dict)],
    })


def _inline_svg(svg: bytes) -> str:
    """The SVG's own element, for an HTML page (without the XML declaration and doctype)."""
    text = svg.decode("utf-8")
    return text[text.index("<svg"):]


def _readme(study: Study, run: MetricRun) -> str:
    return (
        f"# Study bundle: {study.slug}, metric run {run.pk}\n\n"
        "What is here (every file and column: datapackage.json):\n\n"
        "- report.json: the metrics report, led by its run (docs/metrics.md#report-keys in the CAB repository)\n"
        "- report.html: the whole report, every dashboard page in one printable document\n"
        "- run.json: the run, the software, the parameters and the schema the recompute reads\n"
        "- data/: the judgments (long format), the gold, and the conversations, sessions, turns and responses "
        "they were given\n"
        "- figures/: every figure as SVG and PNG; tables/: every figure's and table's numbers as CSV\n\n"
        "Recompute the report without the server, from a checkout of the CAB repository at the commit in run.json:\n\n"
        f"    python -m metrics.core.recompute {bundle_name(run)} -o report.json\n\n"
        "It writes report.json and says whether it is byte for byte this bundle's.\n"
    )


def _datapackage(study: Study, run: MetricRun, entries: Mapping[str, bytes],
                 tables: Mapping[str, tuple[list[str], list[Field], str]]) -> dict[str, Any]:
    """A Frictionless Data Package (tabular): each CSV a tabular resource with its columns and their types, every
    other file a resource with its media type; each with its size and SHA-256."""
    media = {"json": "application/json", "html": "text/html", "md": "text/markdown", "svg": "image/svg+xml",
             "png": "image/png", "csv": "text/csv"}
    resources = []
    used: set[str] = set()
    for path in sorted(entries):
        data = entries[path]
        extension = path.rsplit(".", 1)[-1]
        name = "".join(c if c.isalnum() or c in "-._" else "-" for c in path.lower().rsplit(".", 1)[0])
        while name in used:
            name += "-"
        used.add(name)
        resource: dict[str, Any] = {"name": name, "path": path, "format": extension, "mediatype": media[extension],
                                    "bytes": len(data), "hash": f"sha256:{hashlib.sha256(data).hexdigest()}"}
        if path in tables:
            header, fields, description = tables[path]
            resource |= {"profile": "tabular-data-resource", "encoding": "utf-8", "description": description,
                         "dialect": {"delimiter": ",", "lineTerminator": "\r\n", "quoteChar": '"',
                                     "doubleQuote": True, "header": True},
                         "schema": {"fields": fields, "missingValues": [""]}}
        resources.append(resource)
    return {
        "profile": "tabular-data-package",
        "name": f"cab-{study.slug}-run{run.pk}".lower(),
        "title": f"{study.name}: metric run {run.pk}",
        "description": "A study bundle of the Cognitive Atrophy Bench annotation platform (docs/bundle.md): the "
                       "judgments and the texts they were given, the gold, the metrics report with every figure and "
                       "table, and what recomputing the report needs. CSV text cells a spreadsheet would run as a "
                       "formula (beginning with =, +, -, @, a tab or a carriage return) carry one leading ' (and a "
                       "cell beginning with ' one more).",
        "created": provenance_time(run),
        "resources": resources,
    }


def provenance_time(run: MetricRun) -> str | None:
    """When the run finished (ISO 8601, UTC): the package's creation, so the same run gives the same file."""
    return run.finished_at.isoformat() if run.finished_at else None
