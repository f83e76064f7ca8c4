"""The rules every judgment obeys, and the units an attribute is coded on, each in one place.

The reviewer's autosave, gold recording and the long-format importer (command and API) all ask
``judgment_problems`` and report its messages unchanged, so a rule and its wording cannot drift apart. The database
guards the same rules again (constraints and PostgreSQL triggers); these checks come first so that people get a
specific message instead of an integrity error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from wcwidth import iter_graphemes

from annotation.kinds import kind_of
from annotation.models import AttributeDefinition

Unit = AttributeDefinition.Unit
MAX_INSTANCE_COUNT = 2**31 - 1  # the column is a 32-bit integer
MAX_SPANS = 200  # per judgment: far above any real coding (a response has a few dozen sentences at most)
T = TypeVar("T")


def units_of(attribute: AttributeDefinition, responses: Sequence[T]) -> list[T | None]:
    """The units an attribute is coded on within one turn: the turn itself (``None``) or each of the turn's
    responses (in the order given). Conversation- and session-level attributes are not coded per turn."""
    if attribute.unit == Unit.RESPONSE:
        return list(responses)
    if attribute.unit == Unit.TURN:
        return [None]
    return []


def agreement_problems(*, agreed: Iterable[str], panel: Mapping[str, bool], scores: Mapping[str, int | None],
                       gold: int | None, round_name: str) -> list[str]:
    """Why each of ``agreed`` (usernames) may not be named as agreeing to a unit's gold value ``gold``: who agrees
    is on the study's gold panel (``panel``: each expert's username, True while a member, False once taken off) and
    scored the unit in the round (``scores``: each one's score, None or absent when not scored); an expert still on
    the study may agree to a value they did not code (the panel settled it together), one taken off only to their own
    score. Asked when gold is recorded (``annotation.services.gold_agreement_problems``) and of gold recorded
    before, which a later change can leave stale (the consensus screen flags it): docs/reference.md#gold."""
    problems = []
    for name in sorted(agreed):
        own = scores.get(name)
        if name not in panel:
            problems.append(f"{name} is not an expert of the study (now or before)")
        elif own is None:
            problems.append(f"{name} did not score this item in {round_name}")
        elif not panel[name] and own != gold:
            problems.append(f"{name}, taken off the study since, scored {own}, not {gold}")
    return problems


CHECKLIST_SESSION_KINDS = ("crisis", "callback")  # the sessions whose checklist is coded (a history's)


def session_items(attributes: Sequence[AttributeDefinition], *, kind: str,
                  crisis_type: str | None) -> list[AttributeDefinition]:
    """The session attributes coded on one session of a history: none for a chat session; for a crisis or callback
    session, the checklist items that apply to its crisis type (an item that names no crisis type applies to all)."""
    if kind not in CHECKLIST_SESSION_KINDS:
        return []
    return [a for a in attributes if a.unit == Unit.SESSION
            and (not a.crisis_types or crisis_type is None or crisis_type in a.crisis_types)]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_nominal(attribute: AttributeDefinition) -> bool:
    """A nominal scale: categories without order (a marker or a strategy, a 0/1 flag)."""
    return attribute.level == AttributeDefinition.Level.NOMINAL


def _values(attribute: AttributeDefinition) -> str:
    labels = attribute.scale_labels or {}
    return ", ".join(f"{v} {labels[str(v)]}" if str(v) in labels else str(v) for v in attribute.scale)


def nominal_score(attribute: AttributeDefinition, value: Any) -> Any:
    """A nominal attribute's score from one of its value labels (``"Open"`` → 3), as files and methods may give
    it; any other value is returned as it is, for ``score_problem`` to judge."""
    if isinstance(value, str) and is_nominal(attribute):
        for code, label in (attribute.scale_labels or {}).items():
            if label == value.strip():
                return int(code)
    return value


def score_problem(attribute: AttributeDefinition, score: Any, *, required: bool) -> str | None:
    code = attribute.code
    if score is None:
        return f"{code}: a score is required" if required else None
    if not _whole(score):
        if is_nominal(attribute) and attribute.scale_labels:
            return f"{code}: {str(score)[:50]!r} is not one of its values ({_values(attribute)})"
        return f"{code}: score must be a whole number"
    if not attribute.scale_min <= score <= attribute.scale_max:
        if is_nominal(attribute) and attribute.scale_labels:
            return f"{code}: score {score} is not one of its values ({_values(attribute)})"
        return f"{code}: score {score} is outside the scale {attribute.scale_min}–{attribute.scale_max}"
    return None


def unit_problem(attribute: AttributeDefinition, *, has_turn: bool, has_response: bool,
                 has_session: bool = False) -> str | None:
    code = attribute.code
    if attribute.unit == Unit.RESPONSE and not has_response:
        return f"{code} is coded once per model response: a model response is required"
    if attribute.unit == Unit.TURN and (not has_turn or has_response):
        return f"{code} is coded once per turn: give the turn and no model response"
    if attribute.unit == Unit.CONVERSATION and (has_turn or has_response or has_session):
        return f"{code} is coded once per conversation: give neither a turn nor a model response"
    if attribute.unit == Unit.SESSION and (not has_session or has_turn or has_response):
        return f"{code} is coded once per session: give the session and neither a turn nor a model response"
    if has_session and attribute.unit != Unit.SESSION:
        return f"{code} is not coded per session: give no session"
    return None


def model_problem(model_slots: Collection[str], model: str) -> str | None:
    """A judgment on the response of a model the study does not code: its model slots (none set: every model).
    The autosave shows only the study's slots (``selectors.study_responses``); gold and the import are told so."""
    if model_slots and model not in model_slots:
        return f"the study does not code model {model[:100]!r}"
    return None


def derived_problem(attribute: AttributeDefinition) -> str | None:
    """A derived attribute of a kind's schema (one its kind's ``derived_from`` names, e.g. a questionnaire's total)
    is computed from the items, never typed or sent as a judgment. Read from the schema's definition, only for
    session attributes (the schema is loaded once per attribute instance, and the per-process schema cache keeps
    the instances)."""
    if attribute.unit != Unit.SESSION:
        return None
    kind = kind_of(attribute)
    if kind.derived_from is None or kind.block is None:
        return None
    return kind.derived_from(attribute, kind.block)


def instance_count_problem(attribute: AttributeDefinition, instance_count: Any) -> str | None:
    if instance_count is None:
        return None
    if not attribute.has_instance_count:
        return f"{attribute.code} takes no instance count"
    if not _whole(instance_count) or not 0 <= instance_count <= MAX_INSTANCE_COUNT:
        return f"{attribute.code}: instance count must be a whole number from 0 to {MAX_INSTANCE_COUNT}"
    return None


def span_problem(
    attribute: AttributeDefinition, span: tuple[Any, Any, Any], *, subcategories: Collection[str],
    text_length: int | None, quote: str | None = None, text: str | None = None, cuts: Mapping[int, str] | None = None,
) -> str | None:
    """Why one span cannot be stored, or None. Its offsets count characters as Python does (code points: an emoji
    is one, a letter and its combining accent two, a CRLF two). ``quote``, when given, is the passage the span says
    it marks, checked against the response ``text``: a span whose offsets were counted otherwise (UTF-16 units, bytes,
    a text with its line breaks or accents normalised) marks another passage and is refused rather than stored.
    ``cuts`` are the offsets of the response text that fall inside one user-perceived character
    (``grapheme_cuts``): a span that starts or ends at one would cut that character in two."""
    code = attribute.code
    start, end, slug = span
    if not isinstance(slug, str) or slug not in subcategories:
        allowed = ", ".join(sorted(subcategories)) or "none"
        return f"{code}: subcategory {slug!r} is not one of this attribute's ({allowed})"
    if not (_whole(start) and _whole(end)):
        return f"{code}: a span's start and end must be whole numbers"
    if text_length is None:
        return f"{code}: spans mark a model response's text; this unit has none"
    if not 0 <= start < end <= text_length:
        return f"{code}: span [{start}, {end}) is outside the response text (0–{text_length} characters)"
    if quote is not None and text is None:
        raise ValueError("a span's quote is checked against the response text: the caller gives it")
    if quote is not None and text is not None and text[start:end] != quote:
        return (f"{code}: span [{start}, {end}) marks {_passage(text[start:end])} in the response text, not "
                f"{_passage(quote)} (offsets count characters as code points: an emoji is one, a CRLF two)")
    cuts = cuts or {}
    inside = [f"offset {offset} falls inside {cuts[offset]}" for offset in (start, end) if offset in cuts]
    if inside:
        return (f"{code}: span [{start}, {end}): {' and '.join(inside)}; a span starts and ends between whole "
                "characters as the reader sees them (a letter with its accents, a whole emoji or flag, a CRLF)")
    return None


def _passage(text: str) -> str:
    """A passage as a message quotes it: escaped (a line break or a zero-width space shows) and cut at 50."""
    return repr(text[:50]) + ("…" if len(text) > 50 else "")


def grapheme_cuts(text: str, offsets: Iterable[Any]) -> dict[int, str]:
    """The offsets of ``text`` that fall inside a user-perceived character (an extended grapheme cluster of
    Unicode's UAX #29: a letter and its combining accents, an emoji sequence joined by ZWJ or with its variation
    selector or skin tone, the two regional indicators of a flag, a CRLF), each with that character as a message
    shows it: ``'é' (e + U+0301)``. Offsets that are not whole numbers inside the text are left to the other rules.

    Only the text around each offset is segmented (``wcwidth.iter_graphemes``), from the nearest point before it
    where a boundary is certain: the text's start, after a line feed (UAX #29 GB4), or between two printable ASCII
    characters (no rule joins them). An English text needs a few characters; a text without either reads back to
    its start or its last line."""
    cuts = {}
    for offset in {o for o in offsets if _whole(o) and 0 < o < len(text)}:
        at = offset
        while at > 0 and text[at - 1] != "\n" and not _ascii_pair(text, at):
            at -= 1
        for cluster in iter_graphemes(text, at) if at < offset else ():
            at += len(cluster)
            if at >= offset:
                if at > offset:
                    cuts[offset] = _character(cluster)
                break
    return cuts


def _ascii_pair(text: str, offset: int) -> bool:
    """Two printable ASCII characters meet at ``offset``: a grapheme boundary whatever comes before."""
    return " " <= text[offset - 1] <= "~" and " " <= text[offset] <= "~"


def _character(cluster: str) -> str:
    """A user-perceived character as a message shows it: quoted, then its code points (ASCII letters and digits as
    themselves), the first eight of a longer one."""
    points = [c if c.isascii() and c.isalnum() else f"U+{ord(c):04X}" for c in cluster[:8]]
    return f"{_passage(cluster)} ({' + '.join(points)}{' + …' if len(cluster) > 8 else ''})"


def judgment_problems(
    *,
    attribute: AttributeDefinition,
    score: Any,
    score_required: bool,
    has_turn: bool,
    has_response: bool,
    has_session: bool = False,
    instance_count: Any = None,
    spans: Sequence[tuple[Any, Any, Any]] = (),
    subcategories: Collection[str] = (),
    text_length: int | None = None,
    quotes: Sequence[str | None] = (),
    text: str | None = None,
    cuts: Mapping[int, str] | None = None,
    kept_spans: Collection[tuple[Any, Any, Any]] = (),
) -> dict[str, str]:
    """Every rule one judgment must satisfy, as {field: message}; empty when it is valid.

    ``spans`` are (start, end, subcategory slug); ``subcategories`` are the slugs this attribute allows and
    ``text_length`` is the length of the response text the spans index into (None when the unit has no text).
    ``quotes`` are the passages the spans say they mark, by position (None, or none at all: not said), and ``text``
    the response text they are checked against (needed when one is given). A span never cuts a user-perceived
    character in two: the caller gives the response ``text`` (its text is segmented around the spans' offsets only,
    and only when there are spans) or, having read it already, its ``cuts`` at those offsets (``grapheme_cuts``).
    ``kept_spans`` are the spans the judgment holds already: one stored before that rule is kept when sent again
    unchanged (the page sends every span of the judgment with each save).
    Fields are ``score``, ``unit``, ``instance_count``, ``spans`` (too many) and ``spans[i]`` (one span, or a
    repeat of an earlier one), and ``attribute`` (a derived attribute, never judged).
    """
    problems = {
        "score": score_problem(attribute, score, required=score_required),
        "unit": unit_problem(attribute, has_turn=has_turn, has_response=has_response, has_session=has_session),
        "instance_count": instance_count_problem(attribute, instance_count),
        "attribute": derived_problem(attribute),
    }
    if len(spans) > MAX_SPANS:
        problems["spans"] = f"{attribute.code}: at most {MAX_SPANS} spans per judgment, {len(spans)} were given"
        spans = ()
    if spans and problems["unit"] is None and text_length is not None and cuts is None:
        if text is None:
            raise ValueError("spans are checked against the response text's characters: the caller gives it (or "
                             "its cuts)")
        cuts = grapheme_cuts(text, (offset for span in spans if span not in kept_spans for offset in span[:2]))
    # Spans of a judgment on the wrong unit would only repeat the unit problem.
    seen: set[tuple[Any, Any, Any]] = set()
    for index, span in enumerate(spans if problems["unit"] is None else ()):
        problems[f"spans[{index}]"] = span_problem(
            attribute, span, subcategories=subcategories, text_length=text_length,
            quote=quotes[index] if index < len(quotes) else None, text=text,
            cuts=None if span in kept_spans else cuts)
        if problems[f"spans[{index}]"] is not None:
            continue  # a refused span (its offsets perhaps not even numbers) is no repeat of another
        key = tuple(span)
        if key in seen:
            problems[f"spans[{index}]"] = (f"{attribute.code}: span [{span[0]}, {span[1]}) {span[2]} is given twice")
        seen.add(key)
    return {field: message for field, message in problems.items() if message is not None}
