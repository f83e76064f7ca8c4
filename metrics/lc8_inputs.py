"""Load a LongCounsel-8 study (a schema with an ``lc8`` block, docs/lc8-metrics.md) into the pure core's arrays
(``metrics.core.lc8``: Lc8Study, CoderLabels, Lc8Rules) and the report's ``lc8`` section.

Five queries whatever the study's size (members, attributes, sessions, the reference and method members' session
labels, the people's session judgments): the session labels, the bulk of the rows (paper scale: about 800,000),
come back as one row of bytea columns read by numpy in place (as ``metrics.selectors.int_columns`` does), the
others as ``values_list`` rows of a few columns; arrays are filled vectorised, no Python object per label.

Choices (also in the report: ``lc8.reference``, ``lc8.roles``):

- A **trajectory** is a conversation of the study (``annotation.selectors.conversations_of_study``: those it
  ingested, and those it labelled, judged or put in a round, whoever ingested them) of kind ``longitudinal``; its
  row holds sessions 1..S (S = the block's ``sessions``) by ``benchmark.Session.index``; a session missing, or
  without a label, is NaN. Rows are in conversation id order (external id, then primary key). A session index
  outside 1..S is an error naming it.
- The rows read are the study's session labels and the judgments of its rounds. What the section leaves out is
  counted by reason in ``lc8.input`` (``Lc8Inputs.input``): labels of an attribute that is neither an item nor the
  total, of a member who is neither a reference nor a method, or on a session of no trajectory; judgments without
  a score, gold, not on a session, of an attribute that is not an item, of a method member, on a session of no
  trajectory, or replaced by a later judgment of the same session and item. A section that is unavailable counts
  every row under ``unavailable``.
- Attribute roles come from the block: ``items`` (the PHQ items, in their order) and ``total``; no code names one.
- The **reference** is the study member with role ``reference`` (``SessionLabel`` rows): the one named by the
  ``reference`` argument, else the only one, else the first by username; every other reference member is a label
  source compared with it (the paper's self-report vs controlled state). Its total per session is its ``total``
  label, or the sum of its items when the total is absent and every item is there; its items (when it has any)
  feed the item fidelity.
- A **method** (role ``method``) has one series per seed (``SessionLabel.seed``, None when it has none): its total,
  or the sum of its items when only items are there (every item needed). The items it sent for a seed (any of
  them, in any session) are passed on with that seed, so a method is measured on its items like every other coder
  (item fidelity); a seed without items has none. The methods are the study's ranked coders (``Lc8Study.methods``):
  the reference sources and the people are measured but not ranked.
- A **person** (any non-gold coder of session judgments on the items: reviewers and experts) has one series (seed
  None): the sum of the items when all are coded, and the items themselves. A session coded twice (two rounds)
  keeps the later judgment. A typed total is never read (the total is derived). Judgments of method members are
  not read (a method's LC8 predictions are its session labels). Names are usernames, as in ``care_inputs``.
- The bootstrap's B is the run's ``bootstrap`` parameter (the benchmark asks for 2,000; run with ``bootstrap=2000`` for
  the paper's setting); the seed is the run's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connection

from annotation.models import AttributeDefinition, Judgment, SessionLabel, Study, StudyMember
from annotation.selectors import conversations_of_study
from benchmark.models import Conversation, Session
from metrics.care_inputs import members_names

if TYPE_CHECKING:
    import numpy as np

    from metrics.core.lc8 import Lc8Study

# numpy and the core are imported inside the loaders: web workers import this module for ``is_lc8_study`` (the
# report navigation) and must not load the science stack with it (tests/cab/test_urls.py).

PEOPLE = (StudyMember.Role.REVIEWER, StudyMember.Role.EXPERT)
# Why a session label or a judgment of the study is left out of the lc8 section (``lc8.input``), in this order.
LABELS_DROPPED = ("not_an_item", "other_coder", "not_a_trajectory", "reference_seed", "unavailable")
JUDGMENTS_DROPPED = ("unscored", "gold", "not_a_session", "not_an_item", "method", "not_a_trajectory", "recoded",
                     "unavailable")


@dataclass(frozen=True)
class Lc8Inputs:
    study: Lc8Study
    reference_name: str
    # coder name -> the member's role (method, reference, reviewer, expert; "former member" for someone no longer one)
    roles: dict[str, str]
    # the report's lc8.input: trajectories, the labels and judgments read, used, and left out by reason
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Counts:
    """What the loader read and left out (``lc8.input``)."""

    labels: int = 0
    labels_dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LABELS_DROPPED, 0))
    judgments: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JUDGMENTS_DROPPED, 0))

    def input(self, trajectories: int) -> dict[str, Any]:
        return {"trajectories": trajectories,
                "labels": self.labels, "labels_used": self.labels - sum(self.labels_dropped.values()),
                "labels_dropped": dict(self.labels_dropped),
                "judgments": self.judgments, "used": self.judgments - sum(self.dropped.values()),
                "dropped": dict(self.dropped)}


class Lc8Unavailable(ValueError):
    """The study cannot be measured yet (no reference coder, no trajectory): the section says why."""


def lc8_block(study: Study) -> dict[str, Any] | None:
    """The schema's ``lc8`` block (which attributes are the items and the total, the rules), None for a study that
    is not a LongCounsel-8 study."""
    block = (study.schema.definition or {}).get("lc8")
    return block if isinstance(block, dict) else None


def is_lc8_study(study: Study) -> bool:
    return lc8_block(study) is not None


def _attributes(study: Study, block: dict[str, Any]) -> tuple[list[int], int | None]:
    """(the items' attribute ids in the block's order, the total's id or None)."""
    items = [str(code) for code in block.get("items") or []]
    total = block.get("total")
    codes = dict(AttributeDefinition.objects.filter(schema_id=study.schema_id, code__in=[*items, total])
                 .values_list("code", "pk"))
    missing = [code for code in items if code not in codes]
    if missing or not items:
        raise ValueError(f"schema {study.schema.slug}: lc8.items {missing or items} are not attributes of the schema")
    return [codes[code] for code in items], codes.get(total) if total else None


@dataclass
class _Grid:
    """Where each session of the loaded trajectories goes: (row, column) of the (n, S) arrays, and the items'
    columns of the (n, S, K) ones."""

    names: list[str]
    position: dict[int, tuple[int, int]]  # session id -> (row, column)
    width: int
    item_ids: list[int]
    total_id: int | None

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.names), self.width

    @property
    def item_column(self) -> dict[int, int]:
        return {pk: j for j, pk in enumerate(self.item_ids)}

    @property
    def attribute_ids(self) -> list[int]:
        return [*self.item_ids, *([self.total_id] if self.total_id is not None else [])]


def _grid(study: Study, one: dict[str, str], width: int, item_ids: list[int], total_id: int | None) -> _Grid:
    rows: dict[int, int] = {}
    grid = _Grid([], {}, width, item_ids, total_id)
    datasets: list[str] = []
    for pk, conversation_id, dataset, name, index in (
            Session.objects.filter(conversation__in=conversations_of_study(study=study),
                                   conversation__kind=Conversation.Kind.LONGITUDINAL, **one)
            .order_by("conversation__external_id", "conversation_id", "index")
            .values_list("pk", "conversation_id", "conversation__dataset__name", "conversation__external_id",
                         "index")):
        if not 1 <= index <= width:
            raise ValueError(f"trajectory {name}: session {index} is outside 1..{width} (the lc8 block's sessions)")
        if conversation_id not in rows:
            rows[conversation_id] = len(grid.names)
            grid.names.append(name)
            datasets.append(dataset)
        grid.position[pk] = (rows[conversation_id], index - 1)
    seen: dict[str, int] = defaultdict(int)
    for name in grid.names:
        seen[name] += 1
    # The same id in two datasets of the study: both named dataset/id (the core wants distinct keys).
    grid.names[:] = [f"{d}/{name}" if seen[name] > 1 else name for d, name in zip(datasets, grid.names, strict=True)]
    return grid


def _reference_choice(members: list[tuple[int, int, str, str]], reference: str | None, study: Study) -> tuple[int, str]:
    references = [(pk, username) for pk, _user, username, role in members if role == StudyMember.Role.REFERENCE]
    if reference is not None:
        chosen = [(pk, name) for pk, name in references if name == reference]
        if not chosen:
            raise ValueError(f"reference coder {reference!r} is not a reference member of study {study.slug}")
        return chosen[0]
    if not references:
        raise Lc8Unavailable("the study has no reference coder (a member with role reference) yet")
    return references[0]


def _locate(grid: _Grid, session_ids: Any) -> tuple[Any, Any, Any]:
    """(which rows' sessions are in the grid, their grid rows, their columns), vectorised."""
    import numpy as np

    known = np.array(sorted(grid.position), dtype=float)
    where = np.array([grid.position[int(s)] for s in known], dtype=np.int64).reshape(len(known), 2)
    if not len(known):
        return np.zeros(len(session_ids), bool), np.zeros(0, np.int64), np.zeros(0, np.int64)
    at = np.clip(np.searchsorted(known, session_ids), 0, len(known) - 1)
    found = known[at] == session_ids
    return found, where[at[found], 0], where[at[found], 1]


def _item_columns(grid: _Grid, attribute_ids: Any) -> Any:
    import numpy as np

    column = grid.item_column
    return np.array([column.get(int(a), -1) for a in attribute_ids], dtype=np.int64)


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


def _session_labels(study: Study, grid: _Grid, member_ids: list[int], one_trajectory: bool,
                    counts: _Counts) -> dict[tuple[int, int | None], tuple[Any, Any, int]]:
    """(member id, seed) -> (totals (n, S), items (n, S, K) or None, how many label rows) of the given (reference and
    method) members' session labels, in one query: the total is the typed one, else the sum of the items when every
    item is there. Every label of the study is read; those left out are counted in ``counts``."""
    import numpy as np

    where = f"WHERE study_id = {int(study.pk)}"
    if one_trajectory:
        where += f" AND session_id IN ({_ids(grid.position)})"
    coder, seed, seedless, session, attribute, value = _columns(
        [("coder_id", "int8"), ("COALESCE(seed, 0)", "int8"), ("(seed IS NULL)::int4", "int4"), ("session_id", "int8"),
         ("attribute_id", "int8"), ("value", "float8")],
        f"FROM {SessionLabel._meta.db_table} {where}")  # integers and a model's table only
    found, r, c = _locate(grid, session.astype(float))
    an_item = np.isin(attribute, grid.attribute_ids)
    a_label_coder = np.isin(coder, member_ids)
    counts.labels += len(coder)
    counts.labels_dropped["not_an_item"] += int((~an_item).sum())
    counts.labels_dropped["other_coder"] += int((an_item & ~a_label_coder).sum())
    counts.labels_dropped["not_a_trajectory"] += int((an_item & a_label_coder & ~found).sum())
    r, c = r[(an_item & a_label_coder)[found]], c[(an_item & a_label_coder)[found]]
    found &= an_item & a_label_coder
    coder, seed, seedless, attribute, value = coder[found], seed[found], seedless[found], attribute[found], value[found]
    is_total = attribute == (grid.total_id if grid.total_id is not None else -1)
    columns = _item_columns(grid, attribute)
    labels: dict[tuple[int, int | None], tuple[Any, Any, int]] = {}
    for member_id, seed_value, no_seed in sorted({(int(m), int(s), int(z)) for m, s, z in
                                                  np.unique(np.column_stack([coder, seed, seedless]), axis=0)}):
        mine = (coder == member_id) & (seed == seed_value) & (seedless == no_seed)
        total = np.full(grid.shape, np.nan)
        typed = mine & is_total
        total[r[typed], c[typed]] = value[typed]
        given = mine & ~is_total
        items = None
        if given.any():
            items = np.full((*grid.shape, len(grid.item_ids)), np.nan)
            items[r[given], c[given], columns[given]] = value[given]
            missing = np.isnan(total)
            total[missing] = items.sum(axis=2)[missing]  # NaN unless every item is there
        labels[(member_id, None if no_seed else seed_value)] = (total, items, int(mine.sum()))
    return labels


def _people_labels(study: Study, grid: _Grid, one: dict[str, str], skip: set[int], counts: _Counts) -> dict[int, Any]:
    """user id -> items (n, S, K) of every person with non-gold session judgments on the items (not the users in
    ``skip``): the later judgment of a session kept. Every judgment of the study's rounds is read; those left out
    are counted in ``counts``."""
    import numpy as np

    item_ids = set(grid.item_ids)
    latest: dict[tuple[int, int, int], int | None] = {}  # in judgment order: a later one replaces an earlier one
    for coder_id, is_gold, session_id, attribute_id, score in (
            Judgment.objects.filter(round__study=study, **one)
            .order_by("pk").values_list("coder_id", "is_gold", "session_id", "attribute_id", "score")):
        counts.judgments += 1
        if score is None:
            why: str | None = "unscored"
        elif is_gold:
            why = "gold"
        elif session_id is None:
            why = "not_a_session"
        elif attribute_id not in item_ids:
            why = "not_an_item"
        elif coder_id in skip:
            why = "method"
        elif session_id not in grid.position:
            why = "not_a_trajectory"
        else:
            why = "recoded" if (coder_id, session_id, attribute_id) in latest else None
            latest[(coder_id, session_id, attribute_id)] = score
        if why is not None:
            counts.dropped[why] += 1
    rows = np.array([(*key, score) for key, score in latest.items()], dtype=float).reshape(len(latest), 4)
    found, r, c = _locate(grid, rows[:, 1])
    rows = rows[found]
    people: dict[int, np.ndarray] = {}
    for coder_id in sorted({int(u) for u in rows[:, 0]}):
        mine = rows[:, 0] == coder_id
        items = np.full((*grid.shape, len(grid.item_ids)), np.nan)
        items[r[mine], c[mine], _item_columns(grid, rows[mine, 2])] = rows[mine, 3]
        people[coder_id] = items
    return people


def lc8_inputs(*, study: Study, reference: str | None = None, conversation: str | None = None) -> Lc8Inputs:
    """The study's trajectories and labels as the core takes them (see the module's choices). ``conversation`` (an
    external id) loads that one trajectory only (the dashboard's trajectory plot). Raises ``Lc8Unavailable`` when
    there is no reference coder or no trajectory, ValueError for data the arrays cannot hold (named)."""
    from metrics.core.lc8 import CoderLabels, Lc8Rules, Lc8Study

    block = lc8_block(study)
    if block is None:
        raise ValueError(f"study {study.slug} is not a LongCounsel-8 study (its schema has no lc8 block)")
    rules = Lc8Rules.from_block(block)
    item_ids, total_id = _attributes(study, block)
    members = list(StudyMember.objects.filter(study=study).order_by("user__username")
                   .values_list("pk", "user_id", "user__username", "role"))
    reference_pk, reference_name = _reference_choice(members, reference, study)
    one = {"conversation__external_id": conversation} if conversation is not None else {}
    grid = _grid(study, one, rules.sessions, item_ids, total_id)
    if not grid.names:
        raise Lc8Unavailable("the study has no trajectory (a longitudinal conversation with sessions) yet"
                             if conversation is None else f"no trajectory {conversation!r} in this study")

    by_member = {pk: (username, role) for pk, _user, username, role in members}
    coders: dict[str, CoderLabels] = {}
    roles: dict[str, str] = {}
    labelled = [pk for pk, _user, _name, role in members if role in (StudyMember.Role.REFERENCE,
                                                                      StudyMember.Role.METHOD)]
    references: dict[int, tuple[Any, Any]] = {}
    per_method: dict[int, dict[int | None, Any]] = defaultdict(dict)
    counts = _Counts()
    labels = _session_labels(study, grid, labelled, conversation is not None, counts)
    # A reference's labels have no seed; where it sent some under seeds, its seedless ones (else its lowest seed's)
    # are its labels, and the others are counted as left out (reference_seed).
    for (member_id, seed), (totals, items, rows) in sorted(labels.items(),
                                                           key=lambda g: (g[0][0], g[0][1] is not None, g[0][1] or 0)):
        if by_member[member_id][1] == StudyMember.Role.REFERENCE:
            if member_id in references:
                counts.labels_dropped["reference_seed"] += rows
            else:
                references[member_id] = (totals, items)
        else:
            per_method[member_id][seed] = (totals, items)  # items None: this seed sent none
    for member_id, (totals, items) in references.items():
        if member_id != reference_pk:  # another label source (e.g. a self-report) compared with the reference
            name, roles[name] = by_member[member_id]
            coders[name] = CoderLabels(totals={None: totals}, items=None if items is None else {None: items})
    method_names = []
    for member_id, per_seed in per_method.items():
        name, roles[name] = by_member[member_id]
        ordered = sorted(per_seed.items(), key=lambda s: (s[0] is not None, s[0] or 0))
        sent = {seed: items for seed, (_totals, items) in ordered if items is not None}
        coders[name] = CoderLabels(totals={seed: totals for seed, (totals, _items) in ordered}, items=sent or None)
        method_names.append(name)
    methods = {user for _pk, user, _name, role in members if role == StudyMember.Role.METHOD}
    people = _people_labels(study, grid, one, methods, counts)
    user_role = {user: (username, role) for _pk, user, username, role in members}
    former = dict(members_names({coder for coder in people if coder not in user_role}))
    for coder_id, coded in people.items():
        name, roles[name] = user_role.get(coder_id) or (former.get(coder_id, str(coder_id)), "former member")
        coders[name] = CoderLabels(totals={None: coded.sum(axis=2)}, items={None: coded})

    import numpy as np

    if reference_pk not in references and conversation is None:
        raise Lc8Unavailable(f"the reference coder {reference_name} has no labels yet")
    reference_totals, reference_items = references.get(reference_pk) or (np.full(grid.shape, np.nan), None)
    arrays = Lc8Study(trajectories=tuple(grid.names), reference=reference_totals, reference_items=reference_items,
                      coders=dict(sorted(coders.items())), rules=rules, methods=tuple(sorted(method_names)))
    return Lc8Inputs(study=arrays, reference_name=reference_name, roles=dict(sorted(roles.items())),
                     input=counts.input(len(grid.names)))


def lc8_section(*, study: Study, seed: int = 0, resamples: int = 2000, reference: str | None = None) -> dict | None:
    """The report's ``lc8`` section of a LongCounsel-8 study (None for any other study): ``lc8_report`` of the
    loaded arrays, plus ``reference`` (whose labels are the reference) and ``roles`` (each coder's member role).
    A study that cannot be measured (no reference coder or trajectory yet, or a session beyond the block's
    sessions) gets ``{"unavailable": why, "input": …}``, and the rest of the report is computed as usual.
    ``input`` (``Lc8Inputs.input``) counts the trajectories, the labels and judgments read and used, and what was
    left out by reason (when unavailable: every label and judgment, under ``unavailable``)."""
    if not is_lc8_study(study):
        return None
    from metrics.core.lc8 import lc8_report

    try:
        inputs = lc8_inputs(study=study, reference=reference)
    except ValueError as why:  # Lc8Unavailable, or data the arrays cannot hold: said, the rest of the report kept
        return {"unavailable": str(why), "input": _unavailable_input(study)}
    section = lc8_report(inputs.study, resamples=resamples, seed=seed)
    section["reference"] = inputs.reference_name
    section["roles"] = inputs.roles
    section["input"] = inputs.input
    return section


def _unavailable_input(study: Study) -> dict[str, Any]:
    """``lc8.input`` of a section that could not be computed: every label and judgment of the study left out (three
    counts)."""
    counts = _Counts(labels=SessionLabel.objects.filter(study=study).count(),
                     judgments=Judgment.objects.filter(round__study=study).count())
    counts.labels_dropped["unavailable"], counts.dropped["unavailable"] = counts.labels, counts.judgments
    return counts.input(len(trajectory_names(study=study)))


def trajectory_names(*, study: Study) -> list[str]:
    """The study's trajectories (longitudinal conversations with sessions), by id: one query (the dashboard's
    trajectory choice)."""
    return list(conversations_of_study(study=study).filter(kind=Conversation.Kind.LONGITUDINAL, sessions__isnull=False)
                .order_by("external_id").values_list("external_id", flat=True).distinct())
