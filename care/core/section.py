"""The CARE section's core half (``metrics.core.kind_sections``): the recompute of a study bundle reads its rows
from the bundle's files and computes the section as the server does (``care.core.rows``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from metrics.core.grown_sessions import grown_said
from metrics.core.kind_sections import CoreSection
from metrics.core.provenance import KindRows
from metrics.core.report_warnings import MIN_BOOTSTRAP_CLUSTERS, few_resamples, plural, reasons_said, resamples_said

from .metrics import VALIDATION_FIELDS
from .rows import JUDGMENTS_FILE, SESSIONS_FILE, care_kind_rows, care_rows_read, care_section_from_rows

FILES = (SESSIONS_FILE, JUDGMENTS_FILE)  # what care_kind_rows writes, in care_rows_read's order

GROWN_ANCHOR = "docs/care.md#a-session-that-grew-after-it-was-rated"
# why a row was left out, in words (the keys of the section's ``dropped`` counts)
REASONS = {
    "unscored": "without a score",
    "not_a_history": "on a conversation without sessions (not a history)",
    "several_slots": "on a history whose replies are under several model slots",
    "no_role": "of an attribute the care block gives no role (nor a checklist item)",
    "wrong_unit": "on a unit its role does not read",
    "recoded": "replaced by a later judgment of the same unit",
}


def _compute(block: Mapping[str, Any], texts: Sequence[str], *, seed: int, resamples: int) -> tuple[dict, KindRows]:
    rows = care_rows_read(block, *texts)
    return care_section_from_rows(rows, seed=seed, resamples=resamples), care_kind_rows(rows)


def warning(section: Mapping[str, Any]) -> str | None:
    """What the report's warnings say of the section: empty although the study has judgments (by reason), else the
    reference coding's action turns without a primary horizon (``care.input.no_horizon``), which AR and PR count in
    their denominators with no label, and its replies of another strategy given one (``care.input.stray_horizon``),
    which count in no rate; the histories left out because their replies are under several model slots
    (``care.input.several_slots``); a reference coder the study chose who has no codings yet (so the states,
    alignment and quality are empty); the sessions that took a reply after their checklist was first coded
    (``care.input.grown_after_rating``); and the judge validation's intervals that rest on fewer than
    MIN_BOOTSTRAP_CLUSTERS histories (``_few_histories``), or on too few of its resamples (``_few_resamples``)."""
    counts = section.get("input")
    found: list[str | None] = []
    if isinstance(counts, Mapping):  # else a report from before the section counted what it left out
        reference = str(section.get("reference") or "")
        horizon = " ".join(said for said in (_no_horizon(counts.get("no_horizon") or {}, reference),
                                             _stray_horizon(counts.get("stray_horizon") or {}, reference)) if said)
        uncoded = _reference_uncoded(section, counts)  # a chosen reference without codings: no checklist said so
        checklists = None if uncoded else _no_checklist(counts.get("no_checklist") or {}, reference)
        found += [_empty(counts) or " ".join(said for said in (horizon, checklists) if said),
                  _several_slots(counts), uncoded, grown_said(counts, code="CARE checklist code", anchor=GROWN_ANCHOR)]
    found.append(_few_histories(section.get("validation")))
    found.append(_few_resamples(section.get("validation")))
    return " ".join(said for said in found if said) or None


def _few_resamples(validation: Any) -> str | None:
    """The coder pairs whose validation intervals rest on fewer than MIN_RESAMPLES_SHARE of the run's resamples
    (``n_resamples`` of ``resamples``: κ is 0/0, and left out, in a resample where both coders give one label
    throughout), by pair and field; a pair on too few histories is said so already. An entry from before the count
    says nothing."""
    if not isinstance(validation, Mapping):
        return None
    named, resamples = [], 0
    order = [*(f for f in VALIDATION_FIELDS if f in validation), *sorted(set(validation) - set(VALIDATION_FIELDS))]
    for field_name, pairs in ((f, validation[f]) for f in order):
        for pair, entry in sorted((pairs if isinstance(pairs, Mapping) else {}).items()):
            used = entry.get("n_resamples") if isinstance(entry, Mapping) else None
            b = entry.get("resamples") if isinstance(entry, Mapping) else None
            n = entry.get("n_histories")
            if not isinstance(used, Mapping) or not isinstance(b, int) or not b or \
                    (isinstance(n, int) and n < MIN_BOOTSTRAP_CLUSTERS):
                continue  # no interval, or one on too few histories (said so by ``_few_histories``)
            few = few_resamples({f"{key}_ci": {"n_resamples": used.get(key)} for key in ("agreement", "kappa")}, b)
            if few:
                resamples = b
                named.append(f"{pair} on {field_name} ({', '.join(f'{figure} on {n:,}' for figure, n in few)})")
    return resamples_said(named, resamples, "The CARE judge validation's intervals") if named else None


def _few_histories(validation: Any) -> str | None:
    """The coder pairs whose validation intervals (``agreement_ci``, ``kappa_ci``) rest on fewer than
    MIN_BOOTSTRAP_CLUSTERS histories (``n_histories``: the histories the pair's units fall in; a resample draws every
    history, but the others carry none of the pair's units), by pair and field: with so few clusters an interval
    covers well below its level (docs/metrics.md#bootstrap-selection-stability). A pair without an interval (no
    resamples, no unit) or an entry from before the count was kept says nothing."""
    if not isinstance(validation, Mapping):
        return None
    few: dict[str, dict[int, list[str]]] = {}
    # The fields in the section's order, whatever order the report's keys come in (a stored report's are jsonb's).
    order = [*(f for f in VALIDATION_FIELDS if f in validation), *sorted(set(validation) - set(VALIDATION_FIELDS))]
    for field_name, pairs in ((f, validation[f]) for f in order):
        for pair, entry in (pairs if isinstance(pairs, Mapping) else {}).items():
            n = entry.get("n_histories") if isinstance(entry, Mapping) else None
            intervals = [*(entry.get("agreement_ci") or []), *(entry.get("kappa_ci") or [])] if n else []
            if isinstance(n, int) and 0 < n < MIN_BOOTSTRAP_CLUSTERS and any(v is not None for v in intervals):
                few.setdefault(pair, {}).setdefault(n, []).append(field_name)
    if not few:
        return None
    named = "; ".join(f"{pair} on " + ", ".join(f"{', '.join(fields)} ({n} {'history' if n == 1 else 'histories'})"
                                                 for n, fields in sorted(by_n.items()))
                      for pair, by_n in sorted(few.items()))
    return (f"The CARE judge validation's intervals (agreement_ci, kappa_ci) rest on fewer than "
            f"{MIN_BOOTSTRAP_CLUSTERS} histories for {named}: each resample draws every history, but only those "
            "carry the pair's units, so these intervals say next to nothing (with fewer than "
            f"{MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well below its level).")


def _empty(counts: Mapping[str, Any]) -> str | None:
    read = int(counts.get("judgments") or 0)
    if read == 0:
        return None
    if int(counts.get("used") or 0) > 0:
        return None
    reasons = reasons_said(counts.get("dropped") or {}, REASONS, "judgment")
    if not counts.get("histories") and not counts.get("several_slots"):
        reasons.insert(0, "the study has no history (a conversation of the study with sessions)")
    return (f"The CARE section is empty although the study has {plural(read, 'judgment')}: none could be used "
            f"({'; '.join(reasons) or 'no reason counted'}).")


def _per_model(by_model: Mapping[str, int]) -> tuple[int, str] | None:
    """The turns counted by model slot: their total and "MODEL n, …"; None when there are none (or the report is
    from before the section counted them)."""
    if not by_model:
        return None
    return sum(int(n) for n in by_model.values()), ", ".join(f"{model} {int(n)}" for model, n in by_model.items())


def _no_horizon(by_model: Mapping[str, int], reference: str) -> str | None:
    counted = _per_model(by_model)
    if counted is None:
        return None
    total, models = counted
    return (f"{plural(total, 'action turn')} of the reference coding ({reference}) "
            f"{'has' if total == 1 else 'have'} no primary horizon ({models}): each counts among the action turns "
            "(n_action, the denominator of AR and PR) but is labelled neither aligned, premature nor lag "
            "(docs/care.md#reading-choices, A4). Code their horizon to label them.")


def _no_checklist(by_model: Mapping[str, int], reference: str) -> str | None:
    counted = _per_model(by_model)
    if counted is None:
        return None
    total, models = counted
    return (f"{plural(total, 'session')} of the quality scope {'has' if total == 1 else 'have'} no checklist coded by "
            f"the reference coding ({reference}) ({models}): session quality (ProdR, UnprodR, OmitR) is over the "
            "sessions with one alone (n_sessions), so these are left out of it (docs/care.md#reading-choices, Q1). "
            "Code their checklists to count them.")


def _stray_horizon(by_model: Mapping[str, int], reference: str) -> str | None:
    counted = _per_model(by_model)
    if counted is None:
        return None
    total, models = counted
    return (f"{plural(total, 'assistant turn')} of the reference coding ({reference}) of a strategy that gives no "
            f"advice {'has' if total == 1 else 'have'} a primary horizon all the same ({models}): the section reads "
            "no horizon of them, so each counts in no rate, neither among the action turns (n_action) nor as aligned, "
            "premature or lag (docs/care.md#reading-choices, A5). Code their horizon none, or their strategy an "
            "action strategy if they give advice.")


def _several_slots(counts: Mapping[str, Any]) -> str | None:
    several = counts.get("several_slots")
    if not isinstance(several, Mapping) or not several:  # none, or a report from before they were left out
        return None
    named = "; ".join(f"{name} ({', '.join(map(str, slots))})" for name, slots in several.items())
    dropped = int((counts.get("dropped") or {}).get("several_slots") or 0)
    histories = f"{len(several):,} {'history' if len(several) == 1 else 'histories'}"
    return (f"The CARE section leaves out {histories} whose replies are under several model slots: {named}. A "
            "history's reply codes are read as one assistant's, so no figure takes them, and their judgments are "
            f"counted under care.input.dropped.several_slots ({plural(dropped, 'judgment')}; "
            "docs/care.md#a-history-under-several-model-slots). Import each assistant's replies as a history of its "
            "own to measure them.")


def _reference_uncoded(section: Mapping[str, Any], counts: Mapping[str, Any]) -> str | None:
    if counts.get("reference_judgments") != 0:  # absent: the study chose no reference coder
        return None
    return (f"The CARE section's reference coder, {section.get('reference')} (the study's choice), has no CARE codings "
            "yet: the recovery states, alignment, control windows and session quality are those of an empty coding "
            "until they code, or the study chooses another reference coder on its settings page (gold codings, once "
            "recorded, are the reference whatever the choice).")


SECTION = CoreSection(files=FILES, compute=_compute, warning=warning)
