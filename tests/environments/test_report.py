"""Reports on hand-made run directories whose answers are known."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.record.manifest import Machine, RunManifest, ValidationCall
from environments.record.runs import RunMeta, Totals
from environments.reports import (
    RowKey,
    RunRecord,
    build_report,
    compare,
    improvement_curves,
    load_runs,
    row_cells,
    summarise_runs,
    to_markdown,
    write_plots,
)
from sandbox.base import Isolation
from tui.cli import app


def score(task: str, value: float | None, improvement: float | None, step: int,
          failure: str | None = None, threshold: float = 0.1) -> dict:
    return {"task": task, "metric": "acc", "direction": "higher", "value": value, "baseline": 10.0,
            "improvement": improvement, "success": improvement is not None and improvement >= threshold,
            "threshold": threshold, "step": step, "eval_seconds": 1.0, "failure": failure}


def make_run(root: Path, run_id: str, task: str, model: str, *, status: str = "finished",
             steps: int = 3, tokens: tuple[int, int] = (0, 0), cost: float = 0.0, seconds: float = 0.0,
             final: dict | None = None, curve: list[dict] | None = None,
             sandbox: str = "local", manifest: RunManifest | None = None, seed: int = 0,
             **meta_fields) -> Path:
    path = root / run_id
    path.mkdir(parents=True)
    meta = RunMeta(run_id=run_id, task=task, task_root="/nowhere", actor="agent", agent="research",
                   model=model, seed=seed, status=status, sandbox=sandbox, manifest=manifest, **meta_fields,
                   totals=Totals(steps=steps, tokens_in=tokens[0], tokens_out=tokens[1], cost=cost,
                                 seconds=seconds))
    (path / "run.json").write_text(meta.model_dump_json())
    if final is not None:
        (path / "score.json").write_text(json.dumps(final))
    if curve is not None:
        (path / "scores.json").write_text(json.dumps({"steps": curve}))
    return path


@pytest.fixture
def runs_dir(tmp_path) -> Path:
    root = tmp_path / "runs"
    make_run(root / "batch" / "runs" / "k1", "r1", "t1", "A", steps=3, tokens=(100, 50), cost=0.01,
             seconds=10, final=score("t1", 12.0, 0.2, 3),
             curve=[score("t1", 10.0, 0.0, 1), score("t1", 13.0, 0.3, 2), score("t1", 12.0, 0.2, 3)])
    make_run(root, "r2", "t1", "A", seed=1, steps=5, tokens=(200, 100), cost=0.03, seconds=20,
             final=score("t1", 10.5, 0.05, 5))
    make_run(root, "r3", "t1", "A", seed=2, steps=4, seconds=30,
             final=score("t1", None, None, 4, failure="infrastructure"))
    make_run(root, "r4", "t1", "B", steps=2, tokens=(1000, 0), cost=0.5, seconds=5,
             final=score("t1", 15.0, 0.5, 2), curve=[score("t1", 11.0, 0.1, 1), score("t1", 15.0, 0.5, 2)])
    make_run(root, "r5", "t1", "B", seed=1, status="error", steps=1, tokens=(10, 0), seconds=1)
    make_run(root, "r6", "t2", "A", steps=2, final=score("t2", None, None, 2, failure="no_submission"))
    # a retired attempt (hidden folder) and a run's own workspace never count
    make_run(root / "batch" / ".retired" / "k1", "old", "t1", "A", final=score("t1", 99.0, 8.9, 1))
    make_run(root / "r2" / "workspace", "fake", "t1", "A", final=score("t1", 99.0, 8.9, 1))
    return root


def test_rows_have_the_known_numbers(runs_dir):
    runs = load_runs(runs_dir)
    assert sorted(r.run_id for r in runs) == ["r1", "r2", "r3", "r4", "r5", "r6"]
    rows = {(r.task, r.model): r for r in build_report(runs)}
    a = rows[("t1", "A")]
    assert (a.runs, a.successes, a.scored) == (3, 1, 2)
    assert a.success_rate == pytest.approx(1 / 3)
    assert a.success_rate_stderr == pytest.approx(math.sqrt(1 / 3 * 2 / 3 / 3))
    assert a.mean_improvement == pytest.approx(0.125)
    assert a.improvement_stderr == pytest.approx(0.075)  # stdev(0.2, 0.05) / sqrt(2)
    assert a.best_step_improvement == pytest.approx(0.175)  # (0.3 from the curve + 0.05) / 2
    assert a.mean_steps == 4 and a.mean_tokens == 150 and a.total_tokens == 450
    assert a.total_cost == pytest.approx(0.04) and a.mean_seconds == 20
    assert a.failures == {"infrastructure": 1} and a.infrastructure_failures == 1
    b = rows[("t1", "B")]
    assert (b.runs, b.successes, b.success_rate, b.scored) == (2, 1, 0.5, 1)
    assert b.mean_improvement == 0.5 and b.improvement_stderr is None
    assert b.failures == {"unscored": 1} and b.run_errors == 1 and b.infrastructure_failures == 0
    c = rows[("t2", "A")]
    assert (c.runs, c.success_rate, c.mean_improvement) == (1, 0.0, None)
    assert c.failures == {"no_submission": 1}


def test_compare_and_curves(runs_dir):
    runs = load_runs(runs_dir)
    rows = build_report(runs)
    (cmp,) = compare(rows, "A", "B")  # t2 was run by A only
    assert cmp.task == "t1"
    assert cmp.success_rate_delta == pytest.approx(0.5 - 1 / 3)
    assert cmp.mean_improvement_delta == pytest.approx(0.375)
    curves = improvement_curves(runs)
    # A: r1's curve (steps 1..3), r2's final at its step 5; r3 has no value. r1 ended at step 3,
    # so step 5 averages r2 alone and says so (never r1's final carried forward)
    assert [(p.x, round(p.mean, 4), p.runs, p.ended) for p in curves["t1"]["A"]] == [
        (1, 0.0, 1, 0), (2, 0.3, 1, 0), (3, 0.2, 1, 0), (5, 0.05, 1, 1)]
    assert [(p.x, p.mean) for p in curves["t1"]["B"]] == [(1, 0.1), (2, 0.5)]
    assert "t2" not in curves


def test_markdown_and_plots(runs_dir, tmp_path):
    rows = build_report(load_runs(runs_dir))
    md = to_markdown(rows)
    assert md.startswith("| task | model | runs | success |")
    assert "| t1 | A | 3 | 33% ± 27% (1/3) | 11.25 | n/a | +12.5% ± 7.5% | +17.5% ± 12.5% | 4.0 | 150 | 0.0400 | 20.0 | 0 | 1 |" in md
    written = write_plots(rows, load_runs(runs_dir), tmp_path / "plots")
    assert sorted(p.name for p in written) == ["improvement_t1.png", "success_vs_tokens.png"]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_report_cli(runs_dir, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(runs_dir), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {(r["task"], r["model"], r["runs"]) for r in data["rows"]} == {("t1", "A", 3), ("t1", "B", 2), ("t2", "A", 1)}
    assert {r["run_id"]: r["outcome"] for r in data["runs"]}["r3"] == "infrastructure"
    res = runner.invoke(app, ["report", str(runs_dir), "--compare", "A", "B"])
    assert res.exit_code == 0 and "| t1 |" in res.stdout and "+37.5%" in res.stdout
    res = runner.invoke(app, ["report", str(runs_dir), "--markdown", "--plots", str(tmp_path / "p")])
    assert res.exit_code == 0 and (tmp_path / "p" / "success_vs_tokens.png").exists()
    res = runner.invoke(app, ["report", str(runs_dir), "--compare", "A", "nope"])
    assert res.exit_code == 2
    # two folders compared as two agents
    res = runner.invoke(app, ["report", str(runs_dir), "--json", "--compare", str(runs_dir / "r2"),
                              str(runs_dir / "r4")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)[0]["mean_improvement_delta"] == pytest.approx(0.45)


def test_normalized_score_is_shown_next_to_the_raw_metric(tmp_path):
    """Reports carry the normalized score (the task's fixed anchors) beside value and success."""
    root = tmp_path / "runs"
    for i, norm in enumerate((0.5, 1.0)):
        final = {**score("t1", 12.0 + i, 0.2, 3), "normalized": norm}
        make_run(root, f"n{i}", "t1", "A", final=final, seed=i)
    row = summarise_runs(RowKey(task="t1", actor="research", model="A"), load_runs(root))
    assert row.mean_normalized == pytest.approx(0.75) and row.mean_value == pytest.approx(12.5)
    assert "| 12.5 | 0.75 ± 0.25 |" in "| " + " | ".join(row_cells(row)) + " |"


def test_unisolated_runs_have_rows_of_their_own_that_say_so(tmp_path):
    make_run(tmp_path, "a", "digits", "openai/m")
    make_run(tmp_path, "b", "digits", "openai/m", sandbox="none")
    labels = sorted(r.model for r in build_report(load_runs(tmp_path)))
    assert labels == ["openai/m", "openai/m (UNISOLATED: --sandbox none)"]


def test_plots_draw_the_threshold_and_leave_out_runs_that_never_started(runs_dir, tmp_path,
                                                                         monkeypatch):
    """The improvement plot shows the task's success threshold and a legend beside the axes;
    a combination that never made a run spent no tokens and is not a point at 0 tokens."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from environments.reports import RunRecord, plot_notes

    seen: dict[str, Figure] = {}
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: (
        seen.__setitem__(Path(path).name, fig), real(fig, path, **kw))[1])
    runs = load_runs(runs_dir)
    never = RunRecord(path="", run_id="lost", key=RowKey(task="t1", actor="A", model="A"), status="error",
                      error="worker died")
    runs.append(never)
    write_plots(build_report(runs), runs, tmp_path / "plots")
    (ax,) = seen["improvement_t1.png"].axes
    labels = ax.get_legend_handles_labels()[1]
    assert any(label.startswith("success threshold") for label in labels), labels
    assert ax.get_legend()._loc == 2  # its upper left at the anchor, right of the axes
    (tokens_ax,) = seen["success_vs_tokens.png"].axes
    xs = {c.get_label(): c.lines[0].get_xdata()[0] for c in tokens_ax.containers}
    # t1/A: r1 150, r2 300, r3 0 tokens (started); with the lost one at 0 it would be 112.5
    assert xs["A · t1"] == pytest.approx(150.0), xs
    assert plot_notes(runs) == []  # r1 and r4 have per-step scores
    assert "--all-steps" in plot_notes([r.model_copy(update={"curve": {}}) for r in runs])[0]


def test_reports_filter_on_the_manifest(tmp_path):
    root = tmp_path / "runs"
    for n, (backend, gpus, validations) in enumerate([("docker", [], 0), ("local", [], 2),
                                                      ("docker", ["NVIDIA H200"], 1)]):
        manifest = RunManifest(machine=Machine(cores=2 + n, gpus=gpus),
                               sandbox=Isolation(backend=backend, available=True),
                               validations=[ValidationCall(step=i, counted=True) for i in range(validations)])
        make_run(root, f"r{n}", "t1", "A", manifest=manifest, final=score("t1", 12.0, 0.2, 3))
    make_run(root, "old", "t1", "A")  # no manifest (a run from before): matches no filter on it
    assert len(load_runs(root)) == 4
    assert {r.run_id for r in load_runs(root, where={"backend": "docker"})} == {"r0", "r2"}
    assert {r.run_id for r in load_runs(root, where={"backend": "docker", "gpu": "none"})} == {"r0"}
    assert {r.run_id for r in load_runs(root, where={"validations": "0", "backend": "docker"})} == {"r0"}
    assert {r.run_id for r in load_runs(root, where={"manifest.machine.cores": "3"})} == {"r1"}
    res = CliRunner().invoke(app, ["report", str(root), "--where", "backend=docker", "--json"])
    assert res.exit_code == 0, res.output
    assert sorted(r["run_id"] for r in json.loads(res.stdout)["runs"]) == ["r0", "r2"]
    bad = CliRunner().invoke(app, ["report", str(root), "--where", "backend"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output
    none = CliRunner().invoke(app, ["report", str(root), "--where", "backend=podman"])
    assert none.exit_code == 2 and "matching --where" in none.output


def test_lost_combinations_are_read_through_the_batch_model(tmp_path):
    from environments.record.runs import BatchRecords, ComboRecord

    batch = tmp_path / "batch"
    batch.mkdir()
    records = BatchRecords(combos={"k": ComboRecord(task="/x/t1", model="A", seed=1, state="failed",
                                                   error="worker died")})
    (batch / "batch.json").write_text(json.dumps({"spec": {"tasks": ["t1"]}, **records.model_dump()}))
    (lost,) = load_runs(batch)
    assert (lost.task, lost.seed, lost.outcome, lost.error) == ("t1", 1, "not_run", "worker died")


def test_a_batch_run_without_method_tools_has_a_row_of_its_own(tmp_path):
    """The uplift's control arm is told apart by its batch's spec, read from where the run lies
    (the folder may have moved since ``run.json`` named it)."""
    from environments.reports import NO_TOOLS

    for arm, tools in (("with", True), ("without", False)):
        batch = tmp_path / "moved" / arm
        run = make_run(batch / "runs" / "key", f"r-{arm}", "t1", "A", final=score("t1", 12.0, 0.2, 3))
        meta = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**meta, "batch": f"/old/place/{arm}"}))
        (batch / "batch.json").write_text(json.dumps({"spec": {"tasks": ["t1"], "method_tools": tools}}))
    make_run(tmp_path / "moved", "loose", "t1", "A", final=score("t1", 12.0, 0.2, 3), seed=1)  # no batch: tools
    rows = {r.model: r.runs for r in build_report(load_runs(tmp_path / "moved"))}
    assert rows == {"A": 2, "A" + NO_TOOLS: 1}


def _record(seed: int, value: float) -> RunRecord:
    from environments.scoring.score import Score

    score = Score(task="t", metric="m", direction="higher", value=value, baseline=1.0,
                  improvement=value - 1.0, success=value > 1.1, threshold=0.1)
    return RunRecord(path=f"r{seed}", run_id=f"r{seed}", key=RowKey(task="t", actor="research", model="m"), seed=seed,
                     status="finished", score=score)


def test_a_spread_of_zero_across_seeds_says_the_seed_changed_nothing():
    same = summarise_runs(RowKey(task="t", actor="research", model="m"), [_record(s, 1.5) for s in range(3)])
    assert same.seeds == 3 and same.same_every_seed
    assert "same for all 3 seeds" in row_cells(same)[6] and "±" not in row_cells(same)[6]
    varied = summarise_runs(RowKey(task="t", actor="research", model="m"), [_record(0, 1.5), _record(1, 1.7), _record(2, 1.5)])
    assert not varied.same_every_seed and "±" in row_cells(varied)[6]
    one_seed = summarise_runs(RowKey(task="t", actor="research", model="m"), [_record(0, 1.5), _record(0, 1.5)])  # repeats, not seeds
    assert not one_seed.same_every_seed


def test_the_tree_agent_and_the_research_agent_on_one_model_have_rows_of_their_own(tmp_path):
    for seed, (run_id, agent) in enumerate((("r1", "research"), ("r2", "tree"), ("r3", "tree"))):
        run = make_run(tmp_path / "runs", run_id, "t1", "llamacpp/q", final=score("t1", 12.0, 0.2, 3),
                       seed=seed)
        meta = json.loads((run / "run.json").read_text())
        meta["config"] = {**meta.get("config", {}), "kind": agent, "model": "llamacpp/q"}
        (run / "run.json").write_text(json.dumps(meta))
    rows = {r.model: r.runs for r in build_report(load_runs(tmp_path / "runs"))}
    assert rows == {"llamacpp/q": 1, "tree: llamacpp/q": 2}


# ---- what a row counts: independent attempts, one per task × actor × seed ----------------------

@pytest.fixture
def mixed(tmp_path) -> Path:
    """Beside three independent attempts (seeds 0-2): the README run's fork, a run stopped in
    the TUI, a resumed run, and a second attempt of seed 0 made earlier."""
    from environments.record.runs import ForkOrigin

    root = tmp_path / "runs"
    ok, miss = score("t1", 12.0, 0.2, 3), score("t1", 10.5, 0.05, 3)
    for seed, final in enumerate((ok, miss, miss)):
        make_run(root, f"ind{seed}", "t1", "A", seed=seed, steps=10, tokens=(900, 100), final=final,
                 created_at=f"2026-01-02T00:00:0{seed}+00:00")
    make_run(root, "old0", "t1", "A", seed=0, final=ok, created_at="2026-01-01T00:00:00+00:00")
    make_run(root, "fork", "t1", "A", seed=0, steps=12, tokens=(5000, 151), cost=0.5, final=ok,
             fork=ForkOrigin(parent="ind0", parent_dir=str(root / "ind0"), step=10,
                             inherited=Totals(steps=10, tokens_in=5000, tokens_out=100, cost=0.4)))
    make_run(root, "stopped", "t1", "A", seed=3, status="interrupted", final=ok)
    make_run(root, "again", "t1", "A", seed=4, resumed=1, final=ok)
    return root


def test_a_row_counts_independent_attempts_and_shows_the_others_apart(mixed):
    rows = {r.model: r for r in build_report(load_runs(mixed))}
    assert set(rows) == {"A", "A · forks", "A · interrupted", "A · resumed", "A · repeats (same seed)"}
    a = rows["A"]
    assert (a.runs, a.successes, a.seeds) == (3, 1, 3)  # 33%, not 5 of 7 pooled
    assert [rows[k].runs for k in ("A · forks", "A · interrupted", "A · resumed")] == [1, 1, 1]
    assert rows["A · repeats (same seed)"].runs == 1  # old0: ind0 (later) is seed 0's attempt
    assert list(rows)[0] == "A"  # independent attempts lead their task


def test_a_fork_is_charged_only_its_own_steps_and_tokens(mixed):
    fork = {r.run_id: r for r in load_runs(mixed)}["fork"]
    assert (fork.steps, fork.tokens, fork.cost) == (2, 51, pytest.approx(0.1))
    assert fork.key.attempt == "fork" and fork.last_step == 12


def test_pool_all_pools_every_run_of_a_row(mixed):
    (row,) = build_report(load_runs(mixed, pool_all=True))
    assert (row.model, row.runs) == ("A", 7)
    assert row.total_tokens == 3 * 1000 + 51  # the fork still brings only its own tokens


def test_the_cli_shows_the_kinds_apart_and_pools_on_request(mixed):
    res = CliRunner().invoke(app, ["report", "runs", str(mixed), "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["model"]: r for r in json.loads(res.stdout)["rows"]}
    assert rows["A"]["runs"] == 3 and rows["A"]["key"]["attempt"] == "independent"
    pooled = json.loads(CliRunner().invoke(app, ["report", "runs", str(mixed), "--json",
                                                 "--pool-all"]).stdout)
    assert [r["runs"] for r in pooled["rows"]] == [7]


def test_old_spellings_still_work_and_name_the_new_one(runs_dir):
    res = CliRunner().invoke(app, ["report", str(runs_dir), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows"] and "labcoat report runs RUNS_DIR" in res.stderr
