"""Method-tool uplift: both arms really run (the tool in one, an unknown action in the other),
pairs are matched by seed, and the interval is the paired t-interval."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.config import ActorConfig
from agent.context import ContextSettings
from agent.uplift import (
    ARMS,
    UpliftSpec,
    arm_dir,
    pair_runs,
    paired_interval,
    run_uplift,
    uplift_report,
    uplift_rows,
)
from environments.record.runs import Budgets
from environments.reports import RowKey, RunRecord, load_runs
from environments.scoring.score import Score
from tests.agent.helpers import react
from tests.conftest import write_task
from tui.cli import app

TOOL = "online_lp_regret"  # a real registry tool that answers in well under a second
TOOL_ARGS = {"horizon": 100, "n_resources": 1, "methods": ["subgradient"], "seeds": 1}
# seed -> (value written after the tool call, value written one step later); anchors 6 -> 0, 60 -> 1
WRITES = {0: ("60", "6"), 1: ("33", "6"), 2: ("60", "33")}


def tool_task(root: Path, tools: list[str] = (TOOL,)) -> Path:
    toml = ('metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n'
            f"tools = {json.dumps(list(tools))}\n")
    return write_task(root, toml=toml, files={
        "reference/train.py": "open('result.txt','w').write('60')\n",
        "anchors.toml": "version = 1\nbaseline = 6.0\nreference = 60.0\n"})


def replies(path: Path) -> str:
    """The same replies in both arms: use the tool, then write result.txt twice.

    With a 2-step budget the tool arm ends after the first write. In the other arm the tool
    call is refused as an unknown action (the research agent re-asks; no step), so both
    writes are steps and the second one is scored. Seeds differ only in what they write."""
    lines = [{"content": react(TOOL, TOOL_ARGS)}]
    for which in (0, 1):
        for seed, values in WRITES.items():
            lines.append({"seeds": [seed], "content": react(
                "Write File", {"file_name": "result.txt", "content": values[which]})})
    lines.append({"content": react("Final Answer", {"final_answer": "done"})})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return f"scripted/{path}"


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """One uplift experiment (2 arms × 3 seeds, real local sandbox), shared by the tests below."""
    tmp = tmp_path_factory.mktemp("uplift")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABCOAT_HOME", str(tmp_path_factory.getbasetemp() / "labcoat-home"))
        task = tool_task(tmp / "tooltask")
        spec = UpliftSpec(task=str(task), models=[replies(tmp / "replies.jsonl")], seeds=[0, 1, 2],
                          actor=ActorConfig(context=ContextSettings(summarize_over=0)),
                          budgets=Budgets(max_steps=2), sandbox="local")
        results = run_uplift(tmp / "uplift", spec, jobs=2)
        yield tmp / "uplift", spec, results


@pytest.mark.slow  # a whole experiment (2 arms x 3 seeds, real sandbox); the pairing and interval logic is tested fast below
def test_both_arms_run_the_same_replies_with_and_without_the_tool(experiment):
    root, _, results = experiment
    assert {name: (r.done, r.failed) for name, r in results.items()} == {
        "with-tools": (3, 0), "without-tools": (3, 0)}, results
    for tools in ARMS:
        for record in load_runs(arm_dir(root, tools)):
            trace = [json.loads(line) for line in (Path(record.path) / "trace.jsonl").read_text().splitlines()]
            calls = (Path(record.path) / "llm" / "calls.jsonl").read_text()
            if tools:  # the tool really ran in the sandbox and reported
                assert trace[0]["action"] == TOOL and not trace[0]["error"]
                assert "subgradient" in trace[0]["data"]["results"]
                assert [s["action"] for s in trace] == [TOOL, "Write File"]
            else:  # the action does not exist: refused before the environment, then the writes
                assert [s["action"] for s in trace] == ["Write File", "Write File"]
                assert f"There is no action named {TOOL!r}" in calls
                assert TOOL not in json.loads(calls.splitlines()[0])["messages"][0]["content"]


@pytest.mark.slow  # a whole experiment (2 arms x 3 seeds, real sandbox); the pairing and interval logic is tested fast below
def test_pairs_are_matched_by_seed_and_the_interval_is_the_paired_t_interval(experiment):
    root, _, _ = experiment
    report = uplift_report(root)
    norm = {s: ((float(a) - 6) / 54, (float(b) - 6) / 54) for s, (a, b) in WRITES.items()}
    by_seed = {p.seed: p for p in report.pairs}
    for seed, (with_value, without_value) in norm.items():
        assert by_seed[seed].with_tools == pytest.approx(with_value)
        assert by_seed[seed].without_tools == pytest.approx(without_value)
        assert by_seed[seed].missing is None
        assert by_seed[seed].tokens_with > 0 and by_seed[seed].tokens_without > 0
    diffs = [norm[s][0] - norm[s][1] for s in sorted(norm)]  # 1.0, 0.5, 0.5
    half = 4.302653 * statistics.stdev(diffs) / math.sqrt(3)  # t(0.975, df=2)
    (row,) = report.rows
    assert (row.pairs, row.incomplete) == (3, 0)
    assert row.uplift.mean == pytest.approx(2 / 3)
    assert (row.uplift.low, row.uplift.high) == (pytest.approx(2 / 3 - half), pytest.approx(2 / 3 + half))
    assert row.mean_with == pytest.approx(statistics.fmean(v[0] for v in norm.values()))


@pytest.mark.slow  # a whole experiment (2 arms x 3 seeds, real sandbox); the pairing and interval logic is tested fast below
def test_a_report_over_the_folder_keeps_the_arms_apart(experiment):
    from environments.reports import NO_TOOLS, anytime_curves, build_report

    root, spec, _ = experiment
    (model,) = spec.models
    runs = load_runs(root)
    rows = {r.model: r for r in build_report(runs)}
    assert set(rows) == {model, model + NO_TOOLS}
    assert rows[model].mean_normalized == pytest.approx(statistics.fmean([1.0, 0.5, 1.0]))
    assert rows[model + NO_TOOLS].mean_normalized == pytest.approx(statistics.fmean([0.0, 0.0, 0.5]))
    assert set(anytime_curves(runs, "tokens")["tooltask"]) == {model, model + NO_TOOLS}


@pytest.mark.slow  # a whole experiment (2 arms x 3 seeds, real sandbox); the pairing and interval logic is tested fast below
def test_a_rerun_resumes_and_runs_nothing(experiment):
    root, spec, _ = experiment
    again = run_uplift(root)
    assert {name: r.ran for name, r in again.items()} == {"with-tools": 0, "without-tools": 0}
    with pytest.raises(ValueError, match="different spec"):
        run_uplift(root, spec.model_copy(update={"seeds": [0]}))


@pytest.mark.slow  # a whole experiment (2 arms x 3 seeds, real sandbox); the pairing and interval logic is tested fast below
def test_cli_json_output_shape(experiment, tmp_path):
    root, _, _ = experiment
    result = CliRunner().invoke(app, ["uplift", "--resume", str(root), "--json",
                                      "--plot", str(tmp_path / "uplift.png")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"task", "rows", "pairs"} and data["task"] == "tooltask"
    (row,) = data["rows"]
    assert {"model", "pairs", "incomplete", "mean_with", "mean_without", "uplift", "mean_tokens_with",
            "mean_tokens_without", "cost_with", "cost_without"} <= set(row)
    assert set(row["uplift"]) == {"mean", "low", "high", "n"} and row["uplift"]["n"] == 3
    assert sorted(p["seed"] for p in data["pairs"]) == [0, 1, 2]
    assert all(p["difference"] == pytest.approx(p["with_tools"] - p["without_tools"]) for p in data["pairs"])
    assert (tmp_path / "uplift.png").stat().st_size > 1000
    table = CliRunner().invoke(app, ["uplift", "--resume", str(root)])
    assert table.exit_code == 0 and "+0.667" in table.stdout


def test_a_task_without_tools_or_anchors_is_refused_before_anything_runs(tmp_path):
    plain = write_task(tmp_path / "plain")
    result = CliRunner().invoke(app, ["uplift", str(plain), "--models", "baseline/hparam",
                                      "--dir", str(tmp_path / "u"), "--sandbox", "local"])
    assert result.exit_code == 2 and "offers no method tools" in result.output
    assert not (tmp_path / "u").exists()
    for args, says in ((["--resume", str(tmp_path)], "no uplift.json; not an uplift folder"),
                       (["--resume", str(tmp_path), "--models", "x"], "takes the spec from the folder"),
                       ([], "give TASK")):
        bad = CliRunner().invoke(app, ["uplift", *args])
        assert bad.exit_code == 2 and says in " ".join(bad.output.split()), bad.output
    unanchored = write_task(tmp_path / "unanchored", toml='metric = "total"\ndirection = "higher"\n'
                            f'baseline = 6.0\nsolve = ["train.py"]\ntools = ["{TOOL}"]\n')
    with pytest.raises(ValueError, match="no anchors.toml"):
        run_uplift(tmp_path / "u2", UpliftSpec(task=str(unanchored), models=["baseline/hparam"]))


# ---- the pure part, on hand-made records ------------------------------------------------------

def record(model: str, seed: int, normalized: float | None, failure: str | None = None,
           scored: bool = True) -> RunRecord:
    score = Score(task="t", metric="m", direction="higher", value=None if failure else 1.0, baseline=0.0,
                  improvement=None, success=False, threshold=0.1, step=2, failure=failure,
                  normalized=normalized)
    return RunRecord(path="/x", run_id=f"{model}{seed}", key=RowKey(task="t", actor="research", model=model), seed=seed, status="finished",
                     tokens=100 * (seed + 1), cost=0.01, score=score if scored else None, anchored=True)


def test_pairing_counts_failures_as_baseline_and_lists_what_is_missing():
    treated = [record("m", 0, 0.9), record("m", 1, None, failure="eval_error"), record("m", 2, 0.4)]
    control = [record("m", 0, 0.2), record("m", 1, 0.3), record("m", 2, None, failure="infrastructure"),
               record("m", 3, 0.1, scored=False)]
    pairs = {p.seed: p for p in pair_runs(treated, control, ["m"], [0, 1, 2, 3])}
    assert pairs[0].difference == pytest.approx(0.7)
    assert pairs[1].with_tools == 0.0 and pairs[1].difference == pytest.approx(-0.3)
    assert pairs[2].difference is None and "without-tools: infrastructure" in pairs[2].missing
    assert pairs[3].difference is None and "with-tools: no run" in pairs[3].missing
    assert "without-tools: not scored" in pairs[3].missing
    (row,) = uplift_rows(list(pairs.values()))
    assert (row.pairs, row.incomplete) == (2, 2)
    assert row.uplift.mean == pytest.approx(0.2)
    assert row.uplift.low == pytest.approx(0.2 - 12.706205 * statistics.stdev([0.7, -0.3]) / math.sqrt(2))


def test_paired_interval_edges():
    assert paired_interval([]) is None
    one = paired_interval([0.5])
    assert (one.mean, one.low, one.high, one.n) == (0.5, None, None, 1)
    same = paired_interval([0.2, 0.2, 0.2])
    assert (same.low, same.high) == (pytest.approx(0.2), pytest.approx(0.2))


@pytest.mark.parametrize("df, t", [(1, 12.706), (20, 2.086), (21, 2.080), (25, 2.060), (30, 2.042), (60, 2.000)])
def test_the_t_quantile_is_exact_beyond_the_old_20_row_table(df, t):
    from environments.scoring.timing import t975
    assert round(t975(df), 3) == t


def test_an_uplift_interval_of_26_pairs_uses_t_at_25_degrees_of_freedom():
    diffs = [0.1 * (i % 5) - 0.15 for i in range(26)]
    got = paired_interval(diffs)
    half = 2.0595 * statistics.stdev(diffs) / math.sqrt(26)  # t(0.975, df=25), not 1.96
    assert (got.low, got.high) == (pytest.approx(got.mean - half, abs=1e-4), pytest.approx(got.mean + half, abs=1e-4))


def test_each_arm_decides_the_tools_whatever_the_actor_config_says():
    from agent.config import ActorConfig
    from agent.uplift import UpliftSpec

    spec = UpliftSpec(task="online-lp", models=["scripted/x"], actor=ActorConfig(method_tools=False))
    assert spec.batch_spec(True).config_for("scripted/x", 0).method_tools is True
    assert spec.batch_spec(False).config_for("scripted/x", 0).method_tools is False
