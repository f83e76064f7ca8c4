"""The report's ``warnings``: a section that came out empty although the study has judgments or session labels for
it, with what was left out and why (the section's own counts: ``input`` of the main report, ``care.input``,
``lc8.input``). A report never drops what reviewers coded without saying so: ``metrics_report`` prints these on
stderr, and the dashboards show them on the overview and on the section's page. Plain data in, plain data out (no
database, no science stack)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAIN, CARE, LC8 = "main", "care", "lc8"

# why a row was left out, in words (the keys of each section's ``dropped`` counts)
_MAIN_REASONS = {
    "unscored": "without a score (spans highlighted before a score, or a score cleared)",
    "unknown_attribute": "of an attribute the main report does not compute over (not in the schema, or a session "
                         "unit another section reads)",
    "off_scale": "with a score off its attribute's scale",
    "duplicate": "replaced by a later judgment of the same unit",
}
_CARE_REASONS = {
    "unscored": "without a score",
    "not_a_history": "on a conversation without sessions (not a history)",
    "no_role": "of an attribute the care block gives no role (nor a checklist item)",
    "wrong_unit": "on a unit its role does not read",
    "recoded": "replaced by a later judgment of the same unit",
}
_LC8_LABEL_REASONS = {
    "not_an_item": "of an attribute that is neither an lc8 item nor the total",
    "other_coder": "of a member who is neither a reference nor a method",
    "not_a_trajectory": "on a session of no trajectory (a longitudinal conversation of the study)",
    "reference_seed": "of a reference coder under a second seed (a reference has one series: its seedless labels, "
                      "else its lowest seed's)",
}
_LC8_JUDGMENT_REASONS = {
    "unscored": "without a score",
    "gold": "gold (the section reads none)",
    "not_a_session": "not on a session",
    "not_an_item": "of an attribute that is not an lc8 item",
    "method": "of a method member (its predictions are its session labels)",
    "not_a_trajectory": "on a session of no trajectory (a longitudinal conversation of the study)",
    "recoded": "replaced by a later judgment of the same session and item",
}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _reasons(dropped: Mapping[str, Any], words: Mapping[str, str], what: str) -> list[str]:
    return [f"{_plural(int(dropped[key]), what)} {phrase}" for key, phrase in words.items()
            if int(dropped.get(key) or 0) > 0]


def _main(report: Mapping[str, Any]) -> str | None:
    counts = report.get("input") or {}
    read = int(counts.get("judgments") or 0)
    # a study whose judgments are all another section's (an LC8 study's session items) has an empty main report
    if read == 0 or int(counts.get("used") or 0) > 0 or report.get(CARE) is not None or report.get(LC8) is not None:
        return None
    reasons = _reasons(counts.get("dropped") or {}, _MAIN_REASONS, "judgment")
    return (f"The main report is empty although the study has {_plural(read, 'judgment')}: none could be "
            f"used ({'; '.join(reasons) or 'no reason counted'}).")


def _care(section: Mapping[str, Any]) -> str | None:
    counts = section.get("input")
    if not isinstance(counts, Mapping):  # a report from before the section counted what it left out
        return None
    read = int(counts.get("judgments") or 0)
    if read == 0 or int(counts.get("used") or 0) > 0:
        return None
    reasons = _reasons(counts.get("dropped") or {}, _CARE_REASONS, "judgment")
    if not counts.get("histories"):
        reasons.insert(0, "the study has no history (a conversation of the study with sessions)")
    return (f"The CARE section is empty although the study has {_plural(read, 'judgment')}: none could be used "
            f"({'; '.join(reasons) or 'no reason counted'}).")


def _lc8(section: Mapping[str, Any]) -> str | None:
    counts = section.get("input")
    if not isinstance(counts, Mapping):
        return None
    labels, judgments = int(counts.get("labels") or 0), int(counts.get("judgments") or 0)
    if labels + judgments == 0:
        return None
    has = f"{_plural(labels, 'session label')} and {_plural(judgments, 'judgment')}"
    if section.get("unavailable"):
        return f"The LongCounsel-8 section is unavailable although the study has {has}: {section['unavailable']}."
    if int(counts.get("labels_used") or 0) + int(counts.get("used") or 0) > 0:
        return None
    reasons = (_reasons(counts.get("labels_dropped") or {}, _LC8_LABEL_REASONS, "label")
               + _reasons(counts.get("dropped") or {}, _LC8_JUDGMENT_REASONS, "judgment"))
    if not counts.get("trajectories"):
        reasons.insert(0, "the study has no trajectory (a longitudinal conversation of the study with sessions)")
    return (f"The LongCounsel-8 section is empty although the study has {has}: none could be used "
            f"({'; '.join(reasons) or 'no reason counted'}).")


def report_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """``[{"section": "main" | "care" | "lc8", "message": …}]``: each section of the report that is empty although
    the study has judgments or labels for it, in that order; [] when there is none."""
    found: list[dict[str, str]] = []
    main = _main(report)
    if main:
        found.append({"section": MAIN, "message": main})
    for name, check in ((CARE, _care), (LC8, _lc8)):
        section = report.get(name)
        message = check(section) if isinstance(section, Mapping) else None
        if message:
            found.append({"section": name, "message": message})
    return found


def section_warnings(report: Mapping[str, Any] | None, section: str | None = None) -> list[str]:
    """The stored warnings' messages of a report (of one section, or all of them): what the pages show."""
    stored = (report or {}).get("warnings") or []
    return [str(w.get("message", "")) for w in stored
            if isinstance(w, Mapping) and (section is None or w.get("section") == section)]
