"""The docs name only code that exists: every backticked span of ``docs/*.md`` and ``README.md`` (fenced code blocks
left out) is read, and each kind of name this test can recognise reliably must still be there:

- a dotted Python name whose first part is one of the project's packages (``metrics.core.recompute``,
  ``annotation.selectors.turn_view``), a Django model by app label (``annotation.SessionLabel``) or a class defined
  once in the project (``Study.session_order``, ``TurnState.before``) resolves: the longest module prefix imports
  and the rest is an attribute, a model's field or nested class, or a field a class declares; a call's ``name=``
  arguments are parameters of what it calls, and the names listed in a model's call (``benchmark.Session(
  conversation, index, …)``) its fields;
- a path with a ``/`` whose first part is a top-level folder or file of the repository is a tracked file or folder
  (a ``<placeholder>``, an upper-case word, ``…`` or ``*`` matches any name; ``APP/NNNN`` names a migration, and a
  page ``APP/NAME.html`` may be a template the template loaders find);
- ``manage.py NAME`` (or a span opening with a command's name) is a management command, ``cab NAME`` a command of
  the researcher CLI, and every ``--option`` after either in the same span is one its parser accepts; so is an
  option after a Python script of ``perf/`` or ``scripts/`` (read from the script's ``add_argument`` calls);
- a URL path (``/api/v1/studies/{slug}/rounds/``, ``GET /healthz``) whose first segment is one of the site's
  resolves, or is the start of a route of the site (``/api/v1/``); an API path given with its methods
  (``GET, POST /api/v1/studies/{slug}/methods/``) is an operation of the OpenAPI schema for each method, and every
  operation of the schema has its row in docs/api.md's *Endpoints* table;
- an upper-case name with an underscore (a setting or environment variable: ``METRIC_RUN_SPLIT_CELLS``,
  ``DB_CONN_MAX_AGE=0``) is a Django setting or is named in a tracked file that is not documentation;
- ``test_NAME`` is a test function under ``tests/``.

What it does not check: bare names without a package (``judgment_save``, ``care_tables``) and names relative to a
module the sentence names (``report.build_report``), since they cannot be told from report keys, JSON fields and
words; report keys (``care.alignment``, ``indices.ari``: the report, not the code, and covered by the report's
tests); options of shell scripts and of commands outside the project (``curl -C -``); URL paths of other programs
(``/proc/PID/stat``). ``ALLOWED`` lists the spans that are examples rather than names."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import fnmatch
import importlib
import inspect
import re
import subprocess
import tomllib
from functools import cache
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import global_settings, settings
from django.core.exceptions import FieldDoesNotExist
from django.core.management import get_commands, load_command_class
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.urls import URLPattern, URLResolver, get_resolver

from tests.cab import markdown_lines

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
PACKAGES = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
               ["tool"]["importlinter"]["root_packages"])

# Keys that read as a dotted name of a package: the report's sections named like a package (``care.input``,
# docs/metrics.md#report-keys) and a kind's block of a schema (``lc8.derived``, docs/lc8.md). A span naming one
# (``care.alignment.Assistant``) is not code; each key must still be a string the code writes or reads.
KEYS = {
    "calibration": {"bootstrap", "experts", "reviewers", "expert_only_rounds", "gold_coverage", "panel_ranking"},
    "care": {"alignment", "alignment_by_history", "control", "input", "parameters", "quality", "reference", "states",
             "validation"},
    "lc8": {"derived", "input", "items", "ranking"},
}
# Spans that look like a name this test checks but are examples.
ALLOWED = {
    # history names as the reports show them: an example dataset and conversation id, not a path of the repository
    "DATASET/EXTERNAL_ID",
    # options of other programs, named in a sentence about them: pg_restore's and curl's
    "--data-only", "--disable-triggers", "--fail-with-body",
    # the coding page's parts script by the last segment of its URL (/rounds/<id>/coding-parts.js), not a file
    "coding-parts.js",
}

SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
DOTTED = re.compile(r"^\"?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\"?(?:\((.*)\))?$")
CALL = re.compile(r"^([a-z_]\w*)\((.*)\)$")
OPTION = re.compile(r"^\[?(--[a-z][\w-]*)")
UPPER = re.compile(r"^([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=\S*)?$")
TEST_NAME = re.compile(r"^test_\w+$")
FILE_NAME = re.compile(r"^[\w-]+\.(?:py|js)$")
ALONE = re.compile(r"^\[?(--[a-z][\w-]*)(?: [A-Z]+)?\]?$")
METHODS = r"(?:GET|POST|PUT|PATCH|DELETE)"
URL = re.compile(rf"^(?:{METHODS}(?:, {METHODS})* )?(/[^\s?]*)(?:\?\S*)?$")
PLACEHOLDER = re.compile(r"<[^>/]*>|\{[^}/]*\}|…|\b[A-Z][A-Z_]+\b")
MIGRATION = re.compile(r"^(\w+)/(\d{4})(?:_(\w+))?$")
PYTHON = {"python", "python3", ".venv/bin/python", "uv"}
# A script that runs a Python one with its own arguments.
RUNS = {"scripts/bench": "perf/bench.py"}


@dataclasses.dataclass(frozen=True)
class Span:
    path: str
    line: int
    text: str
    fenced: bool = False  # a command line of a fenced block: only its command and options are checked


def spans_of(path: str, markdown: str) -> list[Span]:
    """The code spans of a page, outside fenced code, each with the line it opens on (a table's ``\\|`` is ``|``),
    then each line of fenced code (a line ending in ``\\`` joined with the next) as a command line."""
    lines = markdown.splitlines()
    fenced: list[Span] = []
    continued = False
    for number, line, where in markdown_lines.fenced(list(lines)):
        if where == markdown_lines.MARKER:
            lines[number] = ""
            continued = False
        elif where == markdown_lines.INSIDE:
            if continued:
                joined = fenced[-1].text.removesuffix("\\").rstrip() + " " + line.strip()
                fenced[-1] = Span(path, fenced[-1].line, joined, fenced=True)
            else:
                fenced.append(Span(path, number + 1, line.strip().removeprefix("$ "), fenced=True))
            continued = line.endswith("\\")
            lines[number] = ""
    text = "\n".join(lines)
    found = []
    for match in SPAN.finditer(text):
        content = match.group(2)
        if "\n\n" in content:
            continue
        opens = text.count("\n", 0, match.start()) + 1
        content = content.replace("\n", " ")
        if lines[opens - 1].lstrip().startswith("|"):
            content = content.replace("\\|", "|")
        found.append(Span(path, opens, content.strip()))
    return found + fenced


def doc_spans() -> list[Span]:
    pages = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
    return [span for page in pages for span in spans_of(page, (ROOT / page).read_text(encoding="utf-8"))]


# --- the repository --------------------------------------------------------------------------------------------

@cache
def tracked() -> frozenset[str]:
    """Every tracked file and every folder that holds one."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.decode()
    paths = {path for path in files.split("\0") if path}
    folders = {"/".join(path.split("/")[:end]) for path in paths for end in range(1, path.count("/") + 1)}
    return frozenset(paths | folders)


@cache
def top_level() -> frozenset[str]:
    return frozenset(path.split("/")[0] for path in tracked())


@cache
def code_texts() -> str:
    """Every tracked text file but the documentation and this test (whose cases name what does not exist), joined:
    where a setting or variable must be named."""
    texts = []
    for path in sorted(tracked()):
        if path.endswith(".md") or path == THIS or not (ROOT / path).is_file():
            continue
        data = (ROOT / path).read_bytes()
        if b"\0" not in data:
            texts.append(data.decode(errors="replace"))
    return "\n".join(texts)


def path_problem(token: str) -> str | None:
    """Why a repository path no longer exists, or None (also when the token is no repository path)."""
    path = token.removeprefix("./").strip("()[],;:\"'").split("#")[0]
    first = path.split("/")[0]
    if "/" not in path or first not in top_level():
        return None
    exact = path.rstrip("/")
    if exact in tracked():
        return None
    migration = MIGRATION.match(exact)
    if migration:
        app, number, name = migration.groups()
        wanted = f"{app}/migrations/{number}_{name or '*'}.py"
        if any(fnmatch.fnmatch(p, wanted) for p in tracked()):
            return None
        return f"no migration {exact}"
    pattern = PLACEHOLDER.sub("*", exact)
    if "*" in pattern and any(fnmatch.fnmatch(p, pattern) for p in tracked()):
        return None
    if exact.endswith(".html"):
        try:
            get_template(exact)
            return None
        except TemplateDoesNotExist:
            pass
    return f"no file or folder {exact}"



# --- Python names ----------------------------------------------------------------------------------------------

@cache
def homes() -> dict[str, list[str]]:
    """Each class or function defined at the top of a project module, with the modules that define it."""
    found: dict[str, list[str]] = {}
    for package in sorted(PACKAGES):
        for file in sorted((ROOT / package).rglob("*.py")):
            relative = file.relative_to(ROOT)
            if "migrations" in relative.parts or "api_client" in relative.parts:
                continue
            module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
            tree = ast.parse(file.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.ClassDef | ast.FunctionDef):
                    found.setdefault(node.name, []).append(module)
    return found


def attribute(owner: object, name: str) -> object:
    """``owner.name``, where a model's field and a field a class only declares (a dataclass's, a Struct's) count."""
    try:
        return getattr(owner, name)
    except AttributeError:
        pass
    meta = getattr(owner, "_meta", None)
    if meta is not None and hasattr(meta, "get_field"):
        try:
            return meta.get_field(name)
        except FieldDoesNotExist:
            pass
    if inspect.isclass(owner):
        for klass in owner.__mro__:
            if name in inspect.get_annotations(klass):
                return None
    raise AttributeError(name)


def resolve_dotted(name: str) -> tuple[object, str | None]:
    """What a dotted name names, and None, or None and why it names nothing; (None, None) when it is not one of
    the project's."""
    parts = name.split(".")
    first = parts[0]
    start: object
    if first in PACKAGES:
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            try:
                start = importlib.import_module(module)
            except ModuleNotFoundError as error:
                if error.name is not None and module.startswith(error.name) and error.name.split(".")[0] in PACKAGES:
                    continue
                raise
            rest = parts[end:]
            break
        models = {model.__name__: model for model in apps.get_models() if model._meta.app_label == first}
        if rest and rest[0] in models:  # a model by its app label: annotation.SessionLabel
            start, rest = models[rest[0]], rest[1:]
    elif len(homes().get(first, [])) == 1 and (first[0].isupper() or len(parts) == 1):
        start, rest = getattr(importlib.import_module(homes()[first][0]), first), parts[1:]
    else:
        return None, None
    owner, done = start, parts[:len(parts) - len(rest)]
    for part in rest:
        try:
            owner = attribute(owner, part)
        except AttributeError:
            return None, f"{'.'.join(done)} has no {part}"
        done.append(part)
    return owner, None


def call_problem(target: object, arguments: str) -> str | None:
    """Why a call's arguments name what the target does not take (keywords; a model's listed fields), or None."""
    listed = [argument.strip() for argument in arguments.split(",") if argument.strip()]
    if inspect.isclass(target) and hasattr(target, "_meta") and all(re.fullmatch(r"\w+", a) for a in listed):
        for field in listed:
            try:
                target._meta.get_field(field)
            except FieldDoesNotExist:
                return f"has no field {field}"
        return None
    keywords = [match.group(1) for a in listed if (match := re.match(r"^(\w+)=", a))]
    if not keywords:
        return None
    try:
        signature = inspect.signature(target)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    missing = [k for k in keywords if k not in signature.parameters]
    return f"takes no {', '.join(missing)}" if missing else None


def dotted_problem(text: str) -> str | None:
    match = DOTTED.match(text) or CALL.match(text)
    if not match:
        return None
    name, arguments = match.groups()
    first, second = [*name.split("."), ""][:2]
    if second in KEYS.get(first, ()):
        return None
    target, problem = resolve_dotted(name)
    if problem is not None:
        return problem
    if arguments is not None and target is not None:
        wrong = call_problem(target, arguments)
        if wrong:
            return f"{name} {wrong}"
    return None


# --- commands and their options ------------------------------------------------------------------------------------

@cache
def command_options(name: str) -> frozenset[str]:
    parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
    return frozenset(parser._option_string_actions)


@cache
def cli_parsers() -> dict[str, argparse.ArgumentParser]:
    from cab_cli.main import parser

    top = parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


@cache
def script_options(path: str) -> frozenset[str]:
    """The options a Python script's parser is given: its ``add_argument("--…")`` calls, and perf's common ones
    when it calls ``add_arguments(parser)``."""
    source = (ROOT / path).read_text(encoding="utf-8")
    if "add_arguments(parser" in source:
        source += (ROOT / "perf/_common.py").read_text(encoding="utf-8")
    options = {"-h", "--help"}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            named = {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
            negated = any(k.arg == "action" and getattr(k.value, "attr", None) == "BooleanOptionalAction"
                          for k in node.keywords)
            options |= named | ({"--no-" + n.removeprefix("--") for n in named} if negated else set())
    return frozenset(options)


def command_of(words: list[str]) -> tuple[str, frozenset[str] | None, list[str]] | tuple[None, None, list[str]]:
    """The command a span's words run (its name, the options it accepts, the words after it), or None."""
    while words and (words[0] in PYTHON or re.fullmatch(r"[A-Z_]+=\S*", words[0])):
        words = words[1:]
    if not words:
        return None, None, []
    head = words[0].removeprefix("./")
    if head == "manage.py":
        if len(words) < 2:
            return None, None, []
        name = words[1]
        if name not in get_commands():
            return f"manage.py {name}", None, words[2:]
        return f"manage.py {name}", command_options(name), words[2:]
    if head in get_commands() and re.fullmatch(r"[a-z]+(?:_[a-z0-9]+)+", head):
        return head, command_options(head), words[1:]
    if head == "cab" and len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]):
        sub = cli_parsers().get(words[1])
        if sub is None:
            return f"cab {words[1]}", None, words[2:]
        return f"cab {words[1]}", frozenset(sub._option_string_actions), words[2:]
    script = RUNS.get(head, head)
    if script.endswith(".py") and script in tracked() and script.split("/")[0] in {"perf", "scripts"}:
        return head, script_options(script), words[1:]
    return None, None, words[1:]


def command_problems(text: str) -> list[str]:
    """Why a span's command or its options are not the project's, for each command of the span (``--`` between
    two commands, as ``scripts/testenv.py`` takes one)."""
    problems = []
    words = text.split()
    segments: list[list[str]] = [[]]
    for word in words:
        if word == "--":
            segments.append([])
        else:
            segments[-1].append(word)
    for segment in segments:
        name, options, rest = command_of(segment)
        if name is None:
            continue
        if options is None:
            problems.append(f"no command {name}")
            continue
        for word in rest:
            option = OPTION.match(word)
            if option and option.group(1) not in options:
                problems.append(f"{name} takes no {option.group(1)}")
    return problems


# --- URL paths -------------------------------------------------------------------------------------------------

@cache
def routes() -> tuple[tuple[str, ...], ...]:
    """Every route of the site as its segments, a parameter as ``*``."""
    found = []

    def walk(patterns: list, prefix: str) -> None:
        for pattern in patterns:
            text = prefix + str(pattern.pattern).lstrip("^").rstrip("$").removesuffix("\\Z")
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, text)
            elif isinstance(pattern, URLPattern):
                found.append(text)

    walk(get_resolver().url_patterns, "")
    segments = []
    for route in found:
        route = re.sub(r"<[^>]*>|\(\?P<\w+>[^)]*\)|\[\^?[^]]*\][+*]?", "*", route).replace("\\.", ".")
        segments.append(tuple(route.strip("/").split("/")))
    return tuple(segments)


@cache
def all_options() -> frozenset[str]:
    """Every option of a command of the project, of the researcher CLI and of a Python script of perf/ and
    scripts/."""
    options: set[str] = set()
    for name, app in get_commands().items():
        if app.split(".")[0] in PACKAGES:
            options |= command_options(name)
    for sub in cli_parsers().values():
        options |= set(sub._option_string_actions)
    for path in tracked():
        if path.endswith(".py") and path.split("/")[0] in {"perf", "scripts"}:
            options |= script_options(path)
    return frozenset(options)


def alone_problem(text: str) -> str | None:
    """An option named alone (its command is in the sentence) must be one of some command of the project."""
    match = ALONE.match(text)
    if match and match.group(1) not in all_options():
        return f"no command of the project takes {match.group(1)}"
    return None


def url_problem(text: str) -> str | None:
    """Why a URL path of the site matches no route, or None (also when it is not one of the site's): each segment
    matches, a placeholder any segment; a path ending in ``/`` may be the start of a longer route."""
    match = URL.match(text)
    if not match:
        return None
    path = match.group(1)
    wanted = PLACEHOLDER.sub("*", path).strip("/").split("/")
    if wanted[0] not in {route[0] for route in routes()}:
        return None

    def fits(route: tuple[str, ...]) -> bool:
        return all(w == r or "*" in (w, r) or fnmatch.fnmatch(w, r) for w, r in zip(wanted, route, strict=False))

    if any(len(route) == len(wanted) and fits(route) for route in routes()):
        return None
    if path.endswith("/") and any(len(route) > len(wanted) and fits(route) for route in routes()):
        return None
    return f"no URL {path}"


# --- API operations (the OpenAPI schema) ---------------------------------------------------------------------

API_SPAN = re.compile(rf"^({METHODS}(?:, {METHODS})*) (/api/v1/[^\s?]*)(?:\?\S*)?$")


@cache
def api_operations() -> dict[tuple[str, ...], frozenset[str]]:
    """Every path of the API's OpenAPI schema (``/api/schema/``) as its segments, a parameter as ``*``, with its
    methods."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {tuple(re.sub(r"\{[^}]*\}", "*", part) for part in path.strip("/").split("/")):
            frozenset(method.upper() for method in operations if method.upper() in METHODS)
            for path, operations in schema["paths"].items()}


def api_methods(path: str) -> frozenset[str] | None:
    """The methods the schema has for a documented API path (a placeholder matches any segment or part of one:
    ``judgments.{fmt}`` is ``judgments.csv``), or None when it has no such path."""
    wanted = PLACEHOLDER.sub("*", path.replace("\\|", "|")).strip("/").split("/")
    found = None
    for segments, methods in api_operations().items():
        if len(segments) == len(wanted) and all(fnmatch.fnmatch(w, r) or fnmatch.fnmatch(r, w)
                                                for w, r in zip(wanted, segments, strict=True)):
            found = (found or frozenset()) | methods
    return found


def operation_problem(text: str) -> str | None:
    """Why an API path given with its methods is not an operation of the OpenAPI schema for each, or None."""
    match = API_SPAN.match(text)
    if not match:
        return None
    methods = [method.strip() for method in match.group(1).split(",")]
    found = api_methods(match.group(2))
    if found is None:
        return None  # no such path: url_problem says so
    missing = [method for method in methods if method not in found]
    return f"the API schema has no {', '.join(missing)} {match.group(2)}" if missing else None


def endpoint_table_operations() -> set[tuple[str, tuple[str, ...]]]:
    """The (method, path segments) docs/api.md's *Endpoints* table names: each span of a row's first cell, where
    ``…/result/`` after ``GET /api/v1/metric-runs/{id}/`` is that path's ``result/`` and `` / `.jsonl` `` the same
    path in that format, with the methods of the span before."""
    lines = (ROOT / "docs/api.md").read_text(encoding="utf-8").split("## Endpoints", 1)[1].split("\n###", 1)[0]
    named = set()
    for line in lines.splitlines():
        if not line.startswith("| `"):
            continue
        cell = re.split(r"(?<!\\)\|", line)[1].replace("\\|", "|")
        methods: list[str] = []
        path = ""
        for span in re.findall(r"`([^`]+)`", cell):
            match = API_SPAN.match(span)
            if match:
                methods, path = [m.strip() for m in match.group(1).split(",")], match.group(2)
            elif span.startswith("…/"):
                path = path.rstrip("/") + span.removeprefix("…")
            elif span.startswith("."):
                path = path.rsplit(".", 1)[0] + span
            named |= {(method, tuple(PLACEHOLDER.sub("*", path).strip("/").split("/"))) for method in methods}
    return named


def test_every_operation_of_the_api_schema_has_its_row_in_the_endpoints_table():
    named = endpoint_table_operations()
    assert len(named) > 20, "the Endpoints table of docs/api.md was not read"

    def listed(method: str, segments: tuple[str, ...]) -> bool:
        return any(m == method and len(s) == len(segments) and all(
            fnmatch.fnmatch(a, b) or fnmatch.fnmatch(b, a) for a, b in zip(s, segments, strict=True))
            for m, s in named)

    missing = sorted(f"{method} /{'/'.join(segments)}/" for segments, methods in api_operations().items()
                     for method in methods if not listed(method, segments))
    assert not missing, "operations of the API schema docs/api.md's Endpoints table leaves out:\n" + "\n".join(
        missing)


# --- settings, variables, tests --------------------------------------------------------------------------------

def upper_problem(text: str) -> str | None:
    match = UPPER.match(text)
    if not match:
        return None
    name = match.group(1)
    if hasattr(settings, name) or hasattr(global_settings, name) or re.search(rf"\b{name}\b", code_texts()):
        return None
    return f"no setting or variable {name} in the code"


@cache
def defined_tests() -> frozenset[str]:
    names = set()
    for file in (ROOT / "tests").rglob("*.py"):
        names |= set(re.findall(r"^\s*(?:async )?def (test_\w+)", file.read_text(encoding="utf-8"), re.M))
    return frozenset(names)


def named_test_problem(text: str) -> str | None:
    if TEST_NAME.match(text) and text not in defined_tests():
        return f"no test {text}"
    return None


def file_name_problem(text: str) -> str | None:
    """A module or script named by its file name alone (``records.py``, ``save.js``) is a tracked file's name."""
    if FILE_NAME.match(text) and not any(path.rsplit("/", 1)[-1] == text for path in tracked()):
        return f"no file named {text}"
    return None


# --- all together ----------------------------------------------------------------------------------------------

def problems_of(span: Span) -> list[str]:
    text = span.text
    if text in ALLOWED:
        return []
    if span.fenced:
        found = command_problems(text)
    else:
        checks = (dotted_problem, url_problem, operation_problem, upper_problem, named_test_problem,
                  file_name_problem, alone_problem)
        found = [problem for check in checks if (problem := check(text))]
        found += command_problems(text)
    if not URL.match(text) and not span.fenced:
        found += [p for word in text.split() if (p := path_problem(word))]
    return [f"{span.path}:{span.line}: `{text}`: {problem}" for problem in found]


def stale_names(spans: list[Span]) -> list[str]:
    return [problem for span in spans for problem in problems_of(span)]


def test_the_docs_name_only_code_that_exists():
    spans = doc_spans()
    assert len(spans) > 2000, "the code spans were not found: has SPAN stopped matching them?"
    stale = stale_names(spans)
    assert not stale, f"{len(stale)} names in the docs name nothing (rename them as the code is now):\n" + "\n".join(
        stale)


def test_the_allowed_spans_are_still_in_the_docs():
    texts = {span.text for span in doc_spans()}
    assert not ALLOWED - texts, f"no longer in the docs, take them out of ALLOWED: {sorted(ALLOWED - texts)}"


def test_the_keys_taken_for_names_are_keys_of_the_code():
    unused = [f"{package}.{key}" for package, keys in sorted(KEYS.items()) for key in sorted(keys)
              if not re.search(rf"[\"']{key}[\"']", code_texts())]
    assert not unused, f"no code writes or reads these keys, take them out of KEYS: {unused}"


def test_spans_are_read_as_markdown_reads_them():
    page = "\n".join([
        "A `one` and ``two `with` ticks`` and a `span",
        "over two lines`.",
        "```",
        "`not a span`",
        "```",
        "| a | `x\\|y` |",
    ])
    page += "\n".join(["", "```", "$ ./manage.py load_demo \\", "    --care", "echo", "```"])
    assert [(s.line, s.text, s.fenced) for s in spans_of("p.md", page)] == [
        (1, "one", False), (1, "two `with` ticks", False), (1, "span over two lines", False), (6, "x|y", False),
        (4, "`not a span`", True), (8, "./manage.py load_demo --care", True), (10, "echo", True)]


@pytest.mark.parametrize(("text", "why"), [
    ("metrics.core.recompute", None),
    ("metrics.core.report.report_complete", None),
    ("annotation.SessionLabel", None),
    ("Study.session_order", None),
    ("Study.SessionOrder.BLINDED", None),
    ("TurnState.before", None),
    ("benchmark.Session(conversation, index, kind, crisis_type)", None),
    ("lc8.inputs.lc8_section(study, seed=0, resamples=2000)", None),
    ("metrics.core.recomputed", "metrics.core has no recomputed"),
    ("annotation.selectors.no_such_selector", "annotation.selectors has no no_such_selector"),
    ("Study.no_such_field", "Study has no no_such_field"),
    ("benchmark.Session(conversation, number)", "benchmark.Session has no field number"),
    ("lc8.inputs.lc8_section(study, seeds=0)", "lc8.inputs.lc8_section takes no seeds"),
    ("perf/reviewer_queues.py", None),
    ("tests/<app>/test_<module>.py", None),
    ("annotation/0017_queue_progress", None),
    ("annotation/_complete.html", None),
    ("perf/no_such_bench.py", "no file or folder perf/no_such_bench.py"),
    ("annotation/0099_gone", "no migration annotation/0099_gone"),
    ("manage.py import_judgments --study S", None),
    ("manage.py import_judgments --no-such-option", "manage.py import_judgments takes no --no-such-option"),
    ("manage.py no_such_command", "no command manage.py no_such_command"),
    ("load_demo --care", None),
    ("cab download bundle --run 3", None),
    ("cab download --no-such", "cab download takes no --no-such"),
    ("cab vanish", "no command cab vanish"),
    ("./scripts/bench --scale 10 --only exports", None),
    ("./scripts/bench --scales 10", "scripts/bench takes no --scales"),
    (".venv/bin/python scripts/testenv.py -- .venv/bin/python perf/turn_view.py --cpu-ratio 1000", None),
    ("perf/turn_view.py --cpu-ratios 1000", "perf/turn_view.py takes no --cpu-ratios"),
    ("GET /api/v1/studies/{slug}/rounds/", None),
    ("/studies/SLUG/reports/care/timeline/NAME/", None),
    ("/api/v1/", None),
    ("GET /api/v1/studies/{slug}/no-such/", "no URL /api/v1/studies/{slug}/no-such/"),
    ("GET, POST /api/v1/studies/{slug}/methods/", None),
    ("POST /api/v1/studies/SLUG/session-labels/", None),
    ("GET /api/v1/studies/{slug}/exports/judgments.csv", None),
    ("DELETE /api/v1/studies/{slug}/methods/", "the API schema has no DELETE /api/v1/studies/{slug}/methods/"),
    ("GET, POST /api/v1/studies/{slug}/rounds/", "the API schema has no POST /api/v1/studies/{slug}/rounds/"),
    ("/proc/PID/stat", None),
    ("METRIC_RUN_SPLIT_CELLS", None),
    ("SECURE_HSTS_PRELOAD", None),
    ("NO_SUCH_VARIABLE=1", "no setting or variable NO_SUCH_VARIABLE in the code"),
    ("test_anchors_are_githubs", None),
    ("test_no_such_thing", "no test test_no_such_thing"),
    ("care.alignment[MODEL]", None),
    ("judgment_save", None),
])
def test_the_checks_catch_what_they_are_for(text, why):
    page = "docs/" + "example.md"  # a page that is not there (written so that no test takes it for a citation)
    found = problems_of(Span(page, 7, text))
    assert found == ([] if why is None else [f"{page}:7: `{text}`: {why}"])
