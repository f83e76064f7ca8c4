"""Load a LongCounsel-8 study (a schema with an ``lc8`` block, docs/lc8-metrics.md) into the pure core's arrays
(``lc8.core.tracking``: Lc8Study, CoderLabels, Lc8Rules) and the report's ``lc8`` section.

Six queries whatever the study's size (the members and former members, attributes, sessions, the reference and method
members' session labels, the people's session judgments, the sessions that grew after their rating): the session labels,
the bulk of the rows (paper scale: about 800,000), come back as one row of bytea columns read by numpy in place (as
``metrics.selectors.int_columns`` does), the others as ``values_list`` rows of a few columns; arrays are filled
vectorised, no Python object per label.

Choices (also in the report: ``lc8.reference``, ``lc8.roles``):

- A **trajectory** is a conversation of the study (``annotation.selectors.conversations_of_study``: those it
  ingested, and those it labelled, judged or put in a round, whoever ingested them) of kind ``longitudinal``; its
  row holds sessions 1..S (S = the block's ``sessions``) by ``benchmark.Session.index``; a session missing, or
  without a label, is NaN. Rows are in conversation id order (external id, then dataset name: never the order in
  which they were ingested, which is no part of the study's data). A session index
  outside 1..S is an error naming it. A trajectory is named by its external id, or ``DATASET/EXTERNAL_ID`` when
  two trajectories of the study share the id (``metrics.core.history_names``): the rows carry the names, and the
  dashboard's trajectory plot takes one.
- The rows read are the study's session labels and the judgments of its rounds. What the section leaves out is
  counted by reason in ``lc8.input`` (``Lc8Inputs.input``): labels of an attribute that is neither an item nor the
  total, of a member who is neither a reference nor a method, or on a session of no trajectory; judgments without
  a score, gold, not on a session, of an attribute that is not an item, of a method member, on a session of no
  trajectory, or replaced by the coder's judgment of the same session and item in a round that counts over it. A
  section that is unavailable counts every row under ``unavailable``.
- A session that took a reply after the study first rated it (``annotation.selectors.sessions_grown_after_coding``)
  is named in ``lc8.input.grown_after_rating`` and the warnings, and its ratings stay in the figures
  (docs/lc8-metrics.md#a-session-that-grew-after-it-was-rated).
- Attribute roles come from the block: ``items`` (the PHQ items, in their order) and ``total``; no code names one.
- A coder's **role** is the one they have in the study, or had when taken off it (``annotation.selectors.
  study_coders``, as the main report reads it): a former reviewer's or expert's judgments stay theirs under that
  role in ``lc8.roles``, a former method's stay left out as a method's, so taking someone off changes nothing in
  the section. A coder of judgments who is no member and has no kept role is a ``former member``.
- The **reference** is the study member with role ``reference`` (``SessionLabel`` rows): the one named by the
  ``reference`` argument, else the first by username with labels, else (none has any) the first by username; every
  other reference member is a label source compared with it (the paper's self-report vs controlled state). Its
  total per session is its ``total`` label, or the sum of its items when the total is absent and every item is
  there; its items (when it has any) feed the item fidelity. A reference member without labels has no series to be
  the reference with; one taken off the study has none (its labels keep its membership: it can leave only without
  any), so it is never chosen, and the reference never moves when a coder leaves
  (docs/lc8-metrics.md#roles-and-the-reference).
- A **method** (role ``method``) has one series per seed (``SessionLabel.seed``, None when it has none): its total,
  or the sum of its items when only items are there (every item needed). The items it sent for a seed (any of
  them, in any session) are passed on with that seed, so a method is measured on its items like every other coder
  (item fidelity); a seed without items has none. The methods are the study's ranked coders (``Lc8Study.methods``):
  the reference sources and the people are measured but not ranked.
- A **person** (any non-gold coder of session judgments on the items: reviewers and experts) has one series (seed None):
  the sum of the items when all are coded, and the items themselves. A session coded in two rounds keeps the judgment of
  the round that counts: the main round's, else the latest calibration round's
  (``annotation.selectors.judgments_in_round_order``, docs/reference.md#a-unit-coded-in-several-rounds). A typed total
  is never read (the total is derived). Judgments of method members are not read (a method's LC8 predictions are its
  session labels). Names are usernames, as in every section.
- The bootstrap's B is the run's ``bootstrap`` parameter; a run that asks for none uses the kind's 2,000
  (``lc8.kind.BOOTSTRAP``, registered with the section: docs/lc8-metrics.md#bootstrap-resamples). The seed is the
  run's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import QuerySet

from annotation.kinds import block_of, kind_of
from annotation.models import AttributeDefinition, Judgment, SessionLabel, Study, StudyMember
from annotation.selectors import (
    conversations_of_study,
    judgments_in_round_order,
    sessions_grown_after_coding,
    study_coders,
)
from benchmark.models import Conversation, Session
from lc8.kind import BOOTSTRAP, LC8
from metrics.selectors import history_named, history_names_of

if TYPE_CHECKING:
    from lc8.core.rows import Lc8Inputs, Lc8Rows
    from metrics.core.provenance import KindRows

# numpy and the core are imported inside the loaders: web workers import this module for the report pages
# and must not load the science stack with it (tests/cab/test_urls.py). What the rows become (the
# arrays, the reference, what is left out) is the core's ``lc8.core.rows``, which the study bundle's
# recompute runs on the same rows read from the bundle.

PEOPLE = (StudyMember.Role.REVIEWER, StudyMember.Role.EXPERT)


def __getattr__(name: str) -> Any:
    """``Lc8Unavailable``, ``Lc8Inputs``, ``LABELS_DROPPED`` and ``JUDGMENTS_DROPPED`` are the core's
    (``lc8.core.rows``), loaded when asked for."""
    if name in ("Lc8Unavailable", "Lc8Inputs", "LABELS_DROPPED", "JUDGMENTS_DROPPED"):
        from lc8.core import rows as lc8_rows

        return getattr(lc8_rows, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _columns(columns: list[tuple[str, str]], source: str) -> list[Any]:
    """``SELECT <expression>, ... <source>`` for never-null ``int4``/``int8``/``float8`` expressions, as numpy
    arrays in the rows' order. One query returning one row: each column aggregated server-side into one bytea of
    its big-endian values (the pattern of ``metrics.selectors.int_columns``: no Python object per row). Callers
    inline integers only."""
    import numpy as np

    select = "SELECT " + ", ".join(f"string_agg({kind}send(({e})::{kind}), ''::bytea)" for e, kind in columns)
    with connection.cursor() as cursor:
        cursor.execute(f"{select} {source}")
        values = cursor.fetchone()
    dtypes = {"int4": ">i4", "int8": ">i8", "float8": ">f8"}
    return [np.frombuffer(bytes(value) if value is not None else b"", dtype=dtypes[kind]).astype(
        float if kind == "float8" else np.int64) for (_, kind), value in zip(columns, values, strict=True)]


def _ids(values: Any) -> str:
    """An SQL list of integer ids (integers only, so nothing can be injected); (NULL) when empty."""
    return ", ".join(str(int(v)) for v in values) or "NULL"


def _index_of(keys: list[int], values: Any) -> Any:
    """Each value's position in ``keys`` (database ids), -1 where it is none of them: vectorised."""
    import numpy as np

    order = np.argsort(np.array(keys, dtype=np.int64), kind="stable")
    known = np.array(keys, dtype=np.int64)[order]
    values = np.asarray(values, dtype=np.int64)
    if not len(known):
        return np.full(len(values), -1, dtype=np.int64)
    at = np.clip(np.searchsorted(known, values), 0, len(known) - 1)
    return np.where(known[at] == values, order[at], -1).astype(np.int64)


def lc8_rows(*, study: Study, conversation: str | None = None) -> Lc8Rows:
    """The rows the lc8 section reads, as plain values and numpy columns (``lc8.core.rows.Lc8Rows``): the
    server's half of ``lc8_inputs``; the study bundle writes them (docs/bundle.md#what-each-kind-gets). Six
    queries (one more for the trajectory named ``conversation`` alone). The sessions carry their trajectory's name,
    made here (``metrics.core.history_names``: the external id, or DATASET/EXTERNAL_ID when two trajectories of the
    study share it)."""
    import numpy as np

    from lc8.core.rows import Lc8Rows, item_codes
    from metrics.core.history_names import history_names

    block = block_of(study, LC8)
    if block is None:
        raise ValueError(f"study {study.slug} is not a LongCounsel-8 study (its schema has no lc8 block)")
    items, total = item_codes(block)
    wanted = [*items, *([total] if total else [])]
    codes = dict(AttributeDefinition.objects.filter(schema_id=study.schema_id, code__in=wanted)
                 .values_list("code", "pk"))
    column_ids = [codes.get(code, -1) for code in wanted]  # -1: not an attribute of the schema, matches nothing
    # the roles the coders have, or had when taken off the study: a former reviewer's judgments stay a reviewer's,
    # a former method's a method's (by username)
    members = study_coders(study=study)
    # the trajectory named ``conversation`` alone: its conversation's sessions and judgments
    one = {} if conversation is None else {
        "conversation_id__in": history_named(_trajectories_of(study), conversation)}
    found = Session.objects.filter(conversation__in=conversations_of_study(study=study),
                                   conversation__kind=Conversation.Kind.LONGITUDINAL, **one)
    rows = list(found.order_by("conversation__external_id", "conversation__dataset__name", "index")
                .values_list("pk", "conversation__dataset__name", "conversation__external_id", "index"))
    keys = {(dataset, external_id) for _pk, dataset, external_id, _index in rows}
    names = history_names(keys) if conversation is None else dict.fromkeys(keys, conversation)
    session_ids = [pk for pk, _dataset, _external_id, _index in rows]
    sessions = [(dataset, names[(dataset, external_id)], int(index)) for _pk, dataset, external_id, index in rows]
    # the sessions that took a reply after the study first rated them: named, and counted all the same
    grown_ids = sessions_grown_after_coding(study=study, session_ids=session_ids)
    grown: dict[str, list[int]] = {}
    for (_dataset, name, index), pk in zip(sessions, session_ids, strict=True):
        if pk in grown_ids:
            grown.setdefault(name, []).append(index)

    # Every label of the study (one trajectory's: those on its sessions), as columns; the coder as its member's user
    where = f"WHERE label.study_id = {int(study.pk)}"
    if conversation is not None:
        where += f" AND label.session_id IN ({_ids(session_ids)})"
    coder, seed, seedless, session, attribute, value = _columns(
        [("member.user_id", "int8"), ("COALESCE(label.seed, 0)", "int8"), ("(label.seed IS NULL)::int4", "int4"),
         ("label.session_id", "int8"), ("label.attribute_id", "int8"), ("label.value", "float8")],
        f"FROM {SessionLabel._meta.db_table} label JOIN {StudyMember._meta.db_table} member"
        f" ON member.id = label.coder_id {where}")  # integers and models' tables only

    # Every judgment of the study's rounds, the round whose judgment counts last and within a round in the order of
    # what the rows say (never the order they were inserted in), with its coder's username (a member's, a former
    # member's, or that of someone who never was one, such as a gold row's: every row the bundle ships is named)
    judged = list(judgments_in_round_order(
        Judgment.objects.filter(round__study=study, **one), "coder__username", "is_gold",
        "session__conversation__external_id", "session__conversation__dataset__name", "session__index",
        "attribute__code", "score").values_list("coder__username", "is_gold", "session_id", "attribute_id", "score"))
    position = dict(zip(session_ids, range(len(session_ids)), strict=True))
    column = {pk: at for at, pk in enumerate(column_ids[:len(items)]) if pk != -1}
    judgments = [(username, bool(is_gold),
                  None if session_id is None else position.get(session_id, -1), column.get(attribute_id, -1),
                  None if score is None else score)
                 for username, is_gold, session_id, attribute_id, score in judged]
    coder, session = _index_of([member.user_id for member in members], coder), _index_of(session_ids, session)
    attribute = _index_of(column_ids, attribute)
    # The query's rows come in the order its plan reads them (a table analysed since, or written in another order,
    # gives another): the labels are put in the order of what they say, which the input fingerprint covers.
    order = np.lexsort((value, attribute, session, seed, seedless, coder))  # the last key sorts first
    return Lc8Rows(block=block, study=study.slug, schema=study.schema.slug, codes=sorted(codes),
                   members=[(member.username, str(member.role)) for member in members], sessions=sessions,
                   label_coder=coder[order], label_seed=seed[order], label_seedless=seedless[order].astype(bool),
                   label_session=session[order], label_attribute=attribute[order], label_value=value[order],
                   judgments=judgments, grown={name: tuple(indexes) for name, indexes in grown.items()})


def lc8_inputs(*, study: Study, reference: str | None = None, conversation: str | None = None) -> Lc8Inputs:
    """The study's trajectories and labels as the core takes them (see the module's choices). ``conversation`` (a
    trajectory's name, one of ``trajectory_names``) loads that one trajectory only (the dashboard's trajectory
    plot). Raises ``Lc8Unavailable`` when there is no reference coder or no trajectory, ValueError for data the
    arrays cannot hold (named)."""
    from lc8.core.rows import lc8_inputs_from_rows

    return lc8_inputs_from_rows(lc8_rows(study=study, conversation=conversation), reference=reference,
                                conversation=conversation)


def lc8_section(*, study: Study, seed: int = 0, resamples: int = BOOTSTRAP,
                reference: str | None = None) -> dict | None:
    """The report's ``lc8`` section of a LongCounsel-8 study (None for any other study): ``lc8_report`` of the
    loaded arrays, plus ``reference`` (whose labels are the reference) and ``roles`` (each coder's member role).
    A study that cannot be measured (no reference coder or trajectory yet, or a session beyond the block's
    sessions) gets ``{"unavailable": why, "input": …}``, and the rest of the report is computed as usual.
    ``input`` (``Lc8Inputs.input``) counts the trajectories, the labels and judgments read and used, and what was
    left out by reason (when unavailable: every label and judgment, under ``unavailable``)."""
    found = lc8_section_and_rows(study=study, seed=seed, resamples=resamples, reference=reference)
    return None if found is None else found[0]


def lc8_section_and_rows(*, study: Study, seed: int = 0, resamples: int = BOOTSTRAP,
                         reference: str | None = None) -> tuple[dict, KindRows] | None:
    """``lc8_section`` and the rows it read as the input fingerprint covers them (``lc8_kind_rows``): the study
    bundle's recompute computes both from the same rows (``lc8.core.rows``)."""
    if kind_of(study) != LC8:
        return None
    from lc8.core.rows import lc8_kind_rows, lc8_section_from_rows

    rows = lc8_rows(study=study)
    return (lc8_section_from_rows(rows, seed=seed, resamples=resamples, reference=reference),
            lc8_kind_rows(rows))


def _trajectories_of(study: Study) -> QuerySet[Conversation]:
    """The study's trajectories: its longitudinal conversations with sessions, in the section's row order."""
    return (conversations_of_study(study=study).filter(kind=Conversation.Kind.LONGITUDINAL, sessions__isnull=False)
            .order_by("external_id", "dataset__name").distinct())


def trajectory_names(*, study: Study) -> list[str]:
    """The names of the study's trajectories, in the section's row order: one query (the dashboard's trajectory
    choice)."""
    return list(history_names_of(_trajectories_of(study)).values())


def lc8_bundle_rows(study: Study) -> Callable[[], KindRows]:
    """The rows the section reads, read once, as a function that iterates them afresh at each call (the study
    bundle writes them and fingerprints them)."""
    from lc8.core.rows import lc8_kind_rows

    rows = lc8_rows(study=study)
    return lambda: lc8_kind_rows(rows)
