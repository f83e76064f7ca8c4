#!/usr/bin/env python
"""Every benchmark of issue 14 at one scale, each on its own throwaway PostgreSQL and Redis, in one table: figure,
value, the baseline measured in the same run, their ratio, the target, met or missed (and by how much).

    ./scripts/bench                    # paper scale (42,230 responses, ~690,000 judgments); writes docs/benchmarks.md
    ./scripts/bench --scale 10         # ten times it
    ./scripts/bench --short            # CI size (scale 0.02, few requests): checks that every figure is produced
    ./scripts/bench --only ingest,exports

Each benchmark (perf/<name>.py) builds its own synthetic study at the scale and prints, with ``--json``,
one JSON object per figure and line at the end (perf/_common.py). Its whole output goes to
var/bench/<name>.log. The table goes to the terminal and, with the date, the exact command, the machine (cores,
memory, load) and the commit, to --output (docs/benchmarks.md; var/bench/short.md for --short). A short run's
verdicts are printed but mean nothing (tiny data, no timing assertions). Exit status 1 when a benchmark failed or
printed no figure.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import loadavg, parse_figures  # noqa: E402

SHORT_SCALE = 0.02
# name, script, arguments of a short run (each passed only when the script has that option)
BENCHMARKS: list[tuple[str, str, list[str]]] = [
    ("ingest", "api_ingest.py", []),
    ("reviewers", "concurrent_reviewers.py",
     ["--reviewers", "1,4", "--workers", "3", "--seconds", "0.5", "--cycles", "2", "--saves", "2", "--warmup", "1"]),
    ("queues", "reviewer_queues.py",
     ["--queues", "20,60", "--reviewers", "2", "--workers", "3", "--seconds", "0.5", "--cycles", "2", "--saves", "3",
      "--warmup", "1"]),
    ("exports", "exports.py", []),
    ("metrics", "metrics_worker.py", ["--resamples", "50", "--naive-resamples", "2", "--runs", "1"]),
    ("dashboards", "reports_pages.py", ["--runs", "1"]),
    ("lc8", "lc8_report.py", ["--naive-resamples", "2"]),
]
_TARGET = re.compile(r"^\s*(≥|>=|>|≤|<=|<)\s*([\d,]*\.?\d+)\s*(×|x)?")


def options_of(script: Path) -> set[str]:
    """The --options a benchmark takes, read from its source (running it with --help may run it)."""
    source = script.read_text()
    found = set(re.findall(r"""["'](--[a-z][a-z0-9-]*)["']""", source))
    if "add_arguments(parser" in source:
        found |= {"--json", "--scale"}
    return found


def command_for(script: Path, *, scale: float, short: bool, extra: list[str]) -> list[str] | None:
    options = options_of(script)
    if "--json" not in options:
        return None
    argv = [str(ROOT / ".venv/bin/python"), str(ROOT / "scripts/testenv.py"), "--", str(ROOT / ".venv/bin/python"),
            str(script), "--json"]
    if "--scale" in options:
        argv += ["--scale", f"{scale:g}"]
    if short:
        i = 0
        while i < len(extra):
            has_value = i + 1 < len(extra) and not extra[i + 1].startswith("--")
            if extra[i] in options:
                argv += extra[i:i + 1 + has_value]
            i += 1 + has_value
    return argv


def run(name: str, argv: list[str], log: Path) -> tuple[int, list[dict], float]:
    # Each benchmark gets its own throwaway servers, whatever this shell points at.
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env["PYTHONUNBUFFERED"] = "1"
    started = time.monotonic()
    with log.open("w") as out:
        out.write(f"$ {shlex.join(argv)}\n")
        out.flush()
        code = subprocess.run(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    return code, parse_figures(log.read_text()), time.monotonic() - started


def number(value: float | None) -> str:
    if value is None:
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def verdict(row: dict) -> str:
    """met / missed by how much, read from the target's comparison (on value / baseline when it ends in ×)."""
    target = row.get("target") or ""
    if not target:
        return "–"
    if row.get("met"):
        return "met"
    match = _TARGET.match(target)
    value, baseline = row.get("value"), row.get("baseline_value")
    if not match or value is None:
        return "MISSED"
    sign, limit, times = match.group(1), float(match.group(2).replace(",", "")), match.group(3)
    if times:
        if not baseline:
            return "MISSED"
        value, unit = value / baseline, "×"
    else:
        unit = " " + row.get("unit", "")
    gap = limit - value if sign in ("≥", ">=", ">") else value - limit
    share = f", {gap / limit:.0%}" if limit else ""
    return f"MISSED by {number(gap)}{unit.rstrip()}{share}"


def table(rows: list[tuple[str, dict]]) -> list[list[str]]:
    lines = []
    for name, row in rows:
        value, baseline = row.get("value"), row.get("baseline_value")
        ratio = f"{value / baseline:,.2f}×" if value is not None and baseline else "–"
        lines.append([name, row["figure"], f"{number(value)} {row.get('unit', '')}".strip(),
                      f"{row.get('baseline', '')}: {number(baseline)}", ratio, row.get("target") or "–",
                      verdict(row)])
    return lines


HEADER = ["bench", "figure", "value", "baseline (same run)", "ratio", "target", "verdict"]


def as_text(lines: list[list[str]]) -> str:
    widths = [max(len(cells[i]) for cells in [HEADER, *lines]) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()
                     for cells in [HEADER, ["-" * w for w in widths], *lines])


def as_markdown(lines: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    return "\n".join(["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER),
                      *("| " + " | ".join(cell(c) for c in cells) + " |" for cells in lines)])


def machine() -> str:
    memory = next((line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:")), "0")
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{os.cpu_count()} cores ({model}), {int(memory) / 1024 / 1024:.1f} GiB memory"


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' with uncommitted changes' if dirty else ''}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=None, help="1 = paper scale (default 1; --short: 0.02)")
    parser.add_argument("--short", action="store_true", help="CI size: tiny scale, few requests, no verdicts")
    parser.add_argument("--only", default="", help=f"comma-separated: {', '.join(n for n, _, _ in BENCHMARKS)}")
    parser.add_argument("--output", type=Path, help="the Markdown report (default docs/benchmarks.md; "
                                                    "--short: var/bench/short.md)")
    args = parser.parse_args()
    scale = args.scale if args.scale is not None else (SHORT_SCALE if args.short else 1.0)
    output = args.output or ROOT / ("var/bench/short.md" if args.short else "docs/benchmarks.md")
    chosen = [b for b in BENCHMARKS if not args.only or b[0] in args.only.split(",")]
    if not chosen:
        parser.error(f"--only: none of {args.only!r} is a benchmark")
    logs = ROOT / "var/bench"
    logs.mkdir(parents=True, exist_ok=True)

    invocation = shlex.join(["./scripts/bench", *sys.argv[1:]])
    started_at = datetime.datetime.now(datetime.UTC)
    load_before = loadavg()
    print(f"bench: scale {scale:g}{' (short)' if args.short else ''} on {machine()}; load {load_before}", flush=True)
    rows: list[tuple[str, dict]] = []
    problems: list[str] = []
    for name, script, extra in chosen:
        argv = command_for(ROOT / "perf" / script, scale=scale, short=args.short, extra=extra)
        if argv is None:
            problems.append(f"{name}: perf/{script} has no --json output yet")
            print(f"bench: {name}: skipped, perf/{script} has no --json", flush=True)
            continue
        print(f"bench: {name}: {shlex.join(argv[3:])}  (log: var/bench/{name}.log)", flush=True)
        code, figures, seconds = run(name, argv, logs / f"{name}.log")
        print(f"bench: {name}: exit {code}, {len(figures)} figure(s), {seconds:.0f} s", flush=True)
        if code != 0 or not figures:
            tail = (logs / f"{name}.log").read_text().strip().splitlines()[-3:]
            problems.append(f"{name}: exit {code}, {len(figures)} figure(s); see var/bench/{name}.log: "
                            + " / ".join(tail))
        rows += [(name, figure) for figure in figures]

    lines = table(rows)
    note = (f"Short run (scale {scale:g}): every figure is produced, but tiny data and few requests make the "
            "verdicts meaningless." if args.short else "")
    print("\n" + as_text(lines))
    for problem in problems:
        print(f"PROBLEM {problem}")
    if note:
        print(note)

    missed = sum(1 for line in lines if line[-1].startswith("MISSED"))
    report = [
        "# Benchmarks (issue 14)",
        "",
        f"- date: {started_at:%Y-%m-%d %H:%M} UTC",
        f"- command: `{invocation}` (each benchmark on its own throwaway PostgreSQL and Redis, scale {scale:g})",
        f"- machine: {machine()}; load average {load_before} before, {loadavg()} after",
        f"- commit: {commit()}",
        f"- {len(lines)} figures, {missed} missed" + (f"; {len(problems)} problem(s)" if problems else ""),
        "",
        "Every ratio is value / baseline, both measured in the same run on the same machine; a target ending in ×",
        "is on that ratio. The logs of the run are in var/bench/<bench>.log.",
        "",
        as_markdown(lines),
        "",
        *(f"- problem: {problem}" for problem in problems),
        *([note] if note else []),
    ]
    output.parent.mkdir(parents=True, exist_ok=True)
    existing = output.read_text() if output.exists() else ""
    # Notes written by hand after the table (profiles, explanations) are kept across runs.
    marker = "\n## Notes"
    kept = existing[existing.index(marker):] if marker in existing else ""
    output.write_text("\n".join(report).rstrip() + "\n" + kept)
    print(f"bench: table written to {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
