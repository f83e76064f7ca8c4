"""Load a study's judgments into the plain arrays the computation core takes.

The judgments (and their spans) come through one query of integer columns only (ids, not names), which
PostgreSQL aggregates into one bytea per column that numpy reads in place: no Python object per row. Names (coders,
conversations, models, attributes) come from the few small tables they live in and are attached as
``Categorical`` columns (codes into the names), which the core factorises with integer operations.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Max, Min, QuerySet
from django.db.models.expressions import RawSQL

from annotation.models import AttributeDefinition, Judgment, Round, Span, Study, StudyMember
from annotation.schema_document import index_thresholds
from annotation.selectors import conversations_of_study, study_coders
from benchmark.models import Conversation, Dataset, ModelResponse, Turn
from common.outage import read_after_commit
from common.rounds import round_name
from metrics.models import MetricRun

if TYPE_CHECKING:
    import numpy as np

    from metrics.core.report import AttributeSpec, JudgmentTable, SpanTable

# numpy and the computation core are imported inside the loaders, which run in Celery workers: web workers import
# this module for its run lookups and must not load the science stack with it (tests/cab/test_urls.py).

@dataclass(frozen=True)
class ReportInputs:
    attributes: list[AttributeSpec]
    judgments: JudgmentTable
    spans: SpanTable
    response_texts: dict[tuple[str, str, int, str], str]
    conversation_kinds: dict[tuple[str, str], str]
    subcategory_attribute: dict[str, str]
    panel: tuple[str, ...] | None
    experts: tuple[str, ...]  # the study's gold-panel members: their own codings are never a reviewer's
    methods: tuple[str, ...] = ()  # the study's automated coders: never reviewers, not in the indices
    models: tuple[str, ...] = ()  # the study's model slots: one without a scored response is named in the warnings
    # The report's thresholds the schema's indices block sets, by ReportParams field (UIRI's bands, the trajectories'
    # flat slope, the coupling's significance); one it does not give is absent, and the run keeps its default
    thresholds: Mapping[str, Any] = field(default_factory=dict)


def attribute_specs(*, study: Study) -> list[AttributeSpec]:
    from metrics.core.report import AttributeSpec

    specs = []
    for a in AttributeDefinition.objects.filter(schema_id=study.schema_id).order_by("position"):
        specs.append(
            AttributeSpec(
                code=a.code,
                group=a.group,
                cluster=a.cluster or None,
                scale=tuple(range(a.scale_min, a.scale_max + 1)),
                level=a.level,
                bucket={int(k): int(v) for k, v in a.bucket.items()},
                risk={int(k): float(v) for k, v in a.risk.items()} if a.risk is not None else None,
                uiri=a.counts_toward_uiri,
                unit=a.unit,
            )
        )
    return specs


def subcategory_attributes(*, study: Study) -> dict[str, str]:
    """Span subcategory slug -> its attribute's code, in schema order (span ratios read "second : first" of each
    attribute's pair): what the report reads, and what a study bundle carries for its recompute."""
    return dict(
        study.schema.subcategories.order_by("attribute__position", "position").values_list("slug", "attribute__code")
    )


def int_columns(columns: Sequence[tuple[str, str]], source: str) -> list[np.ndarray]:
    """``SELECT <expression>, ... <source>`` for never-null integer expressions and their PostgreSQL
    ``int2``/``int4``/``int8`` types, as int64 arrays, in the rows' order.

    One query returning one row: each column aggregated server-side into one bytea of its big-endian values
    (``string_agg(int8send(x))``), which numpy reads in place. (A COPY hands over one message per row, and the
    driver's per-message cost, about 6 µs, would be most of the load at this size.) No parameters: callers inline
    integers only."""
    import numpy as np

    widths = {"int2": 2, "int4": 4, "int8": 8}
    select = "SELECT " + ", ".join(
        f"string_agg({kind}send(({expression})::{kind}), ''::bytea)" for expression, kind in columns) + f" {source}"
    with connection.cursor() as cursor:
        cursor.execute(select)
        values = cursor.fetchone()
    out = []
    for (_, kind), value in zip(columns, values, strict=True):
        data = bytes(value) if value is not None else b""
        out.append(np.frombuffer(data, dtype=f">i{widths[kind]}").astype(np.int64))
    if len({len(column) for column in out}) > 1:
        raise ValueError("an integer column of the query was null on some row")
    return out


def _id_bounds(tables: dict, models: Sequence[type]) -> dict[type, tuple[int, int] | None]:
    """(smallest, largest) id of each model's table, None when it is empty (two index lookups each)."""
    # table names from the models only: nothing from outside reaches the SQL
    bounds_of = "(SELECT min(id) FROM {0}), (SELECT max(id) FROM {0})"
    select = "SELECT " + ", ".join(bounds_of.format(tables[model]) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(select)
        bounds = cursor.fetchone()
    return {model: None if bounds[2 * i] is None else (bounds[2 * i], bounds[2 * i + 1])
            for i, model in enumerate(models)}


def _id_kind(bounds: tuple[int, int] | None) -> str:
    """``int4`` when every id of the table fits in one, else ``int8``."""
    low, high = bounds or (0, 0)
    return "int4" if low >= -(2**31) and high < 2**31 else "int8"


def packed_int_columns(fields: Sequence[tuple[str, int, int]], source: str, *, fits: str) -> list[np.ndarray] | None:
    """``int_columns`` of never-null integer expressions known to lie in [low, high], packed server-side into as
    few int8 words as their bit widths allow (each field as ``value - low`` at its own bit offset), so PostgreSQL
    aggregates and sends a few values per row instead of one per column (its cost is per value: about 60 ms per
    column of 690,000 rows). ``fits`` is an SQL condition, evaluated by the same statement (the same snapshot),
    that holds when every value lies in its bounds; when it does not (a bound read earlier has moved, or a value
    is outside what the caller expected) the words are garbage and None is returned: the caller falls back to
    ``int_columns``. No parameters (callers inline integers only)."""
    import numpy as np

    bits = [max(high - low, 0).bit_length() for _, low, high in fields]
    if any(b > 62 for b in bits):
        return None
    used: list[int] = []  # bits taken in each word
    placed: dict[int, tuple[int, int]] = {}  # field -> (word, shift)
    for i in sorted(range(len(fields)), key=lambda i: -bits[i]):  # first fit, widest first
        word = next((w for w, taken in enumerate(used) if taken + bits[i] <= 63), len(used))
        if word == len(used):
            used.append(0)
        placed[i] = (word, used[word])
        used[word] += bits[i]
    terms: list[list[str]] = [[] for _ in used]
    for i, (expression, low, _) in enumerate(fields):
        word, shift = placed[i]
        if bits[i]:  # ``|`` never overflows, so a value out of its bounds cannot make the statement fail
            terms[word].append(f"(((({expression})::int8 - ({low})::int8)) << {shift})")
    words = [" | ".join(t) or "0::int8" for t in terms]
    select = ("SELECT " + ", ".join(f"string_agg(int8send({w}), ''::bytea)" for w in words)
              + f", ({fits}) {source}")
    with connection.cursor() as cursor:
        cursor.execute(select)
        *values, fitted = cursor.fetchone()
    if fitted is not True:
        return None
    decoded = [np.frombuffer(bytes(v) if v is not None else b"", dtype=">i8").astype(np.int64) for v in values]
    out = []
    for i, (_, low, _) in enumerate(fields):
        word, shift = placed[i]
        out.append(((decoded[word] >> shift) & ((1 << bits[i]) - 1)) + low)
    return out


def _ids(values: Sequence[int] | np.ndarray) -> str:
    """An SQL list of integer ids (integers only, so nothing can be injected); (NULL) when empty."""
    return ", ".join(str(int(v)) for v in values) or "NULL"


def _distinct(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct non-negative ids in O(n) (a presence map, not a sort of every row)."""
    import numpy as np

    if len(ids) == 0:
        return np.zeros(0, dtype=np.int64)
    present = np.zeros(int(ids.max()) + 1, dtype=bool)
    present[ids] = True
    return np.flatnonzero(present)


def _pk_in(ids: np.ndarray) -> dict[str, object]:
    """A filter on these primary keys as one array parameter (a list of ten thousands of ids would exceed the
    protocol's 65,535 parameters)."""
    # the array as its text literal: one string, not a list dumped item by item
    return {"pk__in": RawSQL("SELECT unnest(%s::text::bigint[])", ("{" + ",".join(map(str, ids.tolist())) + "}",))}


def _lookup(ids: np.ndarray, keys: np.ndarray, values: np.ndarray, missing: int = -1) -> np.ndarray:
    """values[position of each id in keys], ``missing`` where an id is not among the keys."""
    import numpy as np

    top = max(int(ids.max()) if len(ids) else 0, int(keys.max()) if len(keys) else 0)
    table = np.full(top + 1, missing, dtype=np.int64)
    table[keys] = values
    return table[ids]


def judgment_columns(*, study: Study, round_ids: np.ndarray, tables: dict,
                     pack: bool = True) -> tuple[np.ndarray, ...]:
    """(judgment id, round id, coder id, is gold, conversation id, turn id or 0, response id or 0, attribute id,
    score) of the scored judgments of these rounds, as int64 arrays (is gold: bool), in the server's row order.

    The nine values of a row travel packed into two or three int8 words (``packed_int_columns``) between the
    bounds of their tables' ids, the rounds' ids and the schema's scales; when a value is outside them (a score
    off every scale of the schema, an id beyond a bound that moved since it was read) or ``pack`` is false, one
    column per value (``int_columns``), each as narrow as its values allow."""
    import numpy as np

    user_model = get_user_model()
    where = f"FROM {tables[Judgment]} j WHERE j.round_id IN ({_ids(round_ids)}) AND j.score IS NOT NULL"
    models = (Judgment, Conversation, Turn, ModelResponse, AttributeDefinition, user_model)
    bounds = _id_bounds(tables, models)
    if pack:
        scales = AttributeDefinition.objects.filter(schema_id=study.schema_id).aggregate(
            low=Min("scale_min"), high=Max("scale_max"))
        # an empty table has no id for a judgment to point at: any bounds will do, and the check below holds
        low_of = {model: (bounds[model] or (1, 1))[0] for model in models}
        high_of = {model: (bounds[model] or (1, 1))[1] for model in models}
        # a missing turn or response rides as the id just below its table's smallest
        fields = [
            ("j.id", low_of[Judgment], high_of[Judgment]),
            ("j.round_id", int(round_ids.min(initial=0)), int(round_ids.max(initial=0))),
            ("j.coder_id", low_of[user_model], high_of[user_model]),
            ("j.is_gold::int4", 0, 1),
            ("j.conversation_id", low_of[Conversation], high_of[Conversation]),
            (f"COALESCE(j.turn_id, {low_of[Turn] - 1})", low_of[Turn] - 1, high_of[Turn]),
            (f"COALESCE(j.response_id, {low_of[ModelResponse] - 1})", low_of[ModelResponse] - 1,
             high_of[ModelResponse]),
            ("j.attribute_id", low_of[AttributeDefinition], high_of[AttributeDefinition]),
            ("j.score", scales["low"] if scales["low"] is not None else 0,
             scales["high"] if scales["high"] is not None else 0),
        ]
        # the ids' bounds as this statement sees them (index lookups, evaluated once), the scores by aggregate
        # (table names from the models, integers only: nothing from outside reaches the SQL)
        within = [f"COALESCE((SELECT min(id) FROM {tables[model]}), {low_of[model]}) >= {low_of[model]} AND "  # noqa: S608  # nosec B608
                  f"COALESCE((SELECT max(id) FROM {tables[model]}), {high_of[model]}) <= {high_of[model]}"
                  for model in models]
        score_low, score_high = fields[-1][1:]
        within.append(f"COALESCE(min(j.score) >= {score_low} AND max(j.score) <= {score_high}, true)")
        packed = packed_int_columns(fields, where, fits=" AND ".join(within))
        if packed is not None:
            judgment_id, round_id, coder_id, gold, conversation_id, turn_id, response_id, attribute_id, score = packed
            turn_id = np.where(turn_id < low_of[Turn], 0, turn_id)
            response_id = np.where(response_id < low_of[ModelResponse], 0, response_id)
            return (judgment_id, round_id, coder_id, gold.astype(bool), conversation_id, turn_id, response_id,
                    attribute_id, score)
    # Eight columns, each as narrow as its values allow (the server's cost is per value): an id column as int4 while
    # its table's largest id fits, the gold flag on the coder's sign (gold: -1 - id, negative for every id >= 0;
    # user ids are int4).
    kind: dict[type, str] = {model: _id_kind(bounds[model]) for model in models}
    kind[Round] = _id_kind((int(round_ids.min(initial=0)), int(round_ids.max(initial=0))))
    judgment_id, round_id, signed_coder, conversation_id, turn_id, response_id, attribute_id, score = (
        int_columns(
            [("j.id", kind[Judgment]), ("j.round_id", kind[Round]),
             ("CASE WHEN j.is_gold THEN -1 - j.coder_id ELSE j.coder_id END", "int4"),
             ("j.conversation_id", kind[Conversation]), ("COALESCE(j.turn_id, 0)", kind[Turn]),
             ("COALESCE(j.response_id, 0)", kind[ModelResponse]), ("j.attribute_id", kind[AttributeDefinition]),
             ("j.score", "int4")],
            where,
        )
    )
    is_gold = signed_coder < 0
    coder_id = np.where(is_gold, -1 - signed_coder, signed_coder)
    return judgment_id, round_id, coder_id, is_gold, conversation_id, turn_id, response_id, attribute_id, score


def unscored_judgments(*, study: Study) -> int:
    """How many judgments of the study's rounds have no score (spans highlighted before a score, or a score
    cleared): the main report reads none, and counts them under ``input.dropped.unscored``."""
    return Judgment.objects.filter(round__study=study, score__isnull=True).count()


def report_inputs(*, study: Study) -> ReportInputs:
    import numpy as np

    from metrics.core.report import JudgmentTable, SpanTable
    from metrics.core.tables import Categorical

    user_model = get_user_model()
    tables = {model: connection.ops.quote_name(model._meta.db_table)
              for model in (Judgment, Span, Turn, ModelResponse, Conversation, Round, AttributeDefinition, user_model)}
    rounds = list(Round.objects.filter(study=study).order_by("pk").values_list("pk", "kind", "number"))
    round_ids = np.array([pk for pk, _, _ in rounds], dtype=np.int64)
    judgment_id, round_id, coder_id, is_gold, conversation_id, turn_id, response_id, attribute_id, score = (
        judgment_columns(study=study, round_ids=round_ids, tables=tables))
    if len(judgment_id) > 1 and not (judgment_id[1:] > judgment_id[:-1]).all():  # a re-coded judgment's last row wins
        order = np.argsort(judgment_id, kind="stable")
        judgment_id, round_id, coder_id, is_gold, conversation_id, turn_id, response_id, attribute_id, score = (
            c[order] for c in (judgment_id, round_id, coder_id, is_gold, conversation_id, turn_id, response_id,
                               attribute_id, score))

    # The judged conversations, as conversations of the study (``conversations_of_study``, the rule every section's
    # material follows): a judgment of its rounds makes its conversation the study's, so all of them are, and one
    # the study owns is known by its row alone.
    conversations = _distinct(conversation_id)
    conversation_rows = list(conversations_of_study(study=study, among=conversations.tolist()).order_by("pk")
                             .values_list("pk", "dataset__name", "external_id", "kind"))
    if len(conversation_rows) != len(conversations):  # only when a judgment went away while this loaded
        raise ValueError("the study's judgments changed while the report was loading them: run it again")
    datasets = sorted({d for _, d, _, _ in conversation_rows})
    conversation_keys = np.array([pk for pk, _, _, _ in conversation_rows], dtype=np.int64)
    conversation_code = _lookup(conversation_id, conversation_keys, np.arange(len(conversation_rows)))
    conversation_dataset = np.array([datasets.index(d) for _, d, _, _ in conversation_rows] or [0], dtype=np.int64)
    turn_keys, turn_numbers = int_columns(
        [("t.id", "int8"), ('t."index"', "int4")],
        f"FROM {tables[Turn]} t WHERE t.conversation_id IN ({_ids(conversations)})",
    )
    turn = np.where(turn_id > 0, _lookup(turn_id, turn_keys, turn_numbers, missing=0), 0)
    slots, response_keys, response_slot = _response_slots(conversations, tables)
    model_categories = [*slots, ""]
    model = np.where(response_id > 0, _lookup(response_id, response_keys, response_slot, missing=len(slots)),
                     len(slots))
    coders = _distinct(coder_id)
    usernames = dict(user_model.objects.filter(**_pk_in(coders)).values_list("pk", "username"))
    attributes = list(AttributeDefinition.objects.filter(schema_id=study.schema_id).values_list("pk", "code"))

    def categorical(ids: np.ndarray, names: dict[int, str]) -> Categorical:
        keys = np.array(sorted(names), dtype=np.int64)
        return Categorical(_lookup(ids, keys, np.arange(len(keys))), [names[k] for k in keys.tolist()])

    round_names = {pk: round_name(kind, number) for pk, kind, number in rounds}
    attribute_codes = dict(attributes)
    columns: dict[str, Any] = {
        "round": categorical(round_id, round_names),
        "coder": categorical(coder_id, usernames),
        "is_gold": is_gold,
        "dataset": Categorical(conversation_dataset[conversation_code], datasets),
        "conversation": Categorical(conversation_code, [e for _, _, e, _ in conversation_rows]),
        "turn": turn,
        "model": Categorical(model, model_categories),
        "attribute": categorical(attribute_id, attribute_codes),
    }
    judgments = JudgmentTable(**columns, score=score)

    # The spans of the study's judgments by their judgment id range (an index range scan, no join), then only
    # those of a loaded judgment: a study's judgments are mostly contiguous ids, so few are read for nothing.
    lowest, highest = (int(judgment_id.min()), int(judgment_id.max())) if len(judgment_id) else (0, -1)
    span_id, span_judgment, span_subcategory, span_start, span_end = int_columns(
        [("s.id", "int8"), ("s.judgment_id", "int8"), ("s.subcategory_id", "int8"), ("s.start", "int4"),
         ('s."end"', "int4")],
        f"FROM {tables[Span]} s WHERE s.judgment_id BETWEEN {lowest} AND {highest}",
    )
    position = np.minimum(np.searchsorted(judgment_id, span_judgment), max(len(judgment_id) - 1, 0))
    loaded = judgment_id[position] == span_judgment if len(judgment_id) else np.zeros(0, dtype=bool)
    order = np.flatnonzero(loaded)[np.argsort(span_id[loaded], kind="stable")]
    span_judgment, span_subcategory, span_start, span_end = (
        c[order] for c in (span_judgment, span_subcategory, span_start, span_end))
    row = np.searchsorted(judgment_id, span_judgment)
    subcategory_slugs = dict(study.schema.subcategories.values_list("pk", "slug"))
    span_columns: dict[str, Any] = {
        name: (Categorical(np.asarray(c.codes)[row], c.categories) if isinstance(c, Categorical) else c[row])
        for name, c in columns.items()
    }
    spans = SpanTable(**span_columns, start=span_start, end=span_end,
                      subcategory=categorical(span_subcategory, subcategory_slugs))

    # Response texts only where a span needs them (token counts of the spans), keyed by their judgments' columns.
    span_response = response_id[row]
    with_spans, first = np.unique(span_response, return_index=True)
    unit_of = {int(r): int(row[f]) for r, f in zip(with_spans.tolist(), first.tolist(), strict=True) if r > 0}
    conversation_names = [e for _, _, e, _ in conversation_rows]
    texts: dict[tuple[str, str, int, str], str] = {}
    for pk, text in _response_texts(np.array(sorted(unit_of), dtype=np.int64), tables):
        j = unit_of[pk]
        c = int(conversation_code[j])
        texts[(datasets[conversation_dataset[c]], conversation_names[c], int(turn[j]),
               model_categories[int(model[j])])] = text
    kinds = {(d, e): k for _, d, e, k in conversation_rows}
    # Schema order matters: span ratios read "second : first" of each attribute's pair.
    subcategory_attribute = subcategory_attributes(study=study)
    # Roles and the panel as the coders have them, or had them when taken off the study (their judgments stay).
    members = study_coders(study=study)
    retained = tuple(coder.username for coder in members if coder.retained)
    experts, methods = (tuple(coder.username for coder in members if coder.role == role)
                        for role in (StudyMember.Role.EXPERT, StudyMember.Role.METHOD))
    return ReportInputs(
        attributes=attribute_specs(study=study),
        judgments=judgments,
        spans=spans,
        response_texts=texts,
        conversation_kinds=kinds,
        subcategory_attribute=subcategory_attribute,
        panel=retained or None,
        experts=experts,
        methods=methods,
        models=tuple(study.model_slots or ()),
        thresholds=index_thresholds(study.schema.definition.get("indices")),  # checked at install
    )


def _response_texts(ids: np.ndarray, tables: dict) -> list[tuple[int, str]]:
    """(id, text) of these responses, in one row: the ids joined to the table as one array, their texts
    concatenated into one string with the length of each beside it, cut apart here (no row, hence no Python tuple
    from the driver, per response)."""
    import numpy as np

    with connection.cursor() as cursor:
        # table name from the model; the ids go as one parameter
        cursor.execute(
            f"SELECT string_agg(int8send(r.id), ''::bytea), string_agg(int4send(char_length(r.text)), ''::bytea), "  # noqa: S608  # nosec B608
            f"string_agg(r.text, '') FROM unnest(%s::text::bigint[]) AS wanted(id) JOIN {tables[ModelResponse]} r "
            "ON r.id = wanted.id",
            ("{" + ",".join(map(str, ids.tolist())) + "}",),
        )
        keys, lengths, joined = cursor.fetchone()
    if keys is None:
        return []
    ends = np.cumsum(np.frombuffer(bytes(lengths), dtype=">i4")).tolist()
    starts = [0, *ends[:-1]]
    pieces = (joined[start:end] for start, end in zip(starts, ends, strict=True))
    return list(zip(np.frombuffer(bytes(keys), dtype=">i8").tolist(), pieces, strict=True))


def _response_slots(conversations: np.ndarray, tables: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(model slots, response ids, slot code of each) of the responses in these conversations: one row per slot
    with its ids as an array (no Python tuple per response)."""
    import numpy as np

    # table names from the models and integer ids only (``_ids``): nothing from outside reaches the SQL
    in_conversations = f"SELECT t.id FROM {tables[Turn]} t WHERE t.conversation_id IN ({_ids(conversations)})"  # noqa: S608  # nosec B608
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.model_slot, array_agg(r.id) FROM {tables[ModelResponse]} r "  # noqa: S608  # nosec B608
                       f"WHERE r.turn_id IN ({in_conversations}) GROUP BY r.model_slot ORDER BY r.model_slot")
        grouped = cursor.fetchall()
    slots = [slot for slot, _ in grouped]
    ids = [np.asarray(pks, dtype=np.int64) for _, pks in grouped]
    keys = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    codes = np.repeat(np.arange(len(slots)), [len(i) for i in ids]) if ids else np.zeros(0, dtype=np.int64)
    return slots, keys, codes


# --- API reads (metric runs, index tables) -------------------------------------------------------------------


def metric_runs_for(*, study: Study) -> QuerySet[MetricRun]:
    return MetricRun.objects.filter(study=study).select_related("study", "requested_by").defer("result")


def metric_run_get(*, run_id: int) -> MetricRun | None:
    """A run without its result (which can be megabytes); None when there is no such run."""
    return MetricRun.objects.select_related("study", "requested_by").defer("result").filter(pk=run_id).first()


def metric_run_result(*, run_id: int) -> dict | None:
    return MetricRun.objects.filter(pk=run_id).values_list("result", flat=True).first()


NEWEST_FIRST = ("-finished_at", "-pk")
"""The order of a study's succeeded runs, newest first: the first is the study's report (the report pages, the
overview, the API's and ``cab download``'s run when none is named). The one home of which run is the newest."""


def runs_succeeded_newest_first(*, study: Study) -> QuerySet[MetricRun]:
    """The study's succeeded runs in ``NEWEST_FIRST`` order."""
    return MetricRun.objects.filter(study=study, status=MetricRun.Status.SUCCEEDED).order_by(*NEWEST_FIRST)


def metric_run_latest_succeeded(*, study: Study, run_id: int | None = None) -> MetricRun | None:
    """The newest succeeded run of the study (or the given one, when it is the study's and succeeded), with its
    result; None when there is none."""
    runs = runs_succeeded_newest_first(study=study)
    if run_id is not None:
        runs = runs.filter(pk=run_id)
    return runs.first()


def _report_tables(result: dict) -> Iterator[tuple[str, dict[str, dict]]]:
    """The entries of a report's ``indices`` shaped as a table: a non-empty mapping of rows, each a mapping."""
    indices = result.get("indices") if isinstance(result, dict) else None
    for name, table in (indices or {}).items():
        if isinstance(table, dict) and table and all(isinstance(row, dict) for row in table.values()):
            yield name, table


def _flat(table: dict[str, dict]) -> dict[str, dict[str, object]] | None:
    """The table's rows with an interval's cells (``{low, high}``, or any mapping of plain values) as a column per
    key, ``COLUMN_KEY``; None when a cell holds more (a table, a list): no CSV row can hold it. An empty mapping is
    an empty table, not an interval (an interval has its ends, an undefined one None): ``by_kind`` of a report
    without main-round judgments holds ``{"ari": {}, …, "n_clusters": 0}`` per kind, which would otherwise pass for
    a per-model table whose models are ``single`` and ``multi``."""
    rows: dict[str, dict[str, object]] = {}
    for model, row in table.items():
        cells = rows[model] = {}
        for column, cell in row.items():
            if isinstance(cell, dict) and cell and not any(isinstance(value, dict | list) for value in cell.values()):
                cells.update({f"{column}_{key}": value for key, value in cell.items()})
            elif isinstance(cell, dict | list):
                return None
            else:
                cells[column] = cell
    return rows


def index_tables(*, result: dict) -> dict[str, tuple[list[str], list[list]]]:
    """The per-model tables of a report's ``indices`` (flags, ari, attribute_risk, fingerprint, ari_ci, … whatever
    the report holds in the shape {MODEL: {COLUMN: number or {low, high}}}) as (header, rows), one row per model;
    an interval is a column per end (``D_low``, ``D_high``). The tables of tables are ``index_tables_left_out``."""
    tables: dict[str, tuple[list[str], list[list]]] = {}
    for name, table in _report_tables(result):
        rows = _flat(table)
        if rows is None:
            continue
        columns: list[str] = []
        for row in rows.values():
            columns += [column for column in row if column not in columns]
        tables[name] = (["model", *columns], [[model, *(row.get(c) for c in columns)] for model, row in rows.items()])
    return tables


def index_tables_left_out(*, result: dict) -> list[str]:
    """The tables of a report's ``indices`` that have no CSV: those whose cells are tables themselves (``by_kind``,
    ``by_dataset``: the per-model tables per conversation kind and per dataset), in report.json only. The exports
    page names them, and the API download's 404 says why, so none is left out silently."""
    return [name for name, table in _report_tables(result) if _flat(table) is None]


def latest_succeeded_runs(*, study_ids: list[int]) -> dict[int, tuple[int, list[str], list[str]]]:
    """study id -> (id of its newest succeeded run, the per-model tables its report holds: ``index_tables``, and
    those left out: ``index_tables_left_out``), for the studies that have one (one query, one row per study)."""
    latest: dict[int, tuple[int, list[str], list[str]]] = {}
    for study_id, run_id, indices in (
        MetricRun.objects.filter(study_id__in=study_ids, status=MetricRun.Status.SUCCEEDED)
        .order_by("study_id", *NEWEST_FIRST).distinct("study_id")
        .values_list("study_id", "pk", "result__indices")
    ):
        result = {"indices": indices}
        latest[study_id] = (run_id, list(index_tables(result=result)), index_tables_left_out(result=result))
    return latest


# The words on a run whose request committed but which the database, gone meanwhile, cannot say more of.
RUN_UNREAD = ("what became of it cannot be read just now (the database is briefly unreachable): the reports page "
              "shows it")
_STATE = ("status", "enqueued_at", "progress_message", "error")


def metric_run_said(*, run: MetricRun) -> str:
    """What happened to a just-requested run, in words for the page that requested it (read afresh: the broker may
    have refused it, or an in-process run may already be done). The run is saved, its request committed: when the
    database cannot be reached to read it, the words say so (``common.outage.read_after_commit``), and the page
    never answers 503 "Nothing was changed"."""
    return _said(run.pk, read_after_commit(lambda: MetricRun.objects.only(*_STATE).get(pk=run.pk), otherwise=None))


def metric_run_latest_said(*, study: Study, trigger: str) -> str:
    """What happened to the newest run of ``trigger`` that a just-committed action asked for (closing a round starts
    one in its transaction), in the words of ``metric_run_said``."""
    latest = read_after_commit(
        lambda: list(MetricRun.objects.only(*_STATE).filter(study=study, trigger=trigger).order_by("-pk")[:1]),
        otherwise=None)
    if latest is None:
        return f"a metrics run was requested; {RUN_UNREAD}"
    return _said(latest[0].pk, latest[0]) if latest else "no metrics run was requested"


def _said(run_id: int, run: MetricRun | None) -> str:
    if run is None:
        return f"metrics run {run_id} was requested; {RUN_UNREAD}"
    if run.status == MetricRun.Status.SUCCEEDED:
        return f"metrics run {run_id} computed the report"
    if run.status == MetricRun.Status.FAILED:
        return f"metrics run {run_id} failed: {run.error.splitlines()[0] if run.error else 'no reason recorded'}"
    if run.enqueued_at is not None:
        return f"metrics run {run_id} was queued for a worker"
    if run.progress_message.startswith("waiting for the task broker"):
        return (f"metrics run {run_id} is waiting: the task broker cannot be reached; it starts by itself when the "
                "broker is back")
    return f"metrics run {run_id} was requested"


def reviewer_count(*, study: Study) -> int:
    """How many reviewers the study has (members in the reviewer role): the most a panel of the top k can hold, so
    the cap of a run's panel size k on the reports overview (0: none yet)."""
    return StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER).count()


def core_attributes(attributes: Sequence[AttributeSpec]) -> list[AttributeSpec]:
    """The attributes the main report's core computes over: all but session-unit ones (a kind's session-level
    items), which only the kind's section reads; their judgments count as dropped in ``input``. Every attribute
    of a study without session units, unchanged."""
    return [a for a in attributes if a.unit != AttributeDefinition.Unit.SESSION]


def usernames_of(user_ids: set[int]) -> list[tuple[int, str]]:
    """Usernames of coders who are not (or no longer) members of the study: one query, only when there are any."""
    if not user_ids:
        return []
    return list(get_user_model().objects.filter(pk__in=sorted(user_ids)).values_list("pk", "username"))


# The longest history name (metrics.core.history_names): a dataset's name (each character at most three, "/" written
# %2F), "/", a conversation's external id.
HISTORY_NAME_LENGTH = (3 * Dataset._meta.get_field("name").max_length + 1  # type: ignore[operator]
                       + Conversation._meta.get_field("external_id").max_length)


def history_names_of(histories: QuerySet[Conversation]) -> dict[int, str]:
    """Conversation id -> its name (``metrics.core.history_names``: the external id, or DATASET/EXTERNAL_ID when two
    of ``histories`` would share it), in the queryset's order: one query. ``histories`` are ALL of a study's
    histories of its kind's section (whose names are unique among them), however few of them the caller wants."""
    from metrics.core.history_names import history_names

    rows = list(histories.values_list("pk", "dataset__name", "external_id"))
    names = history_names((dataset, external_id) for _pk, dataset, external_id in rows)
    return {pk: names[(dataset, external_id)] for pk, dataset, external_id in rows}


def history_named(histories: QuerySet[Conversation], name: str) -> list[int]:
    """The id of the history of ``histories`` (all of a study's, as ``history_names_of`` takes them) named ``name``;
    none when no history has that name: one query (a page's or a filter's one history)."""
    return [pk for pk, named in history_names_of(histories).items() if named == name]
