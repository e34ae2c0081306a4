"""``labcoat report compute RUN...``: the best search score by wall-clock and CPU-second marks,
so a pool on 2 workers and an ordinary run compare (synthetic run folders, fast; and one real
pool run, slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.record.runs import ActorSpec, RunMeta, Step
from environments.scoring.score import Score
from tests.agent.test_pool_run import pool_run  # noqa: F401 - the one pool run's fixture
from tui.cli import app, common
from tui.cli.compute_report import chart_series, compute_report
from tui.text_plot import ascii_plot

T = "2026-01-01T10:{:02d}:{:02d}.000+00:00"


def at(seconds: int) -> str:
    return T.format(seconds // 60, seconds % 60)


def node(i: int, start: int, end: int, cpu: float, search: float | None) -> dict:
    return {"id": i, "operator": "start" if i == 1 else "improve", "parents": [] if i == 1 else [1],
            "worker": f"worker-{i}", "started_at": at(start), "ended_at": at(end),
            "status": "ok" if search is not None else "failed", "search": search,
            "cpu_seconds": cpu, "cpu_source": "rusage", "wall_seconds": end - start}


def write_run(root: Path, run_id: str, config: ActorSpec, steps: list[Step], test: float | None) -> Path:
    path = root / run_id
    path.mkdir(parents=True)
    meta = RunMeta(run_id=run_id, task="t", task_root="/nowhere", actor="agent", config=config,
                   status="finished", created_at=at(0))
    (path / "run.json").write_text(meta.model_dump_json())
    (path / "trace.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps))
    if test is not None:
        (path / "score.json").write_text(Score(
            task="t", metric="acc", direction="higher", value=test, baseline=0.5, improvement=0.1,
            success=True, threshold=0.05).model_dump_json())
    return path


def step(i: int, when: int, action: str, data: dict | None = None, seconds: float = 0.0) -> Step:
    return Step(index=i, time=at(when), actor="agent", action=action, observation="",
                seconds=seconds, data=data)


@pytest.fixture
def two_runs(tmp_path) -> tuple[Path, Path]:
    """A pool on 2 workers (3 nodes, CPU seconds from rusage) and a baseline run (two
    validations), both starting at 10:00:00."""
    pool = write_run(tmp_path, "pool-2", ActorSpec(kind="pool", pool={"workers": 2}), [
        step(0, 1, "Start", seconds=1.0),
        step(1, 12, "Record Node", {"record": node(1, 2, 12, 10.0, 0.5)}),
        step(2, 14, "Record Node", {"record": node(2, 2, 14, 12.0, 0.7)}),
        step(3, 40, "Record Node", {"record": node(3, 12, 40, 20.0, 0.6)}),
        step(4, 41, "Final Answer"),
    ], test=0.9)
    base = write_run(tmp_path, "baseline-1", ActorSpec(kind="baseline"), [
        step(0, 1, "List Files", seconds=1.0),
        step(1, 20, "Validate Submission", {"split": "search", "value": 0.6}),
        step(2, 35, "Validate Submission", {"split": "search", "value": 0.55}),
        step(3, 50, "Validate Submission", {"split": "search", "value": 0.8}),
        step(4, 60, "Final Answer"),
    ], test=None)
    return pool, base


def compute(*args: str):
    return CliRunner().invoke(app, ["report", "compute", *args])


def test_each_run_has_its_best_search_by_each_wall_and_cpu_mark(two_runs):
    pool, base = two_runs
    res = compute(str(pool), str(base), "--wall", "15,30,60", "--cpu", "20,50", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["wall_marks"] == [15, 30, 60] and out["cpu_marks"] == [20, 50]
    p, b = out["runs"]
    assert (p["agent"], p["workers"], p["cpu_source"], p["test"]) == ("pool", 2, "rusage", 0.9)
    assert [m["best_search"] for m in p["by_wall"]] == [0.7, 0.7, 0.7]  # node 2 ended at 14 s
    assert [m["best_search"] for m in p["by_cpu"]] == [0.5, 0.7]  # 10, 22, 42 CPU s
    assert p["wall_seconds"] == 41 and p["cpu_seconds"] == 42 and p["best_search"] == 0.7
    assert [(q["wall_seconds"], q["cpu_seconds"]) for q in p["curve"]] == [(12, 10), (14, 22), (40, 42)]
    assert (b["agent"], b["workers"], b["cpu_source"], b["test"]) == ("baseline", 1, "wall only", None)
    assert [m["best_search"] for m in b["by_wall"]] == [None, 0.6, 0.8]  # 0.55 never the best
    assert [m["best_search"] for m in b["by_cpu"]] == [None, None] and b["cpu_seconds"] is None


def test_default_marks_are_quarters_of_the_longest_run(two_runs):
    out = json.loads(compute(*map(str, two_runs), "--json").output)
    assert out["wall_marks"] == [15, 30, 45, 60]  # the baseline run: 60 s
    assert out["cpu_marks"] == [10, 21, 32, 42]  # the pool: 42 CPU s (two digits)


def test_the_table_reads_for_people(two_runs, monkeypatch):
    monkeypatch.setattr(common.console, "_width", 200)
    res = compute(*map(str, two_runs), "--wall", "15,60", "--cpu", "20", "--wide")
    assert res.exit_code == 0, res.output
    lines = [line.replace("│", " ").split() for line in res.output.splitlines()]
    rows = {cells[0]: cells for cells in lines if cells and cells[0] in ("pool-2", "baseline-1")}
    assert rows["pool-2"][1:] == ["2", "0.9", "0.7", "0.7", "0.5", "pool", "41", "42", "rusage"]
    assert rows["baseline-1"][1:] == ["1", "—", "—", "0.8", "baseline", "60", "wall", "only"]
    assert "≤15 s" in res.output and "≤20 cpu s" in res.output and "wall only" in " ".join(res.output.split())
    md = compute(*map(str, two_runs), "--wall", "15", "--cpu", "20", "--markdown").output
    assert "| pool-2 | 2 | 0.9 | 0.7 |" in md
    monkeypatch.setattr(common.console, "_width", 80)  # a terminal: the scores stay, descriptions go
    narrow = compute(*map(str, two_runs), "--wall", "15,30,45,60", "--cpu", "10,20").output
    header = next(line for line in narrow.splitlines() if line.strip().startswith("run"))
    assert header.split()[:4] == ["run", "workers", "test", "≤15"], header
    assert "agent, wall s, cpu s, cpu from" in " ".join(narrow.split())


def test_bad_input_is_one_clear_line(two_runs, tmp_path):
    res = compute(str(two_runs[0]), "--wall", "soon")
    assert res.exit_code == 2 and "--wall soon: give seconds separated by commas" in " ".join(res.output.split())
    for bad in ("0", "nan", "inf"):
        res = compute(str(two_runs[0]), "--cpu", bad)
        assert res.exit_code == 2 and "above 0" in res.output, bad
    res = compute(str(tmp_path / "nothing"))
    assert res.exit_code == 2 and "no such run directory" in res.output


def test_the_charts_sample_each_run_as_a_step_curve(two_runs):
    report = compute_report(list(two_runs))
    wall = dict(chart_series(report, cpu=False, samples=61))  # a sample a second, 0..60
    assert {x for x, _ in wall["pool-2"]} == set(range(12, 42))  # its first node ended at 12 s, the run at 41 s
    assert {x: y for x, y in wall["pool-2"]}[13] == 0.5 and all(
        y == 0.7 for x, y in wall["pool-2"] if x >= 14)
    base = dict(wall["baseline-1"])
    assert min(base) == 20 and base[49] == 0.6 and base[50] == base[60] == 0.8  # never worse
    cpu = chart_series(report, cpu=True, samples=43)  # the pool's 42 CPU seconds
    assert cpu["baseline-1"] == []  # wall only: no CPU points, but it keeps its marker
    assert dict(cpu["pool-2"])[21] == 0.5 and dict(cpu["pool-2"])[22] == 0.7


def test_plot_charts_wall_and_cpu_seconds_with_one_marker_per_run(two_runs, monkeypatch):
    monkeypatch.setattr(common.console, "_width", 80)
    res = compute(*map(str, two_runs), "--plot")
    assert res.exit_code == 0, res.output
    wall_chart, cpu_chart = res.output.split("best search score by wall-clock seconds")[1].split(
        "best search score by CPU seconds")
    assert "● baseline-1   ▲ pool-2" in wall_chart and "0 s" in wall_chart and "60 s" in wall_chart
    assert "▲ pool-2" in cpu_chart and "baseline-1" not in cpu_chart and "42 s" in cpu_chart
    assert "●" not in cpu_chart  # the baseline run has no CPU seconds: no points there
    rows = [line for line in wall_chart.splitlines() if "│" in line]
    assert len(rows) == 10 and rows[0].split("│")[0].strip() == "0.8" and rows[-1].split("│")[0].strip() == "0.5"
    assert all(len(line) <= 80 for line in (wall_chart + cpu_chart).splitlines())
    md = compute(*map(str, two_runs), "--plot", "--markdown").output
    assert md.count("```") == 2 and "best search score by CPU seconds" in md


def test_a_scores_axis_fits_the_scores():
    chart = ascii_plot({"a": [(0, 0.84), (1, 0.87)]}, width=10, height=5, zero=False)
    rows = [line.split("│")[1] for line in chart.splitlines() if "│" in line]
    assert "●" in rows[0] and "●" in rows[-1] and "┄" not in chart  # 0 is not on the axis
    flat = ascii_plot({"a": [(0, 0.84), (1, 0.84)]}, width=10, height=5, zero=False)
    assert "●" in flat  # one value: a flat line, not a division by zero
    cut = ascii_plot({"a": [(0, 1.0), (5, 2.0)]}, width=10, height=5, x_range=(0.0, 1.0))
    assert "●" in cut.splitlines()[0]  # a point past the range is drawn at its edge, not an IndexError


def test_plots_writes_a_png_and_json_stays_one_document(two_runs, tmp_path):
    res = CliRunner().invoke(app, ["report", "compute", *map(str, two_runs), "--plots",
                                   str(tmp_path / "figs"), "--json"])
    assert res.exit_code == 0, res.output
    png = tmp_path / "figs" / "compute.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert json.loads(res.stdout)["runs"][0]["run"] == "pool-2" and "wrote" in res.stderr
    (tmp_path / "file").write_text("")
    bad = compute(str(two_runs[0]), "--plots", str(tmp_path / "file"))
    assert bad.exit_code == 2 and "--plots" in bad.output


def test_a_run_named_to_attack_the_charts_is_shown_as_text(tmp_path):
    """A run's name is text: an escape sequence is shown, never obeyed, and ``$...$`` (which
    matplotlib would parse as mathtext and may fail on) is drawn as it is."""
    name = "x$\\frac{$\x1b]52;c;aGk=\x07"
    run = write_run(tmp_path, name, ActorSpec(kind="baseline"), [
        step(0, 1, "List Files", seconds=1.0),
        step(1, 20, "Validate Submission", {"split": "search", "value": 0.6})], test=None)
    res = compute(str(run), "--plot", "--plots", str(tmp_path / "figs"))
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\\x1b]52" in res.output
    assert (tmp_path / "figs" / "compute.png").stat().st_size > 10_000


@pytest.mark.slow
def test_a_real_pool_run_reports_its_compute(pool_run):  # noqa: F811
    """The pool run of tests/agent/test_pool_run.py's fixture (threads, local sandbox)."""
    run, meta, _ = pool_run
    assert meta.status == "finished"
    out = json.loads(compute(str(run.path), "--json").output)
    [r] = out["runs"]
    assert r["workers"] == 2 and r["cpu_source"] == "wall x cpus" and r["best_search"] == 8.0
    bests = [p["best_search"] for p in r["curve"] if p["best_search"] is not None]
    assert bests == sorted(bests) and len(r["curve"]) == 9  # one point a node, never worse
    cpus = [p["cpu_seconds"] for p in r["curve"]]
    assert cpus == sorted(cpus) and r["by_wall"][-1]["best_search"] == 8.0
