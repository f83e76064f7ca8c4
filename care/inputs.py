"""Load a CARE study (a schema with a ``care`` block, docs/care.md) into the pure core's input types
(``care.core.metrics``: CareHistory, CareCoding, ChecklistItem, CareParams), and the report's ``care`` section.

Eight queries whatever the study's size (the members and former members, attributes, sessions, turns, response slots,
the sessions that grew after their checklist was coded, judgments, and the coders' names, only when some coder never was
a member), each a ``values_list`` of a few columns: no Python object per model row, no query per row.

Choices (also in docs/metrics.md#choices, item 18):

- The histories are the study's conversations that have sessions (``benchmark.Session``): the conversations of
  ``annotation.selectors.conversations_of_study`` (the README's rule: those it ingested, and those it judged, put in
  a round or labelled, whoever ingested them); a history's model is its responses' model slot (M1 of the core: one
  assistant per history). A history whose replies are under several slots (stored before ingestion refused it, or
  restored from such an archive) is named in the rows with its slots (``CareRows.several_slots``), and the section
  leaves it out (docs/care.md#a-history-under-several-model-slots). A history is named by its conversation's external
  id, or ``DATASET/EXTERNAL_ID`` when two histories of the study share the id (``metrics.core.history_names``):
  the rows carry the names, the report keys them so, and the timeline takes one.
- The judgments read are those of the study's rounds. What the section leaves out is counted, by reason, in
  ``care.input`` (``CareInputs.dropped``): a judgment without a score, on a conversation without sessions (no
  history), of an attribute the ``care`` block gives no role (nor a checklist item), on a unit its role does not
  read, or replaced by the same coder's judgment of the unit in a round that counts over it.
- The **reference coding** (states, alignment, control windows, quality) is the study's gold codings (``is_gold``,
  the consensus of the gold panel) when it has any; else the coder named by ``reference`` (a parameter of this
  loader: the timeline names the run's reference); else the coder the study chose (its setting ``reference_coding``,
  ``care.kind.REFERENCE_CODING``: one of its experts, reviewers or methods), whose codings are the reference even
  while there are none (an empty reference, which the report's warnings say, never a silent switch to another
  coder); else the first expert (by username) with codings; else the first human coder with codings; else the
  first method. ``CareInputs.reference_name`` says which, and the report carries it (``care.reference``); the chosen
  coder is in the rows, so the input fingerprint, the bundle's ``run.json`` and ``care.parameters`` say it. A coder
  taken off the study keeps the role they had (``annotation.selectors.study_coders``): a former expert's codings
  are still an expert's, so the reference does not move to someone else's when its coder leaves, chosen or not.
- The coders compared for validation are every non-gold coder (humans and methods) with codings, the reference coder
  included when it is one of them (judge vs each human and human vs human are the pairs docs/care.md#metrics asks for).
- A coder's codes come from every round of the study; a unit coded in two rounds keeps the judgment of the round
  that counts: the main round's, else the latest calibration round's
  (``annotation.selectors.judgments_in_round_order``, docs/reference.md#a-unit-coded-in-several-rounds).
- The sessions session quality is computed over (Q1 of docs/care.md) are the study's setting ``quality_scope``
  (``care.kind.QUALITY_SCOPE``; ``episode_sessions`` unless the study chose ``after_crisis``), carried in the rows, so
  the input fingerprint, the bundle's ``run.json`` and the report's ``care.parameters`` all say it.
- A session that took a reply after the study first coded its checklist
  (``annotation.selectors.sessions_grown_after_coding``) is named in ``care.input.grown_after_rating`` and the
  warnings, and its codes stay in the figures (docs/care.md#a-session-that-grew-after-it-was-rated).
- Nominal scores become their scale labels; the marker's labels map onto the engine's states through the ``care``
  block's ``states`` (by position); flags are 0/1. Roles (marker, hold, strategy, …) are looked up through the
  ``care`` block, never by attribute code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from annotation.kinds import block_of, kind_of, setting_value
from annotation.models import AttributeDefinition, Judgment, Study
from annotation.selectors import (
    conversations_of_study,
    judgments_in_round_order,
    sessions_grown_after_coding,
    study_coders,
)
from benchmark.models import Conversation, ModelResponse, Session, Turn
from care.kind import CARE, QUALITY_SCOPE, REFERENCE_CODING
from common.lookups import any_of
from metrics.selectors import history_named, usernames_of

if TYPE_CHECKING:
    from care.core.rows import CareInputs, CareRows, CareSessionRow
    from metrics.core.provenance import KindRows

# The core (numpy, scipy, scikit-learn) is imported inside the loaders: web workers import this module for the
# report pages and must not load the science stack with it (tests/cab/test_urls.py).


def __getattr__(name: str) -> Any:
    """``DROPPED`` and ``GOLD`` are the core's (``care.core.rows``), loaded when asked for."""
    if name in ("DROPPED", "GOLD"):
        from care.core import rows as care_rows

        return getattr(care_rows, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def care_inputs(*, study: Study, reference: str | None = None, seed: int = 0, resamples: int = 1000,
                conversation: str | None = None) -> CareInputs:
    """The study's histories and codings as the core takes them (see the module's choices). ``reference`` names
    the coder whose codings are the reference when the study has no gold codings; ``conversation`` (a history's
    name, as the report's ``care.states`` keys it) loads that one history only (the admin timeline)."""
    from care.core.rows import care_inputs_from_rows

    return care_inputs_from_rows(care_rows(study=study, conversation=conversation), reference=reference, seed=seed,
                                 resamples=resamples)


def care_rows(*, study: Study, conversation: str | None = None) -> CareRows:
    """The rows the care section reads, as plain values (``care.core.rows.CareRows``): the server's half of
    ``care_inputs``; the study bundle writes them (docs/bundle.md#what-each-kind-gets)."""
    from care.core.rows import CareAttribute, CareJudgmentRow, CareRows

    care = block_of(study, CARE)
    if care is None:
        raise ValueError(f"study {study.slug} is not a CARE study (its schema has no care block)")
    # the roles the coders have, or had when taken off the study: a former expert's codings stay an expert's
    members = {coder.user_id: (coder.username, coder.role) for coder in study_coders(study=study)}
    attributes: dict[int, str] = {}
    specs = []
    for pk, code, unit, labels, item_type, crisis_types in (
            AttributeDefinition.objects.filter(schema_id=study.schema_id).order_by("position")
            .values_list("pk", "code", "unit", "scale_labels", "item_type", "crisis_types")):
        attributes[pk] = code
        specs.append(CareAttribute(code, str(unit), {str(k): str(v) for k, v in (labels or {}).items()},
                                   str(item_type or ""), tuple(crisis_types or ())))

    conversation_name, session_index, turn_index, sessions, several_slots, grown = _histories(study, conversation)
    one = {"conversation_id__in": list(conversation_name)} if conversation is not None else {}
    # Every judgment of the study's rounds (whoever ingested the material it is on), unscored ones too: counted. The
    # round whose judgment counts comes last, and within a round the rows come in the order of what they say.
    judged: list[tuple[Any, ...]] = list(judgments_in_round_order(
        Judgment.objects.filter(round__study=study, **one), "coder__username", "is_gold", "attribute__code",
        "conversation__external_id", "conversation__dataset__name", "turn__index", "response__model_slot",
        "session__index", "score",
    ).values_list("coder_id", "is_gold", "attribute_id", "conversation_id", "turn_id", "response_id", "session_id",
                  "score"))
    unknown_coders = {row[0] for row in judged if row[0] not in members}
    names = dict(usernames_of(unknown_coders))
    judgments = [
        CareJudgmentRow(
            coder=members[coder_id][0] if coder_id in members else names.get(coder_id, ""), is_gold=bool(is_gold),
            attribute=attributes.get(attribute_id, ""), conversation=conversation_name.get(conversation_id),
            turn=turn_index.get(turn_id) if turn_id is not None else None, on_response=response_id is not None,
            session=session_index.get(session_id) if session_id is not None else None,
            score=None if score is None else int(score))
        for coder_id, is_gold, attribute_id, conversation_id, turn_id, response_id, session_id, score in judged]
    return CareRows(block=care, attributes=specs, members=[(name, str(role)) for name, role in members.values()],
                    sessions=sessions, judgments=judgments, quality_scope=setting_value(study, QUALITY_SCOPE),
                    reference=setting_value(study, REFERENCE_CODING), several_slots=several_slots, grown=grown)


def _histories_of(study: Study) -> QuerySet[Conversation]:
    """The study's histories: its conversations (``conversations_of_study``) that have sessions."""
    return conversations_of_study(study=study).filter(sessions__isnull=False).distinct()


def _histories(
    study: Study, conversation: str | None,
) -> tuple[dict[int, str], dict[int, int], dict[int, int], list[CareSessionRow], dict[str, tuple[str, ...]],
           dict[str, tuple[int, ...]]]:
    """(conversation id -> the history's name, session id -> index, turn id -> index, the histories' sessions, each
    with its history's name and model slot, the name -> the slots of each history whose replies are under several,
    the name -> the indexes of its sessions that took a reply after the study first coded their checklist
    (``annotation.selectors.sessions_grown_after_coding``)): four queries, and one more for the history named
    ``conversation`` alone. The names
    are made here, for the rows of both (``metrics.core.history_names``: the external id, or DATASET/EXTERNAL_ID
    when two histories of the study share it), so the bundle's rows carry them as the report's keys."""
    from care.core.rows import CareSessionRow
    from metrics.core.history_names import history_names

    sessions = Session.objects.filter(conversation__in=conversations_of_study(study=study))
    if conversation is not None:
        sessions = sessions.filter(conversation_id__in=history_named(_histories_of(study), conversation))
    session_rows: list[tuple[int, int, str, str, int, str, str | None]] = list(
        sessions.order_by("conversation__external_id", "conversation__dataset__name", "index")
        .values_list("pk", "conversation_id", "conversation__dataset__name", "conversation__external_id", "index",
                     "kind", "crisis_type"))
    keys = {(dataset, external_id) for _pk, _id, dataset, external_id, *_rest in session_rows}
    names = history_names(keys) if conversation is None else dict.fromkeys(keys, conversation)
    conversation_name = {conversation_id: names[(dataset, external_id)]
                         for _pk, conversation_id, dataset, external_id, *_rest in session_rows}
    session_index = {pk: index for pk, _id, _dataset, _external_id, index, *_rest in session_rows}
    history_ids = sorted(conversation_name)  # their turns and responses by id: one array parameter each
    turn_index: dict[int, int] = {}
    session_turns: dict[int, list[int]] = defaultdict(list)
    for pk, session_id, index in (Turn.objects.filter(any_of("conversation_id", history_ids))
                                  .order_by("index").values_list("pk", "session_id", "index")):
        turn_index[pk] = index
        if session_id in session_index:
            session_turns[session_id].append(index)
    slots_of: dict[int, list[str]] = defaultdict(list)
    for conversation_id, slot in (ModelResponse.objects.filter(any_of("turn__conversation_id", history_ids))
                                  .values_list("turn__conversation_id", "model_slot").distinct()
                                  .order_by("turn__conversation_id", "model_slot")):
        slots_of[conversation_id].append(slot)
    several = dict(sorted((conversation_name[conversation_id], tuple(slots))
                          for conversation_id, slots in slots_of.items() if len(slots) > 1))
    grown_ids = sessions_grown_after_coding(study=study, session_ids=session_index)
    grown: dict[str, tuple[int, ...]] = {}
    for pk, conversation_id, _dataset, _external_id, index, *_rest in session_rows:
        if pk in grown_ids:
            grown[conversation_name[conversation_id]] = (*grown.get(conversation_name[conversation_id], ()), index)
    return conversation_name, session_index, turn_index, [
        CareSessionRow(dataset, conversation_name[conversation_id], (slots_of.get(conversation_id) or [""])[0], index,
                       kind, crisis_type or None, tuple(session_turns.get(pk, ())))
        for pk, conversation_id, dataset, _external_id, index, kind, crisis_type in session_rows], several, grown


def history_texts(*, study: Study, conversation: str) -> dict[int, str]:
    """Turn index -> the user's message, of the study's history named ``conversation`` (the timeline shows them):
    two queries."""
    return dict(Turn.objects.filter(conversation_id__in=history_named(_histories_of(study), conversation))
                .values_list("index", "client_text"))


def care_section(*, study: Study, seed: int = 0, resamples: int = 1000, reference: str | None = None) -> dict | None:
    """The report's ``care`` section of a CARE study (None for any other study): ``care_report`` of the loaded
    inputs, plus ``reference`` (whose codings the states, alignment and quality come from) and ``input`` (the
    histories, the judgments read and used, and what was left out by reason: ``CareInputs.input``)."""
    found = care_section_and_rows(study=study, seed=seed, resamples=resamples, reference=reference)
    return None if found is None else found[0]


def care_section_and_rows(*, study: Study, seed: int = 0, resamples: int = 1000,
                          reference: str | None = None) -> tuple[dict, KindRows] | None:
    """``care_section`` and the rows it read as the input fingerprint covers them (``care_kind_rows``): the
    study bundle's recompute computes both from the same rows (``care.core.rows``)."""
    if kind_of(study) != CARE:
        return None
    from care.core.rows import care_kind_rows, care_section_from_rows

    rows = care_rows(study=study)
    return care_section_from_rows(rows, reference=reference, seed=seed, resamples=resamples), care_kind_rows(rows)


def care_bundle_rows(study: Study) -> Callable[[], KindRows]:
    """The rows the section reads, read once, as a function that iterates them afresh at each call (the study
    bundle writes them and fingerprints them)."""
    from care.core.rows import care_kind_rows

    rows = care_rows(study=study)
    return lambda: care_kind_rows(rows)
