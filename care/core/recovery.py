"""CARE recovery-state engine and the alignment of advice (docs/care.md#recovery-state,
docs/care.md#alignment-of-an-action-turn).

Pure Python: user-turn codes in, one `TurnState` per user turn out; an assistant turn's code plus the state the user
turns before it established gives its alignment label. The metrics built on these live in `care_metrics`.

The protocol's vocabulary (recovery states, horizons, session kinds) is the engine's own, not schema data: the rules are
written in these terms. The Django side maps a schema's stored codes onto these names before calling in.

Reading choices (the CARE paper leaves these open; each is this platform's default and is listed in
docs/care.md#reading-choices):

- R1 Rule precedence, from the CARE paper's Appendix D.3 and D.5 (not an open point; docs/care.md#recovery-state).
  Rule 1 first: an `Acute` marker resets, even on a turn flagged `ambiguous` or `hold` (caution first: a lapse signal
  is never dropped). Then rule 4: a turn flagged `hold` removes one credit whatever its marker (none, below, equal to or
  above the state) and whether or not it is flagged `ambiguous`, and that decides the turn. Then rules 2, 3 and 6,
  the first that applies deciding; rule 5 (reactance) never decides anything. The paper's typical hold is a turn of
  simple agreement to an assistant proposal, which D.5 codes as no marker and says "removed one credit rather than
  all of it": a hold with no marker counts. Credit is only ever 0 or 1 (the second credit advances and empties it),
  so after a hold credit is 0 and there is no candidate; a hold with a marker below the state ends where rule 3
  would.
- R2 `hold` only lowers credit: it gives no credit and advances nothing, not even a return to a state reached before
  ("the turn gives no credit").
- R3 A marker equal to the state (not `hold`) changes nothing: rule 3 needs m < state, rule 6 needs m >= state + 1.
- R4 A user turn with no code is read as marker `none` with no flags (nothing changes); a coded `hold` whose
  marker was not coded is a hold with marker `none` (R1).
- R5 The turn that opens an episode is itself inside the episode: the reset (Acute, credit 0, reached {Acute}) comes
  first and that turn's code is then applied like any other (a callback that opens with a Settling marker earns
  credit at once).
- R6 An episode lasts until the next crisis or callback session opens a new one; chat sessions after a crisis stay in
  it (their user turns are coded: docs/care-data.md#the-codings-of-care-v1). Each new episode starts from
  reached = {Acute}.
- R7 Before the first crisis or callback session no rule applies: the state is Rebuilding, credit 0, no candidate,
  the reached set is empty and `episode` is None; user-turn codes there are ignored by the engine.
- R8 "Reached earlier and lost": state + 1 is in this episode's reached set (it is above the state, so it was lost).
  A return sets credit 0 and leaves the reached set as it is.
- R9 A sudden turn (flagged, or implicit: m >= state + 2 while credit = 0) sets credit = max(credit, 1) even when
  state + 1 was reached before: "nothing advances (not even to a state reached before)".
- R10 The candidate exists while credit = 1 and there is a state above (credit never reaches 1 at Rebuilding).
- A1 An assistant turn is scored against the state after the user turn of the same turn index (the message it
  replies to) and that turn's `request` decides "user-invited"; the user's next message never counts.
- A2 Safety-critical exempts only Bridge in Acute (as the table says); a safety-critical Sustain in Acute, or Bridge
  in Settling, is premature unless user-invited. With a candidate, the safety exemption is judged per state.
- A3 With a candidate, `aligned` wins if either state gives it; otherwise the label of the current state (for every
  horizon the two non-aligned labels of adjacent states are equal, so no further tie-break is needed).
- A4 An action turn without a primary horizon (the schema requires one) gets no label: it still counts as an
  action turn (N_action, advice frequency), but as neither aligned, premature nor lag (``lacks_horizon``).
- A5 A turn of another strategy takes horizon none (the schema's "none otherwise"); one coded with a primary horizon
  is no action turn all the same, and its horizon labels nothing (``stray_horizon``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

STATES: tuple[str, ...] = ("Acute", "Settling", "Open", "Rebuilding")
ACUTE, SETTLING, OPEN, REBUILDING = range(4)
NO_MARKER = "none"
MARKERS: tuple[str, ...] = (NO_MARKER, *STATES)
HORIZONS: tuple[str, ...] = ("Regulate", "Bridge", "Sustain")
EPISODE_KINDS = frozenset({"crisis", "callback"})
SESSION_KINDS = frozenset({"chat", *EPISODE_KINDS})
# An action turn is one whose strategy is providing suggestions or information
# (docs/care-data.md#the-codings-of-care-v1). The schema's strategy codes are its own; callers pass theirs
# (CareParams.action_strategies) when they differ from these names.
ACTION_STRATEGIES = frozenset({"providing suggestions", "information"})

ALIGNED, PREMATURE, LAG = "aligned", "premature", "lag"
LABELS: tuple[str, ...] = (ALIGNED, PREMATURE, LAG)

# state x primary horizon, before the "unless" exemptions (docs/care.md#alignment-of-an-action-turn)
_TABLE: dict[int, dict[str, str]] = {
    ACUTE: {"Regulate": ALIGNED, "Bridge": PREMATURE, "Sustain": PREMATURE},
    SETTLING: {"Regulate": ALIGNED, "Bridge": PREMATURE, "Sustain": PREMATURE},
    OPEN: {"Regulate": LAG, "Bridge": ALIGNED, "Sustain": PREMATURE},
    REBUILDING: {"Regulate": LAG, "Bridge": ALIGNED, "Sustain": ALIGNED},
}


@dataclass(frozen=True)
class UserCode:
    """One coder's codes of a user turn. None = the field was not coded (the engine reads a missing marker as none).

    `marker` and `request` take MARKERS and ("none", *HORIZONS); `crisis` is {none, SI, self-harm, anxiety}.
    """

    marker: str | None = None
    crisis: str | None = None
    ambiguous: bool = False
    sudden: bool = False
    hold: bool = False
    reactance: bool = False
    request: str | None = None


@dataclass(frozen=True)
class AssistantCode:
    """One coder's codes of an assistant turn: strategy, primary horizon ("none" or a HORIZON), safety-critical."""

    strategy: str | None = None
    horizon: str | None = None
    safety_critical: bool = False


@dataclass(frozen=True)
class SessionCodes:
    """A session as the engine sees it: its kind and its user turns' codes in order (None = turn not coded)."""

    kind: str
    user: Sequence[UserCode | None]


@dataclass(frozen=True)
class TurnState:
    """The engine's output for one user turn: the state after it and what that state was judged from.

    `before` is the state the turn's marker was compared with (after an episode opening, so Acute on an opening
    turn); `episode` numbers the episodes of the history from 0 and is None before the first crisis.
    """

    state: str
    credit: int
    candidate: str | None
    reached: frozenset[str]
    before: str
    episode: int | None


def _marker_level(code: UserCode | None) -> int | None:
    if code is None or code.marker is None or code.marker == NO_MARKER:
        return None
    if code.marker not in STATES:
        raise ValueError(f"unknown recovery marker {code.marker!r}")
    return STATES.index(code.marker)


def step(state: int, credit: int, reached: frozenset[int], code: UserCode | None) -> tuple[int, int, frozenset[int]]:
    """Apply one user turn's code inside an episode: rule 1, then rule 4, then rules 2, 3 and 6 (R1)."""
    m = _marker_level(code)
    if m == ACUTE:  # rule 1, even when ambiguous or hold
        return ACUTE, 0, reached
    if code is not None and code.hold:  # rule 4, whatever the marker (none too) and ambiguous or not (R1, R2)
        return state, max(0, credit - 1), reached
    if m is None or (code is not None and code.ambiguous):  # rule 2 (and R4: no code = no marker)
        return state, credit, reached
    assert code is not None
    if m < state:  # rule 3
        return state, 0, reached
    # rule 5: reactance has no effect of its own
    if m == state:  # R3
        return state, credit, reached
    if code.sudden or (m >= state + 2 and credit == 0):  # rule 6, sudden (R9)
        return state, max(credit, 1), reached
    if state + 1 in reached:  # rule 6, reached-state return (R8)
        return state + 1, 0, reached
    if credit + 1 >= 2:  # rule 6, second credit: exactly one step whatever m
        return state + 1, 0, reached | {state + 1}
    return state, credit + 1, reached


def recovery_states(sessions: Iterable[SessionCodes]) -> list[TurnState]:
    """Walk a history's sessions in order; one TurnState per user turn, in order (docs/care.md#recovery-state)."""
    out: list[TurnState] = []
    state, credit, reached, episode = REBUILDING, 0, frozenset[int](), None
    for session in sessions:
        if session.kind not in SESSION_KINDS:
            raise ValueError(f"unknown session kind {session.kind!r}")
        for position, code in enumerate(session.user):
            if position == 0 and session.kind in EPISODE_KINDS:  # opens an episode (R5, R6)
                episode = 0 if episode is None else episode + 1
                state, credit, reached = ACUTE, 0, frozenset({ACUTE})
            before = state
            if episode is not None:  # R7: no rule applies before the first crisis
                state, credit, reached = step(state, credit, reached, code)
            candidate = STATES[state + 1] if credit == 1 and state < REBUILDING else None  # R10
            out.append(
                TurnState(
                    state=STATES[state],
                    credit=credit,
                    candidate=candidate,
                    reached=frozenset(STATES[s] for s in reached),
                    before=STATES[before],
                    episode=episode,
                )
            )
    return out


def is_action(code: AssistantCode | None, action_strategies: frozenset[str] = ACTION_STRATEGIES) -> bool:
    """An action turn: its strategy is one of the action strategies (providing suggestions, information)."""
    return code is not None and code.strategy in action_strategies


def lacks_horizon(code: AssistantCode | None, action_strategies: frozenset[str] = ACTION_STRATEGIES) -> bool:
    """An action turn without a primary horizon (none, or no horizon coded), which gets no label (A4): the coding page
    does not complete such a turn, and the report counts the reference coding's (docs/care-data.md)."""
    return is_action(code, action_strategies) and code is not None and code.horizon not in HORIZONS


def stray_horizon(code: AssistantCode | None, action_strategies: frozenset[str] = ACTION_STRATEGIES) -> bool:
    """A turn of a coded strategy that is no action strategy, given a primary horizon all the same (A5): the horizon
    is the advice's, so such a turn's is none. The coding page does not complete such a turn; the engine reads no
    horizon of it (docs/care-data.md#the-codings-of-care-v1)."""
    return (code is not None and code.strategy is not None and not is_action(code, action_strategies)
            and code.horizon in HORIZONS)


def _label(state: int, horizon: str, safety_critical: bool, invited: bool) -> str:
    if invited:
        return ALIGNED
    if state == ACUTE and horizon == "Bridge" and safety_critical:  # A2
        return ALIGNED
    return _TABLE[state][horizon]


def alignment(turn: TurnState, code: AssistantCode, request: str | None) -> str | None:
    """The label of an action turn against the state (and candidate) after the user turn it replies to.

    `request` is that user turn's request (user-invited when it equals the horizon, A1). None when the turn has
    no primary horizon (A4).
    """
    if code.horizon not in HORIZONS:  # A4
        return None
    invited = request == code.horizon
    state = STATES.index(turn.state)
    own = _label(state, code.horizon, code.safety_critical, invited)
    if own == ALIGNED or turn.candidate is None:
        return own
    candidate = _label(STATES.index(turn.candidate), code.horizon, code.safety_critical, invited)
    return ALIGNED if candidate == ALIGNED else own  # A3
