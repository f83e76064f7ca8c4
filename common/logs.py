"""Logging helpers that need no app."""

from __future__ import annotations

import logging
import re
import time

import psycopg


class OnceAMinute(logging.Filter):
    """Lets through the first record of each message per minute (per process): an outage that every request meets
    is said once a minute, with the number of records held back since, instead of once per request."""

    def __init__(self, name: str = "", seconds: float = 60.0) -> None:
        super().__init__(name)
        self.seconds = seconds
        self._last: dict[str, tuple[float, int]] = {}  # message -> (when it was last let through, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = str(record.msg), time.monotonic()
        said_at, held = self._last.get(key, (float("-inf"), 0))
        if now - said_at < self.seconds:
            self._last[key] = (said_at, held + 1)
            return False
        self._last[key] = (now, 0)
        if held:
            record.msg = f"{key} ({held} more in the last {now - said_at:.0f} s)"
        return True


# PostgreSQL's DETAIL of a constraint's refusal names the values of the row or the key it refused: the text of a
# conversation, a response or a comment (what people wrote) when the row holds it; a CONTEXT names the line of a COPY
# it refused, and the statement's excerpt (LINE n: …) its literal values (Django binds them on the client). A data
# exception's message (class 22: "invalid input syntax for type integer: "…"") quotes the value itself. Nothing
# people wrote goes into a log or onto a page that shows an error (docs/architecture.md#conventions): all of these
# are left out, the rest kept (the error's class, its constraint, the traceback). A value may span lines: a database
# error's own text is replaced whole (``_said_of``); a text without the error (``without_row_values(text)``) falls
# back on the lines' shapes.
LEFT_OUT = "(values left out: they may be what people wrote)"
_FIELD_ENDS = (r"(?=\n+(?:LINE \d+:|DETAIL:|HINT:|CONTEXT:|STATEMENT:|QUERY:|Traceback \(|The above exception|"
               r"During handling)|\Z)")
_ROW_VALUES = re.compile(rf"^(DETAIL:\s+)(Failing row contains|Key) \((?!values left out).*?{_FIELD_ENDS}",
                         re.MULTILINE | re.DOTALL)
_CONTEXT = re.compile(rf"^(CONTEXT:\s+)(?!\s|\(values left out).*?{_FIELD_ENDS}", re.MULTILINE | re.DOTALL)
_EXCERPT = re.compile(r"^LINE \d+: .*(?:\n *\^ *$)?", re.MULTILINE)
_VALUE_REFUSED = re.compile(rf"((?:invalid input syntax for type|invalid input value for enum|malformed \w+ literal)"
                            rf"[^:\n]*: )(?!\(values left out).*?{_FIELD_ENDS}", re.DOTALL)


def _chained(*found: object) -> list[BaseException]:
    """The exceptions among ``found`` and those each was raised from or while handling."""
    chain: list[BaseException] = []
    todo = [each for each in found if isinstance(each, BaseException)]
    while todo:
        error = todo.pop()
        if any(error is seen for seen in chain):
            continue
        chain.append(error)
        todo += [each for each in (error.__cause__, error.__context__) if each is not None]
    return chain


def _said_of(error: psycopg.Error) -> str:
    """What a log may say of a database error in place of its text: its message (but a data exception's, which
    quotes the value), and which of its fields were left out."""
    diag = error.diag
    state = diag.sqlstate or ""
    said = (f"{diag.message_primary or ''}" if not state.startswith("22")
            else f"a data exception (SQLSTATE {state}), its message {LEFT_OUT}")
    if detail := diag.message_detail:
        lead = re.match(r"(Failing row contains|Key) \(", detail)
        said += f"\nDETAIL:  {lead.group(1) + ' ' if lead else ''}{LEFT_OUT}"
    if diag.context:
        said += f"\nCONTEXT:  {LEFT_OUT}"
    return said


def without_row_values(text: str, *errors: object) -> str:
    """``text`` (an error's message, a traceback) without what a database refusal quotes of the rows and statements
    it refused. ``errors``: the exceptions whose text it may carry (with those they were chained to), each replaced
    whole; what is left is cleaned by the lines' shapes."""
    chain = _chained(*errors)
    # The server's errors only (a SQLSTATE): one psycopg raised itself (a connection refused, broken or timed out, a
    # statement it could not send) has no server message to put in its place, and quotes no row: its text is kept.
    said = {whole: _said_of(error) for error in chain
            if isinstance(error, psycopg.Error) and error.diag.sqlstate and (whole := str(error))}
    for error in chain:  # a database error, or Django's in its place (the same text): by its repr (Celery's), its text
        if (whole := str(error)) in said:
            text = text.replace(repr(error), f"{type(error).__name__}({said[whole]!r})").replace(whole, said[whole])
    text = _ROW_VALUES.sub(rf"\1\2 {LEFT_OUT}", text)
    text = _CONTEXT.sub(rf"\1{LEFT_OUT}", text)
    text = _VALUE_REFUSED.sub(rf"\1{LEFT_OUT}", text)
    return _EXCERPT.sub(f"LINE: {LEFT_OUT}", text)


class WithoutRowValues(logging.Filter):
    """Leaves what a database refusal quotes of its rows and statements out of a record's message and traceback
    (``without_row_values``): a 500's traceback carries the database error's message, DETAIL included."""

    def filter(self, record: logging.LogRecord) -> bool:
        raised = record.exc_info[1] if record.exc_info else None
        args = record.args.values() if isinstance(record.args, dict) else (record.args or ())
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = without_row_values(record.exc_text, raised)
        message = record.getMessage()
        if (cleaned := without_row_values(message, raised, record.msg, *args)) != message:
            record.msg, record.args = cleaned, None
        return True
