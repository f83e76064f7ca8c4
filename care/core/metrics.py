"""CARE metrics (docs/care.md#metrics, docs/care.md#in-the-report): alignment, crisis vs control windows, session
quality, judge validation, and `care_report`, the section of the metrics report.

Input format (plain data, no Django; the loader builds it with one query per table):

- `histories`: one `CareHistory` per conversation: its id, the assistant model under study and its sessions in
  order, each a `CareSession(index, kind, crisis_type, turns)` with the turn indices (within the history) in order.
- `reference`: the `CareCoding` the states, alignment, control windows and quality come from (the study's
  consensus or chosen coder). A `CareCoding` holds
  `user[(conversation, turn_index)] -> UserCode`, `assistant[(conversation, turn_index)] -> AssistantCode` and
  `checklists[(conversation, session_index)] -> {item id: present 0/1}`; anything not coded is simply absent.
- `coders`: `{coder name: CareCoding}` for judge validation (humans and the judge; every pair is compared).
- `items`: the schema's checklist items, `ChecklistItem(id, type, crisis_types)`.
- `params`: `CareParams` (action strategies, which sessions the quality rates cover, the control metric tested,
  bootstrap resamples, seed and level).

Reading choices beyond the engine's (R*, A* in `care`), named here and in docs/care.md:

- M1 One assistant model per history (a history's turn has one response; session codes carry no model, so a
  session's checklist belongs to the history's model). Mode, when a study has one, is part of the model slot: a
  response carries its model slot and nothing else that names the assistant, so a study that compares modes (the
  same model with and without memory, say) gives each (model, mode) a slot of its own (`Alpha`, `Alpha+memory`),
  and every per-model figure (`alignment`, `alignment_by`, `alignment_by_history`, `quality`, `control`) is then
  per model and mode.
- M2 A history's crisis type (the `alignment_by` key) is that of its first crisis session, else of its first
  session with a crisis type, else "none"; every action turn of the history counts under it.
- M3 Rates are pooled (ratio of summed counts over the group's turns or sessions), not means of per-history rates.
  Every coded assistant turn counts, before the crisis too (its state is Rebuilding: R7).
- M4 N_assistant (advice frequency) = assistant turns with a coded strategy; N_ready = action turns whose current
  state (not candidate) is Open or Rebuilding.
- C1 A crisis window = the turns of one crisis or callback session (the sessions that open an episode).
- C2 A control window = as many consecutive turns of the same history, all in chat sessions (it may span adjacent
  chat sessions), none with state Acute or an Acute marker in the reference coding; the one whose start is nearest
  the crisis window's start is taken, the earlier on a tie; a crisis window with none is left out; two crisis
  windows may share a control window.
- C3 Per history, AR and PR of its crisis windows and of their controls pool their action turns (a control window
  that two crisis windows share counts once for each); the difference is crisis - control. `delta_AR`/`delta_PR`
  are means over histories where both sides have an action turn; `n_histories` counts them. The Wilcoxon test and
  rank-biserial r are on the `control_metric` differences (AR by default), two-sided, zero differences dropped
  (scipy's "wilcox"), r = (R+ - R-) / (R+ + R-) over the same ranks; both null when no difference is nonzero.
- Q1 Quality sessions: crisis and callback sessions (`quality_scope="episode_sessions"`), or also every session
  after the first crisis (`"after_crisis"`). The scope is `CareParams.quality_scope`, set from the study's setting
  (`care.kind.QUALITY_SCOPE`; `episode_sessions` unless the study chose otherwise) and named in the report's
  `care.parameters`. A session counts when its checklist was coded.
- Q2 A session's crisis type is its own, else that of the latest earlier session with one, else "none": it is the
  `quality_by` key (a callback of another crisis type than the history's counts under its own type, not under the
  history's `alignment_by` key of M2), and a type with no quality session has no entry. An item applies when it is
  tagged with that type or has no tag; only applicable items count, for all three rates.
- Q3 An applicable item missing from a coded checklist is absent (an unticked box), so a missing required item is
  an omission.
- V1 Validation compares every pair of coders ("A|B", A < B) on the units both coded; agreement is a fraction
  (0-1), κ is scikit-learn's unweighted Cohen's κ over the labels either side used, null when undefined.
- V2 Marker direction: each marker becomes none/below/at/above relative to the current state, i.e. the reference
  coding's state the turn's marker is judged against (`TurnState.before`), the same state for both coders.
- V3 Intervals resample histories: one set of draws for every field and pair, `default_rng(seed).integers(0, n,
  size=(resamples, n))` over the n histories in name order, each row one resample in which a history drawn k times
  counts each of its units k times. A resample's agreement and κ come from its pooled confusion matrix; the interval
  is the (1 - level)/2 and (1 + level)/2 quantiles (numpy's default, linear) of the resamples where the figure is
  defined (level 0.95). They extend each entry with `agreement_ci` and `kappa_ci` ([low, high], null when
  `resamples` is 0 or no resample defines the figure), and `n_histories`, the histories the pair's units fall in:
  the clusters the intervals rest on (the report's warnings name a pair with fewer than 10); `resamples`, the run's
  B, and `n_resamples` = {agreement, kappa}, the resamples each interval rests on (those where its figure is
  defined: κ is 0/0 where both coders give one label throughout; the warnings name one on under 90% of B).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from scipy.stats import rankdata, wilcoxon
from sklearn.metrics import cohen_kappa_score

from metrics.core.bootstrap import percentile_interval
from metrics.core.common import nan_to_none, to_jsonable
from metrics.core.kappa import kappa_from_confusion

from .recovery import (
    ACTION_STRATEGIES,
    ALIGNED,
    EPISODE_KINDS,
    LAG,
    NO_MARKER,
    PREMATURE,
    STATES,
    AssistantCode,
    SessionCodes,
    TurnState,
    UserCode,
    alignment,
    is_action,
    recovery_states,
)

NO_CRISIS = "none"
ITEM_TYPES = frozenset({"productive", "unproductive", "required"})
QUALITY_SCOPES = frozenset({"episode_sessions", "after_crisis"})
CONTROL_METRICS = frozenset({"AR", "PR"})
VALIDATION_FIELDS: tuple[str, ...] = ("crisis", "marker", "marker_direction", "strategy", "horizon")
READY_STATES = frozenset({"Open", "Rebuilding"})


@dataclass(frozen=True)
class CareSession:
    index: int
    kind: str
    crisis_type: str | None
    turns: tuple[int, ...]


@dataclass(frozen=True)
class CareHistory:
    conversation: str
    model: str
    sessions: tuple[CareSession, ...]


@dataclass(frozen=True)
class ChecklistItem:
    id: str
    type: str  # productive | unproductive | required
    crisis_types: frozenset[str] = frozenset()  # empty: applies to every crisis type (Q2)

    def __post_init__(self) -> None:
        if self.type not in ITEM_TYPES:
            raise ValueError(f"checklist item {self.id!r}: unknown type {self.type!r}")


@dataclass(frozen=True)
class CareCoding:
    user: Mapping[tuple[str, int], UserCode] = field(default_factory=dict)
    assistant: Mapping[tuple[str, int], AssistantCode] = field(default_factory=dict)
    checklists: Mapping[tuple[str, int], Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class CareParams:
    action_strategies: frozenset[str] = ACTION_STRATEGIES
    quality_scope: str = "episode_sessions"
    control_metric: str = "AR"
    resamples: int = 1000
    seed: int = 0
    ci_level: float = 0.95

    def __post_init__(self) -> None:
        if self.quality_scope not in QUALITY_SCOPES:
            raise ValueError(f"quality_scope must be one of {sorted(QUALITY_SCOPES)}")
        if self.control_metric not in CONTROL_METRICS:
            raise ValueError(f"control_metric must be one of {sorted(CONTROL_METRICS)}")
        if self.resamples < 0 or not 0 < self.ci_level < 1:
            raise ValueError("resamples must be >= 0 and ci_level in (0, 1)")


@dataclass(frozen=True)
class ScoredTurn:
    """One turn of a history under a coding: where it sits, the engine's state, and its assistant turn's label."""

    position: int
    turn_index: int
    session_index: int
    session_kind: str
    user: UserCode | None
    state: TurnState
    assistant: AssistantCode | None
    action: bool
    label: str | None


# --- the walk --------------------------------------------------------------------------------------------------


def score_history(
    history: CareHistory, coding: CareCoding, action_strategies: frozenset[str] = ACTION_STRATEGIES
) -> list[ScoredTurn]:
    """Every turn of the history with its recovery state and, for an action turn, its alignment label."""
    conversation = history.conversation
    sessions = sorted(history.sessions, key=lambda s: s.index)
    codes = [SessionCodes(s.kind, [coding.user.get((conversation, t)) for t in s.turns]) for s in sessions]
    states = iter(recovery_states(codes))
    out: list[ScoredTurn] = []
    for session in sessions:
        for turn_index in session.turns:
            state = next(states)
            user = coding.user.get((conversation, turn_index))
            assistant = coding.assistant.get((conversation, turn_index))
            action = is_action(assistant, action_strategies)
            label = None
            if action:
                assert assistant is not None
                label = alignment(state, assistant, user.request if user else None)
            out.append(
                ScoredTurn(len(out), turn_index, session.index, session.kind, user, state, assistant, action, label)
            )
    return out


def history_crisis_type(history: CareHistory) -> str:
    """M2: the first crisis session's type, else the first session type given, else "none"."""
    sessions = sorted(history.sessions, key=lambda s: s.index)
    for s in sessions:
        if s.kind == "crisis" and s.crisis_type:
            return s.crisis_type
    return next((s.crisis_type for s in sessions if s.crisis_type), NO_CRISIS)


# --- alignment -------------------------------------------------------------------------------------------------


@dataclass
class AlignmentCounts:
    n_assistant: int = 0
    n_action: int = 0
    aligned: int = 0
    premature: int = 0
    lag: int = 0
    n_ready: int = 0

    def add(self, turns: Sequence[ScoredTurn]) -> None:
        for t in turns:
            self.n_assistant += t.assistant is not None and t.assistant.strategy is not None
            self.n_action += t.action
            self.aligned += t.label == ALIGNED
            self.premature += t.label == PREMATURE
            self.lag += t.label == LAG
            self.n_ready += t.action and t.state.state in READY_STATES

    def figures(self) -> dict[str, float | int | None]:
        return {
            "AR": _ratio(self.aligned, self.n_action),
            "PR": _ratio(self.premature, self.n_action),
            "LR": _ratio(self.lag, self.n_ready),
            "advice_frequency": _ratio(self.n_action, self.n_assistant),
            "n_action": self.n_action,
            "n_ready": self.n_ready,
        }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def alignment_by_history(
    histories: Sequence[CareHistory], scored: Mapping[str, Sequence[ScoredTurn]]
) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """care.alignment_by_history[CONVERSATION][MODEL]: AR, PR, LR, advice frequency, n_action, n_ready of each
    history, under its one model (M1), every history included (one without an action turn has null rates)."""
    out = {}
    for h in histories:
        counts = AlignmentCounts()
        counts.add(scored[h.conversation])
        out[h.conversation] = {h.model: counts.figures()}
    return out


def alignment_tables(
    histories: Sequence[CareHistory], scored: Mapping[str, Sequence[ScoredTurn]]
) -> tuple[dict[str, dict], dict[str, dict[str, dict]]]:
    """(care.alignment[MODEL], care.alignment_by[CRISIS_TYPE][MODEL]), pooled over the group's turns (M3)."""
    pooled: dict[str, AlignmentCounts] = {}
    by_type: dict[str, dict[str, AlignmentCounts]] = {}
    for h in histories:
        turns = scored[h.conversation]
        pooled.setdefault(h.model, AlignmentCounts()).add(turns)
        by_type.setdefault(history_crisis_type(h), {}).setdefault(h.model, AlignmentCounts()).add(turns)
    return (
        {m: c.figures() for m, c in sorted(pooled.items())},
        {ct: {m: c.figures() for m, c in sorted(per.items())} for ct, per in sorted(by_type.items())},
    )


# --- crisis vs matched control windows ------------------------------------------------------------------------


def crisis_windows(turns: Sequence[ScoredTurn]) -> list[tuple[int, int]]:
    """(start position, length) of every crisis or callback session's turns (C1)."""
    windows: dict[int, list[int]] = {}
    for t in turns:
        if t.session_kind in EPISODE_KINDS:
            windows.setdefault(t.session_index, []).append(t.position)
    return [(positions[0], len(positions)) for _, positions in sorted(windows.items())]


def matched_control(turns: Sequence[ScoredTurn], start: int, length: int) -> int | None:
    """Start of the nearest control window of the given length (C2), None when the history has none."""
    eligible = np.array(
        [
            t.session_kind == "chat" and t.state.state != "Acute" and not (t.user and t.user.marker == "Acute")
            for t in turns
        ],
        dtype=bool,
    )
    n = len(eligible)
    if length <= 0 or length > n:
        return None
    blocked = np.concatenate([[0], np.cumsum(~eligible)])
    starts = np.arange(n - length + 1)
    ok = starts[blocked[starts + length] - blocked[starts] == 0]
    if ok.size == 0:
        return None
    # nearest start, the earlier one on a tie: lexsort's last key is the primary one
    return int(ok[np.lexsort((ok, np.abs(ok - start)))[0]])


def _window_rates(turns: Sequence[ScoredTurn], windows: Sequence[tuple[int, int]]) -> tuple[float | None, float | None]:
    counts = AlignmentCounts()
    for start, length in windows:
        counts.add(turns[start : start + length])
    return _ratio(counts.aligned, counts.n_action), _ratio(counts.premature, counts.n_action)


def control_differences(turns: Sequence[ScoredTurn]) -> tuple[float, float] | None:
    """(AR, PR) of the history's crisis windows minus those of their matched controls; None when undefined (C3)."""
    crisis, control = [], []
    for start, length in crisis_windows(turns):
        matched = matched_control(turns, start, length)
        if matched is not None:
            crisis.append((start, length))
            control.append((matched, length))
    ar_crisis, pr_crisis = _window_rates(turns, crisis)
    ar_control, pr_control = _window_rates(turns, control)
    if ar_crisis is None or ar_control is None or pr_crisis is None or pr_control is None:
        return None
    return ar_crisis - ar_control, pr_crisis - pr_control


def signed_rank_test(differences: Sequence[float]) -> tuple[float | None, float | None]:
    """(two-sided Wilcoxon signed-rank p, matched-pairs rank-biserial r); zero differences dropped (C3)."""
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's normal approximation on n = 1
        p = float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)
    ranks = rankdata(np.abs(d))
    r_plus, r_minus = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    return nan_to_none(p), (r_plus - r_minus) / (r_plus + r_minus)


def control_table(
    histories: Sequence[CareHistory], scored: Mapping[str, Sequence[ScoredTurn]], metric: str = "AR"
) -> dict[str, dict[str, float | int | None]]:
    """care.control[MODEL] = {delta_AR, delta_PR, wilcoxon_p, rank_biserial_r, n_histories}."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for h in histories:
        pairs.setdefault(h.model, [])
        diff = control_differences(scored[h.conversation])
        if diff is not None:
            pairs[h.model].append(diff)
    out = {}
    for model, diffs in sorted(pairs.items()):
        tested = [d[0] if metric == "AR" else d[1] for d in diffs]
        p, r = signed_rank_test(tested)
        out[model] = {
            "delta_AR": float(np.mean([d[0] for d in diffs])) if diffs else None,
            "delta_PR": float(np.mean([d[1] for d in diffs])) if diffs else None,
            "wilcoxon_p": p,
            "rank_biserial_r": r,
            "n_histories": len(diffs),
        }
    return out


# --- session quality -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionQuality:
    conversation: str
    session_index: int
    crisis_type: str
    productive: bool
    unproductive: bool
    omission: bool


def quality_sessions(history: CareHistory, scope: str = "episode_sessions") -> list[tuple[CareSession, str | None]]:
    """The history's sessions the quality scope takes (Q1: its crisis and callback sessions, and with
    ``after_crisis`` every session after its first crisis), in order, each with the crisis type in force there."""
    out = []
    crisis_type: str | None = None
    after_crisis = False
    for s in sorted(history.sessions, key=lambda s: s.index):
        crisis_type = s.crisis_type or crisis_type
        after_crisis = after_crisis or s.kind == "crisis"
        if s.kind in EPISODE_KINDS or (scope == "after_crisis" and after_crisis):
            out.append((s, crisis_type))
    return out


def session_quality(
    history: CareHistory, coding: CareCoding, items: Sequence[ChecklistItem], scope: str = "episode_sessions"
) -> list[SessionQuality]:
    """Productive / unproductive / omission of each quality session of the history with a coded checklist (Q1-Q3)."""
    out = []
    for s, crisis_type in quality_sessions(history, scope):
        checklist = coding.checklists.get((history.conversation, s.index))
        if checklist is None:  # counted by ``care.input.no_checklist`` (``CareInputs.no_checklist``)
            continue
        ct = crisis_type or NO_CRISIS
        applicable = [i for i in items if not i.crisis_types or ct in i.crisis_types]
        present = {i.id: checklist.get(i.id, 0) == 1 for i in applicable}
        out.append(
            SessionQuality(
                history.conversation,
                s.index,
                ct,
                productive=any(present[i.id] for i in applicable if i.type == "productive"),
                unproductive=any(present[i.id] for i in applicable if i.type == "unproductive"),
                omission=any(not present[i.id] for i in applicable if i.type == "required"),
            )
        )
    return out


def _quality_figures(sessions: Sequence[SessionQuality]) -> dict[str, float | int | None]:
    n = len(sessions)
    return {
        "ProdR": _ratio(sum(s.productive for s in sessions), n),
        "UnprodR": _ratio(sum(s.unproductive for s in sessions), n),
        "OmitR": _ratio(sum(s.omission for s in sessions), n),
        "n_sessions": n,
    }


def quality_tables(
    histories: Sequence[CareHistory], coding: CareCoding, items: Sequence[ChecklistItem], scope: str
) -> tuple[dict[str, dict], dict[str, dict[str, dict]]]:
    """(care.quality[MODEL], care.quality_by[CRISIS_TYPE][MODEL]); by the session's crisis type (Q2)."""
    pooled: dict[str, list[SessionQuality]] = {}
    by_type: dict[str, dict[str, list[SessionQuality]]] = {}
    for h in histories:
        sessions = session_quality(h, coding, items, scope)
        pooled.setdefault(h.model, []).extend(sessions)
        for s in sessions:
            by_type.setdefault(s.crisis_type, {}).setdefault(h.model, []).append(s)
    return (
        {m: _quality_figures(v) for m, v in sorted(pooled.items())},
        {ct: {m: _quality_figures(v) for m, v in sorted(per.items())} for ct, per in sorted(by_type.items())},
    )


# --- judge validation ------------------------------------------------------------------------------------------


def marker_direction(marker: str | None, current: str) -> str | None:
    """none / below / at / above: which side of the current state a marker lies on (V2)."""
    if marker is None:
        return None
    if marker == NO_MARKER:
        return NO_MARKER
    m, s = STATES.index(marker), STATES.index(current)
    return "below" if m < s else "at" if m == s else "above"


def _field_values(
    histories: Sequence[CareHistory], coding: CareCoding, before: Mapping[tuple[str, int], str], name: str
) -> dict[tuple[str, int], str]:
    """(conversation, turn_index) -> this coder's value of the field, for the units the coder coded."""
    out: dict[tuple[str, int], str] = {}
    for h in histories:
        for s in h.sessions:
            for t in s.turns:
                key = (h.conversation, t)
                value: str | None
                if name in ("strategy", "horizon"):
                    a = coding.assistant.get(key)
                    value = getattr(a, name) if a is not None else None
                else:
                    u = coding.user.get(key)
                    if u is None:
                        value = None
                    elif name == "marker_direction":
                        value = marker_direction(u.marker, before[key])
                    else:
                        value = getattr(u, name)
                if value is not None:
                    out[key] = value
    return out


def unweighted_kappa_from_confusion(confusion: np.ndarray) -> np.ndarray:
    """Cohen's unweighted κ of every (..., L, L) confusion matrix, NaN where undefined: the report's one κ
    (``kappa.kappa_from_confusion``) with every cell nominal."""
    return kappa_from_confusion(confusion, np.array(True))


def cohen_kappa(a: Sequence[str] | Sequence[int], b: Sequence[str] | Sequence[int]) -> float | None:
    """scikit-learn's unweighted Cohen's κ; None with no unit or when undefined (no expected disagreement)."""
    if not a:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(cohen_kappa_score(list(a), list(b), replace_undefined_by=np.nan))
    return value if math.isfinite(value) else None


def _interval(samples: np.ndarray, level: float) -> tuple[list[float | None], int]:
    """[low, high] over the resamples where the figure is defined, and how many those are (the report's one rule:
    ``metrics.core.bootstrap.percentile_interval``)."""
    low, high, used = percentile_interval(samples[:, None], level)
    return [nan_to_none(float(low[0])), nan_to_none(float(high[0]))], int(used[0])


def history_draws(n_histories: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples x n_histories) times each history is drawn, from `default_rng(seed).integers(0, n, (B, n))`."""
    if n_histories == 0 or resamples == 0:
        return np.zeros((resamples, n_histories))
    picks = np.random.default_rng(seed).integers(0, n_histories, size=(resamples, n_histories))
    return np.stack([np.bincount(row, minlength=n_histories) for row in picks]).astype(float)


def _pair_entry(
    units: Sequence[tuple[str, int]],
    a: Sequence[str],
    b: Sequence[str],
    history_of: Mapping[str, int],
    draws: np.ndarray,
    ci_level: float,
) -> dict[str, object]:
    """Agreement, κ and n of one field between two coders, with intervals over the history resamples (V1, V3).

    Labels are numbered before scikit-learn sees them (its confusion matrix on strings sorts objects). Each
    history's confusion matrix is one row of cells, so every resample's matrix is one product with the draws.
    """
    labels = sorted(set(a) | set(b))
    code = {v: i for i, v in enumerate(labels)}
    x = [code[v] for v in a]
    y = [code[v] for v in b]
    entry: dict[str, object] = {
        "agreement": _ratio(sum(p == q for p, q in zip(x, y, strict=True)), len(units)),
        "kappa": cohen_kappa(x, y),
        "n": len(units),
        "agreement_ci": [None, None],
        "kappa_ci": [None, None],
        # the histories the units fall in: a resample draws every history, but only these carry the pair's units
        "n_histories": len({u[0] for u in units}),
        # of the run's resamples, those each interval rests on (its figure defined there: κ is 0/0 in a resample
        # where both coders give one and the same label throughout), docs/metrics.md#resamples-an-interval-rests-on
        "resamples": int(draws.shape[0]),
        "n_resamples": {"agreement": 0, "kappa": 0},
    }
    resamples, n_histories = draws.shape
    if resamples and units:
        size = len(labels)
        per_history = np.zeros((n_histories, size * size))
        cells = [(history_of[u[0]] * size + p) * size + q for u, p, q in zip(units, x, y, strict=True)]
        np.add.at(per_history.reshape(-1), cells, 1.0)
        confusion = (draws @ per_history).reshape(resamples, size, size)
        n = confusion.sum(axis=(1, 2))
        agreement = np.full(resamples, np.nan)
        np.divide(np.trace(confusion, axis1=1, axis2=2), n, out=agreement, where=n > 0)
        entry["agreement_ci"], used_agreement = _interval(agreement, ci_level)
        entry["kappa_ci"], used_kappa = _interval(unweighted_kappa_from_confusion(confusion), ci_level)
        entry["n_resamples"] = {"agreement": used_agreement, "kappa": used_kappa}
    return entry


def validation_table(
    histories: Sequence[CareHistory],
    coders: Mapping[str, CareCoding],
    before: Mapping[tuple[str, int], str],
    *,
    resamples: int,
    seed: int,
    ci_level: float,
) -> dict[str, dict[str, dict]]:
    """care.validation[FIELD]["A|B"] = {agreement, kappa, n, agreement_ci, kappa_ci, n_histories, resamples,
    n_resamples: {agreement, kappa}} (V1-V3)."""
    history_of = {h.conversation: i for i, h in enumerate(histories)}
    draws = history_draws(len(histories), resamples, seed)
    out: dict[str, dict[str, dict]] = {}
    for name in VALIDATION_FIELDS:
        values = {c: _field_values(histories, coding, before, name) for c, coding in coders.items()}
        out[name] = {}
        for first, second in combinations(sorted(coders), 2):
            units = sorted(set(values[first]) & set(values[second]))
            a = [values[first][u] for u in units]
            b = [values[second][u] for u in units]
            out[name][f"{first}|{second}"] = _pair_entry(units, a, b, history_of, draws, ci_level)
    return out


# --- the report section ----------------------------------------------------------------------------------------


def care_report(
    histories: Sequence[CareHistory],
    reference: CareCoding,
    coders: Mapping[str, CareCoding],
    items: Sequence[ChecklistItem],
    params: CareParams | None = None,
) -> dict:
    """The CARE section of the metrics report: exactly the keys of docs/care.md#in-the-report (care.states,
    alignment, alignment_by, alignment_by_history, quality, quality_by, control, validation), JSON-ready (no NaN)."""
    params = params or CareParams()
    histories = sorted(histories, key=lambda h: h.conversation)
    if len({h.conversation for h in histories}) != len(histories):
        raise ValueError("each conversation may appear once")
    scored = {h.conversation: score_history(h, reference, params.action_strategies) for h in histories}
    before = {(c, t.turn_index): t.state.before for c, turns in scored.items() for t in turns}
    alignment_pooled, alignment_by = alignment_tables(histories, scored)
    quality_pooled, quality_by = quality_tables(histories, reference, items, params.quality_scope)
    section = {
        "states": {
            c: {t.turn_index: {"state": t.state.state, "credit": t.state.credit, "candidate": t.state.candidate}
                for t in turns}
            for c, turns in scored.items()
        },
        "alignment": alignment_pooled,
        "alignment_by": alignment_by,
        "alignment_by_history": alignment_by_history(histories, scored),
        "quality": quality_pooled,
        "quality_by": quality_by,
        "control": control_table(histories, scored, params.control_metric),
        "validation": validation_table(
            histories, coders, before, resamples=params.resamples, seed=params.seed, ci_level=params.ci_level
        ),
    }
    return to_jsonable(section)
