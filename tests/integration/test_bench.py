"""The short benchmark run (./scripts/bench --short: the benchmarks of issue 14 at a tiny scale, each on its own
throwaway PostgreSQL and Redis) prints the one table with every figure row. In the suite it runs the three whose
figures this project owns in full or that load no server of their own (ingest, exports, lc8: about 30 s); the
other three (reviewers, metrics, dashboards: about 65 s alone, twice that beside the suite) are run whole by
`./scripts/bench --short` before every benchmark report (docs/benchmarks.md), and here each must accept the options
the short run passes it. No timing is asserted: at this size and on a shared machine the verdicts mean nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks import bench

ROOT = Path(__file__).resolve().parents[2]
IN_THE_SUITE = ("ingest", "exports", "lc8")
# The figures of the benchmarks this project owns in full; the others must give at least one row each.
FIGURES = {
    "ingest": ["ingest: bulk responses through the API", "ingest: bulk vs one request per response",
               "ingest: resend, all unchanged", "ingest: server worker peak RSS"],
    "exports": ["export csv: time vs COPY", "export csv: first byte", "export jsonl: time vs COPY",
                "export jsonl: first byte", "export: server worker peak RSS"],
}


@pytest.mark.slow(40)
def test_the_short_benchmark_run_prints_every_figure(tmp_path):
    output = tmp_path / "benchmarks.md"
    run = subprocess.run([str(ROOT / "scripts/bench"), "--short", "--only", ",".join(IN_THE_SUITE), "--output",
                          str(output)], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-4000:]
    assert "PROBLEM" not in run.stdout, said[-4000:]
    report = output.read_text()
    assert f"- command: `./scripts/bench --short --only {','.join(IN_THE_SUITE)} --output" in report
    assert "- machine: " in report and " cores (" in report and "GiB memory" in report
    rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| bench ")]
    for name in IN_THE_SUITE:
        assert any(row.startswith(f"| {name} | ") for row in rows), f"no figure from {name}:\n{report}"
    for name, figures in FIGURES.items():
        for figure in figures:
            assert any(row.startswith(f"| {name} | {figure}") for row in rows), f"{name}: no {figure!r}\n{report}"
    assert any(row.startswith("| exports | export csv: ") and "judgments | " in row for row in rows)
    for row in rows:  # value, baseline and ratio are numbers, and every row has a verdict
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == len(bench.HEADER), row
        assert cells[2].split()[0].replace(",", "").replace(".", "").lstrip("-").isdigit(), row
        assert cells[-1] == "–" or cells[-1] == "met" or cells[-1].startswith("MISSED"), row


@pytest.mark.parametrize(("name", "script", "extra"), [b for b in bench.BENCHMARKS if b[0] not in IN_THE_SUITE])
def test_the_other_benchmarks_take_the_short_runs_options(name, script, extra):
    """What the short run passes a benchmark it can still parse (its --help lists each option; the run itself is
    ./scripts/bench --short)."""
    argv = bench.command_for(ROOT / "benchmarks" / script, scale=bench.SHORT_SCALE, short=True, extra=extra)
    assert argv is not None, f"benchmarks/{script} has no --json"
    given = [arg for arg in argv[argv.index("--json"):] if arg.startswith("--")]
    assert set(given) >= {"--json"} | {arg for arg in extra if arg.startswith("--")}, (name, given)
    shown = subprocess.run([str(ROOT / ".venv/bin/python"), str(ROOT / "benchmarks" / script), "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    for option in given:
        assert option in shown.stdout, f"{script} --help does not list {option}"


def test_a_miss_says_by_how_much():
    row = {"figure": "x", "value": 20_000.0, "unit": "rows/s", "baseline": "b", "baseline_value": 100.0,
           "target": "≥ 30,000 rows/s", "met": False}
    assert bench.verdict(row) == "MISSED by 10,000 rows/s, 33%"
    assert bench.verdict(row | {"target": "≥ 300× baseline"}) == "MISSED by 100×, 33%"
    assert bench.verdict(row | {"value": 0.7, "unit": "s", "target": "< 0.5 s"}) == "MISSED by 0.2 s, 40%"
    assert bench.verdict(row | {"met": True}) == "met"
    assert bench.verdict(row | {"target": ""}) == "–"
