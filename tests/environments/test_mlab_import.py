"""``labcoat import mlab``: an MLAgentBench log folder becomes a labcoat run.

The logs and the task folder are built here, in MLAgentBench's layout (``env_log/trace.json``,
``env_log/traces/step_N_files``, ``step_final_files``, ``overall_time.txt``); nothing is read
from an MLAgentBench checkout. The log is untrusted input: the attacks come first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.imports import mlab as mlab_import
from environments.imports.mlab import (
    RECORD,
    MlabImportError,
    find_logs,
    import_log,
    import_logs,
    parse_trace,
)
from environments.record.runs import RunDir
from tests.sandbox.backends import docker_marks

EVAL = '''\
import os

def _column(path):
    with open(path) as f:
        rows = f.read().split()[1:]
    return [float(r.split(",")[1]) for r in rows]

def get_score(submission_folder="../env"):
    predicted = _column(os.path.join(submission_folder, "submission.csv"))
    truth = _column(os.path.join(os.path.dirname(__file__), "answer.csv"))
    return sum(abs(p - t) for p, t in zip(predicted, truth)) / len(truth)
'''
TRAIN = "print('train')\n"
ANSWER = "Id,SalePrice\n1,10\n2,20\n3,30\n"
SECRET = "host secret, never in a run"


def make_task(root: Path, *, disk_mb: int | None = None) -> Path:
    """A small MLAgentBench-shaped task: MAE of submission.csv, lower is better, baseline 10."""
    task = root / "price-task"
    (task / "env").mkdir(parents=True)
    (task / "scripts").mkdir()
    (task / "env" / "train.py").write_text(TRAIN)
    (task / "env" / "train.csv").write_text("Id,x,SalePrice\n1,1,10\n")
    (task / "scripts" / "research_problem.txt").write_text("predict SalePrice")
    (task / "scripts" / "read_only_files.txt").write_text("./train.csv\n")
    (task / "scripts" / "eval.py").write_text(EVAL)
    (task / "scripts" / "answer.csv").write_text(ANSWER)
    limits = f"\n[limits]\ndisk_mb = {disk_mb}\n" if disk_mb else ""
    (task / "task.toml").write_text(f'metric = "mae"\ndirection = "lower"\nbaseline = 10.0\n{limits}')
    return task


def submission(values: list[float]) -> str:
    return "Id,SalePrice\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values, 1))


#: runner.py's arguments with its defaults, in its order (what its ``Namespace`` line prints)
RUNNER_DEFAULTS = {
    "task": "debug", "log_dir": "./logs", "work_dir": "./workspace", "max_steps": 50,
    "max_time": 18000, "device": 0, "python": "python", "interactive": False, "resume": None,
    "resume_step": 0, "agent_type": "ResearchAgent", "llm_name": "claude-v1",
    "fast_llm_name": "claude-v1", "edit_script_llm_name": "claude-v1",
    "edit_script_llm_max_tokens": 4000, "agent_max_steps": 50, "actions_remove_from_prompt": [],
    "actions_add_to_prompt": [], "retrieval": False, "valid_format_entires": None,
    "max_steps_in_context": 3, "max_observation_steps_in_context": 3, "max_retries": 5,
    "langchain_agent": "zero-shot-react-description"}


def runner_log(args: dict) -> str:
    """``LOG_DIR/log`` as multi_run_experiment.sh keeps the runner's output: its
    ``print(args, file=sys.stderr)`` line (argparse's ``Namespace`` repr) among the rest."""
    values = {**RUNNER_DEFAULTS, **args}
    namespace = "Namespace(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"
    return ("Could not load anthropic API key claude_api_key.txt.\n" + namespace + "\n"
            f"Benchmark folder name:  {values['task']}\n=====================================\n"
            "Final message:  Finished due to env.is_final() == True\n")


def make_log(root: Path, steps: list[tuple[str, dict | str, str, dict | None]], *,
             final: dict | None = None, args: dict | None = None, overall: str | None = "12.5",
             error: str | None = None, low_level: int = 0, problem: str = "predict SalePrice") -> Path:
    """An MLAgentBench log folder: ``steps`` are (action, args, observation, files of
    step_N_files or None for no copy); ``final`` the files of step_final_files; ``args`` the
    runner's arguments, in ``LOG_DIR/log`` (MLAgentBench's trace never records them)."""
    env_log = root / "env_log"
    (env_log / "traces").mkdir(parents=True)
    (env_log / "tool_logs").mkdir()
    trace = {"steps": [], "low_level_steps": [], "task_description": problem,
             "action_infos": {"List Files": {"name": "List Files", "description": "",
                                             "usage": {}, "return_value": "",
                                             "function": "list_files", "is_primitive": True}}}
    if args is not None:
        (root / "log").write_text(runner_log(args))
    for i, (name, a, obs, files) in enumerate(steps):
        trace["steps"].append({"action": {"name": name, "args": a}, "observation": obs,
                               "timestamp": 1_700_000_000.0 + i})
        if files is not None:
            write_files(env_log / "traces" / f"step_{i}_files", files)
    for j in range(low_level):
        trace["low_level_steps"].append({"action": {"name": "Read File", "args": {"file_name": "x"}},
                                         "observation": "...", "timestamp": 1_700_000_000.5 + j})
    if final is not None:
        write_files(env_log / "traces" / "step_final_files", final)
    (env_log / "trace.json").write_text(json.dumps(trace, indent=4))
    if overall is not None:
        (env_log / "overall_time.txt").write_text(overall)
    if error is not None:
        (env_log / "error.txt").write_text(error)
    return root


def write_files(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def good_steps(values: list[float]) -> list[tuple[str, dict, str, dict | None]]:
    improved = "import csv\n# fitted\n"
    return [
        ("List Files", {"dir_path": "."}, "backup/\ntrain.csv\ntrain.py\n", None),
        ("Edit Script (AI)", {"script_name": "train.py", "edit_instruction": "fit a model",
                              "save_name": "train.py"}, "The edited file is saved to train.py.",
         {"train.py": improved, "backup/train.py_2023": TRAIN}),
        ("Execute Script", {"script_name": "train.py"}, "The script has been executed.",
         {"train.py": improved, "backup/train.py_2023": TRAIN, "submission.csv": submission(values)}),
        ("Final Answer", {"final_answer": "a random forest"}, "end",
         {"train.py": improved, "backup/train.py_2023": TRAIN, "submission.csv": submission(values)}),
    ]


ARGS = {"task": "house-price", "agent_type": "ResearchAgent", "llm_name": "claude-v1",
        "max_steps": 30, "max_time": 18000}


def do_import(log: Path, runs: Path, task: Path | None = None, **kw):
    return import_log(log, runs, task_ref=str(task) if task else None, **kw)


# ---- an honest log -----------------------------------------------------------------------------

def test_a_log_becomes_a_run_with_its_steps_and_workspaces(tmp_path):
    task = make_task(tmp_path)
    values = [11.0, 19.0, 33.0]
    log = make_log(tmp_path / "log", good_steps(values), final=good_steps(values)[-1][3],
                   args=ARGS, low_level=3)
    out = do_import(log, tmp_path / "runs", task)
    assert out.status == "imported" and out.steps == 4 and out.task == "price-task"
    run = RunDir.open(out.run_dir)
    assert run.meta.actor == "mlab/ResearchAgent" and run.meta.model == "mlab/claude-v1"
    assert run.meta.status == "finished" and run.meta.final_answer == "a random forest"
    assert run.meta.task_source == str(task.resolve()) and run.meta.totals.seconds == 12.5
    assert run.meta.budgets.max_steps == 30
    steps = run.steps()
    assert [s.action for s in steps] == ["List Files", "Edit Script (AI)", "Execute Script", "Final Answer"]
    assert steps[1].args["edit_instruction"] == "fit a model"
    assert steps[0].observation.startswith("backup/") and steps[-1].is_final_answer
    assert steps[0].changed == []  # no copy of step 0: the starting workspace stands
    assert "train.py" in steps[1].changed and "submission.csv" in steps[2].changed
    with_files = tmp_path / "restored"
    run.restore(3, with_files)
    assert (with_files / "submission.csv").read_text() == submission(values)
    assert (with_files / "train.csv").exists()  # read-only: not in MLAgentBench's copy, laid back
    run.restore(1, tmp_path / "r1")
    assert (tmp_path / "r1" / "train.py").read_text() == TRAIN
    record = json.loads((run.path / RECORD).read_text())
    assert record["low_level_steps"] == 3 and record["args"]["llm_name"] == "claude-v1"
    assert not (tmp_path / "runs" / ".importing").exists() or not any((tmp_path / "runs" / ".importing").iterdir())


def test_reimporting_finds_the_run_and_a_changed_log_is_a_new_one(tmp_path):
    task = make_task(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    first = do_import(log, tmp_path / "runs", task)
    again = do_import(log, tmp_path / "runs", task)
    assert again.status == "already" and again.run_id == first.run_id
    assert len([p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]) == 1
    trace = log / "env_log" / "trace.json"
    data = json.loads(trace.read_text())
    data["steps"] = data["steps"][:2]
    trace.write_text(json.dumps(data))
    assert do_import(log, tmp_path / "runs", task).status == "imported"


def test_a_status_says_how_mlagentbench_ended(tmp_path):
    task = make_task(tmp_path)
    steps = good_steps([1, 2, 3])[:3]
    crashed = make_log(tmp_path / "a", steps, args=ARGS, overall=None, error="Traceback...\nKeyError: 'x'\n")
    killed = make_log(tmp_path / "b", steps, args=ARGS, overall=None)
    capped = make_log(tmp_path / "c", steps, args={**ARGS, "max_steps": 3})
    statuses = {p.name: RunDir.open(do_import(p, tmp_path / "runs", task).run_dir).meta
                for p in (crashed, killed, capped)}
    assert statuses["a"].status == "error" and "KeyError" in statuses["a"].status_reason
    assert statuses["b"].status == "interrupted"
    assert statuses["c"].status == "max_steps"


def test_the_task_comes_from_the_flag_or_the_trace(tmp_path, monkeypatch):
    task = make_task(tmp_path)
    unnamed = make_log(tmp_path / "unnamed", good_steps([1, 2, 3]))
    with pytest.raises(MlabImportError, match="--task"):
        do_import(unnamed, tmp_path / "runs")
    named = make_log(tmp_path / "named", good_steps([1, 2, 3]), args={**ARGS, "task": "cifar10_training"})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MlabImportError, match="cifar10_training.*--task"):
        do_import(named, tmp_path / "runs")
    by_path = make_log(tmp_path / "by-path", good_steps([1, 2, 3]), args={**ARGS, "task": str(task)})
    with pytest.raises(MlabImportError, match="not one of labcoat's suite tasks.*--task"):
        do_import(by_path, tmp_path / "runs")  # a trace names a suite task, never a folder
    assert do_import(by_path, tmp_path / "runs", task).task == "price-task"  # the person does


# ---- the log is untrusted ----------------------------------------------------------------------

def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    (out / "secret.txt").write_text(SECRET)
    return out


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_link_in_a_step_copy_is_never_followed(tmp_path):
    task, outside = make_task(tmp_path), _outside(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    step = log / "env_log" / "traces" / "step_1_files"
    os.symlink(outside / "secret.txt", step / "submission.csv")
    os.symlink(outside, step / "data")
    out = do_import(log, tmp_path / "runs", task)
    run = RunDir.open(out.run_dir)
    assert SECRET.encode() not in _all_bytes(run.path)
    run.restore(2, tmp_path / "r")
    assert not (tmp_path / "r" / "data").exists() and not (tmp_path / "r" / "submission.csv").exists()
    assert any("symbolic link" in n for n in run.steps()[1].meta["notes"])


def test_a_step_copy_or_traces_folder_that_is_a_link_is_not_followed(tmp_path):
    task, outside = make_task(tmp_path), _outside(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3])[:2], args=ARGS)
    os.symlink(outside, log / "env_log" / "traces" / "step_0_files")
    out = do_import(log, tmp_path / "runs", task)
    run = RunDir.open(out.run_dir)
    assert SECRET.encode() not in _all_bytes(run.path)
    assert "not followed" in " ".join(run.steps()[0].meta["notes"])
    log2 = make_log(tmp_path / "log2", good_steps([1, 2, 3])[:2], args=ARGS)
    real = log2 / "env_log" / "traces"
    real.rename(log2 / "env_log" / "gone")
    os.symlink(outside, real)
    run2 = RunDir.open(do_import(log2, tmp_path / "runs", task).run_dir)
    assert SECRET.encode() not in _all_bytes(run2.path)


def _in_time(fn, seconds: float = 20.0):
    """``fn()`` in a thread: a FIFO opened for reading would block it forever."""
    box: dict = {}

    def go():
        try:
            box["value"] = fn()
        except Exception as err:  # noqa: BLE001 - handed back to the test
            box["error"] = err

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked (a FIFO was opened)"
    return box


def test_a_fifo_in_a_step_copy_or_as_the_trace_never_blocks(tmp_path):
    task = make_task(tmp_path)
    log = make_log(tmp_path / "logs" / "a", good_steps([1, 2, 3]), args=ARGS)
    os.mkfifo(log / "env_log" / "traces" / "step_2_files" / "pipe")
    fifo_trace = make_log(tmp_path / "logs" / "b", good_steps([1, 2, 3]), args=ARGS)
    (fifo_trace / "env_log" / "trace.json").unlink()
    os.mkfifo(fifo_trace / "env_log" / "trace.json")
    box = _in_time(lambda: list(import_logs(tmp_path / "logs", tmp_path / "runs", task_ref=str(task))))
    outcomes = {Path(o.log).parent.name: o for o in box["value"]}
    assert outcomes["a"].status == "imported"
    assert outcomes["b"].status == "failed" and "trace.json" in outcomes["b"].error
    steps = RunDir.open(outcomes["a"].run_dir).steps()
    assert any("pipe" in n for n in steps[2].meta["notes"])


def test_a_trace_that_links_out_is_refused(tmp_path):
    task, outside = make_task(tmp_path), _outside(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    good = json.loads((log / "env_log" / "trace.json").read_text())
    (outside / "trace.json").write_text(json.dumps(good))
    (log / "env_log" / "trace.json").unlink()
    os.symlink(outside / "trace.json", log / "env_log" / "trace.json")
    with pytest.raises(MlabImportError, match="trace.json"):
        do_import(log, tmp_path / "runs", task)


def test_a_huge_deep_or_malformed_trace_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(mlab_import, "MAX_TRACE_BYTES", 10_000)
    with pytest.raises(MlabImportError, match="larger than 10000 bytes"):
        parse_trace(b"{" + b" " * 20_000 + b"}")
    with pytest.raises(MlabImportError, match="nested deeper"):
        parse_trace(b"[" * 5000 + b"]" * 5000)
    with pytest.raises(MlabImportError, match="not valid JSON"):
        parse_trace(b'{"steps": [')
    with pytest.raises(MlabImportError, match="not MLAgentBench's trace"):
        parse_trace(b"[1, 2]")
    with pytest.raises(MlabImportError, match=r"steps\.0\.action"):
        parse_trace(b'{"steps": [{"observation": "x", "timestamp": 1}]}')
    task = make_task(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    (log / "env_log" / "trace.json").write_bytes(b"x" * 20_000)  # read capped, not whole
    with pytest.raises(MlabImportError, match="larger than"):
        do_import(log, tmp_path / "runs", task)
    assert not [p for p in (tmp_path / "runs").glob("*") if not p.name.startswith(".")]


def test_a_step_copy_past_the_tasks_disk_cap_fails_that_log_only(tmp_path):
    task = make_task(tmp_path, disk_mb=1)
    big = make_log(tmp_path / "logs" / "big", good_steps([1, 2, 3]), args=ARGS)
    (big / "env_log" / "traces" / "step_1_files" / "blob.bin").write_bytes(b"\0" * (2 << 20))
    make_log(tmp_path / "logs" / "small", good_steps([1, 2, 3]), args=ARGS)
    outcomes = {Path(o.log).parent.name: o for o in
                import_logs(tmp_path / "logs", tmp_path / "runs", task_ref=str(task))}
    assert outcomes["big"].status == "failed" and "exceed" in outcomes["big"].error
    assert outcomes["small"].status == "imported"
    runs = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    assert len(runs) == 1  # the failed log left nothing behind
    staging = tmp_path / "runs" / ".importing"
    assert not staging.exists() or not any(staging.iterdir())


def test_dotdot_in_action_arguments_is_recorded_never_acted_on(tmp_path):
    task, outside = make_task(tmp_path), _outside(tmp_path)
    steps = [("Read File", {"file_name": "../../outside/secret.txt"}, "EnvError: cannot read", None),
             ("Write File", {"file_name": "../../outside/planted.txt", "content": "x"}, "ok", None),
             ("Copy File", "not json at all ../..", "The action input for Copy File needs ...", None)]
    log = make_log(tmp_path / "log", steps, args=ARGS)
    run = RunDir.open(do_import(log, tmp_path / "runs", task).run_dir)
    recorded = run.steps()
    assert recorded[0].args == {"file_name": "../../outside/secret.txt"} and recorded[0].error
    assert recorded[2].args == "not json at all ../.." and recorded[2].error
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert SECRET.encode() not in _all_bytes(run.path)


def test_the_walk_for_logs_does_not_follow_links(tmp_path):
    elsewhere = make_log(tmp_path / "elsewhere" / "run1", good_steps([1, 2, 3]))
    logs = tmp_path / "logs"
    make_log(logs / "house-price" / "0001", good_steps([1, 2, 3]))
    os.symlink(elsewhere, logs / "linked")
    found = find_logs(logs)
    assert found == [(logs / "house-price" / "0001" / "env_log").resolve()]


# ---- scored as MLAgentBench's eval scores it, forked, from the command line --------------------

def _mlab_eval(task: Path, folder: Path) -> float:
    """What MLAgentBench's eval does for one log: the task's get_score on step_final_files."""
    spec = importlib.util.spec_from_file_location("mlab_task_eval", task / "scripts" / "eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_score(str(folder))


def test_labcoat_score_over_imported_runs_gives_mlagentbenchs_eval(tmp_path):
    from agent import session

    task = make_task(tmp_path)
    wanted = {"good": [10.5, 20.0, 29.0], "worse": [0.0, 0.0, 0.0]}
    for name, values in wanted.items():
        steps = good_steps(values)
        # the final copy differs from the last step's (a file written after it): eval scores it
        final = {**steps[-1][3], "submission.csv": submission([v + 1 for v in values])}
        make_log(tmp_path / "logs" / name, steps, final=final, args=ARGS)
    outcomes = list(import_logs(tmp_path / "logs", tmp_path / "runs", task_ref=str(task)))
    assert [o.status for o in outcomes] == ["imported", "imported"]
    for o in outcomes:
        expected = _mlab_eval(task, Path(o.log) / "traces" / "step_final_files")
        [score] = session.score(o.run_dir, sandbox="local")
        assert score.value == pytest.approx(expected), (o.log, score)
    good = RunDir.open(next(o.run_dir for o in outcomes if "good" in o.log))
    assert json.loads((good.path / "score.json").read_text())["success"] is True
    from environments.reports.records import load_runs

    rows = load_runs(tmp_path / "runs")  # reported beside labcoat's own runs
    assert {(r.key.actor, r.key.model) for r in rows} == {("mlab/ResearchAgent", "mlab/claude-v1")}


def test_labcoat_score_over_a_folder_of_runs_scores_each_and_reports_a_broken_one(tmp_path):
    """What MLAgentBench's ``eval --log-folder`` gives: every run under the folder scored; one
    that cannot be is reported, the others are still scored, and the exit code says so."""
    from tui.cli.main import app

    task = make_task(tmp_path)
    for name, values in {"a": [10.5, 20.0, 29.0], "b": [0.0, 0.0, 0.0]}.items():
        steps = good_steps(values)
        make_log(tmp_path / "logs" / name, steps, final=steps[-1][3], args=ARGS)
    outcomes = list(import_logs(tmp_path / "logs", tmp_path / "runs", task_ref=str(task)))
    broken = tmp_path / "runs" / "zz-broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    result = CliRunner().invoke(app, ["score", str(tmp_path / "runs"), "--sandbox", "local", "--json"])
    assert result.exit_code == 1, result.output
    rows = {Path(r["run_dir"]).name: r for r in json.loads(result.stdout)}
    assert len(rows) == 3 and "error" in rows["zz-broken"]
    for o in outcomes:
        expected = _mlab_eval(task, Path(o.log) / "traces" / "step_final_files")
        assert rows[Path(o.run_dir).name]["value"] == pytest.approx(expected)
    empty = CliRunner().invoke(app, ["score", str(tmp_path / "logs" / "a" / "env_log")])
    assert empty.exit_code != 0 and "neither a run" in empty.output

def test_an_imported_run_forks_and_is_continued_by_a_named_actor(tmp_path):
    from agent.config import ActorConfig
    from agent.fork import ForkError, fork_config, fork_run
    from agent.human import HumanActor

    task = make_task(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    parent = RunDir.open(do_import(log, tmp_path / "runs", task).run_dir)
    child, _ = fork_run(parent, 2, HumanActor(), config=ActorConfig(kind="human"), sandbox="local")
    assert [s.inherited for s in child.steps()] == [True, True]
    assert (child.workspace / "train.py").read_text() == "import csv\n# fitted\n"
    assert (child.workspace / "train.csv").exists()
    config, _ = fork_config(parent, {"model": "baseline/hparam"})
    assert config.model == "baseline/hparam"
    with pytest.raises(ForkError):
        fork_run(parent, 4, HumanActor(), config=ActorConfig(kind="human"))  # after its Final Answer


def test_labcoat_import_mlab_from_the_command_line(tmp_path):
    from tui.cli.main import app

    task = make_task(tmp_path)
    make_log(tmp_path / "logs" / "a", good_steps([1, 2, 3]), args=ARGS)
    make_log(tmp_path / "logs" / "b", good_steps([1, 2, 3]), args=ARGS)
    (tmp_path / "logs" / "b" / "env_log" / "trace.json").write_text("{not json")
    argv = ["import", "mlab", str(tmp_path / "logs"), "--task", str(task), "--runs-dir",
            str(tmp_path / "runs"), "--sandbox", "local"]
    result = CliRunner().invoke(app, [*argv, "--json"])
    assert result.exit_code == 1, result.output
    rows = {Path(r["log"]).parent.name: r for r in json.loads(result.stdout)}
    assert rows["a"]["status"] == "imported" and rows["b"]["status"] == "failed"
    assert "not valid JSON" in rows["b"]["error"]
    again = CliRunner().invoke(app, argv)
    assert "already imported" in again.output and "Traceback" not in again.output
    missing = CliRunner().invoke(app, ["import", "mlab", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such folder" in missing.output


async def test_an_imported_run_is_browsed_in_the_tui(tmp_path):
    from textual.widgets import TabbedContent

    from tests.tui.conftest import SIZE
    from tui.app import LabcoatApp
    from tui.screens.run import RunScreen
    from tui.widgets.workspace import DiffView

    task = make_task(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    run = RunDir.open(do_import(log, tmp_path / "runs", task).run_dir)
    app = LabcoatApp(runs_dir=run.path.parent, sandbox="local", first_screen=lambda: RunScreen(run))
    async with app.run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.press("g", "l")  # step 2: MLAgentBench's Edit Script (AI)
        await pilot.pause()
        screen.query_one("#side", TabbedContent).active = "tab-diff"
        await pilot.pause()
        assert screen.current == 2 and "+# fitted" in screen.query_one("#diff", DiffView).text


def test_an_env_log_that_is_a_link_is_not_followed(tmp_path):
    task, outside = make_task(tmp_path), _outside(tmp_path)
    real = make_log(outside / "log", good_steps([1, 2, 3]), args=ARGS)
    given = tmp_path / "given"
    given.mkdir()
    os.symlink(real / "env_log", given / "env_log")
    with pytest.raises(MlabImportError, match="trace.json"):
        do_import(given, tmp_path / "runs", task)
    assert find_logs(given) == []


# ---- a log earns no privilege (issue 37, class 4) ----------------------------------------------

CANARY_PREPARE = ("import os\nfrom pathlib import Path\n"
                  "Path('ran.txt').write_text(os.environ.get('LABCOAT_CANARY_KEY', 'none'))\n"
                  "Path('../env/data.csv').write_text('x\\n')\n")


def shipped_task(log: Path) -> Path:
    """A task folder shipped inside a log: its prepare.py a canary asking for a host variable."""
    task = make_task(log)
    (task / "scripts" / "prepare.py").write_text(CANARY_PREPARE)
    with (task / "task.toml").open("a") as f:
        f.write('[prepare]\nenv = ["LABCOAT_CANARY_KEY"]\n')
    return task


@pytest.mark.parametrize("how, sandbox", [
    ("relative", "local"), pytest.param("relative", "docker", marks=docker_marks),
    ("dotted", "local"), ("absolute", "local")])
def test_a_trace_cannot_name_a_task_folder_shipped_in_its_log(tmp_path, monkeypatch, how, sandbox):
    """The attack: the trace names, by a path, a task folder inside the log; importing ran its
    prepare.py and handed it the variable it asked for. Now nothing of the log runs, even for
    a person whose standing allowance names that variable for their own tasks."""
    from tui.cli.main import app

    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LABCOAT_CANARY_KEY", "canary-secret")
    monkeypatch.setenv("LABCOAT_PASS_ENV", "LABCOAT_CANARY_KEY")
    log = tmp_path / "log"
    named = {"relative": "price-task", "dotted": "./price-task",
             "absolute": str(log / "price-task")}[how]
    make_log(log, good_steps([1, 2, 3]), args={**ARGS, "task": named})
    shipped_task(log)
    monkeypatch.chdir(log)
    result = CliRunner().invoke(app, ["import", "mlab", str(log), "--runs-dir", str(tmp_path / "runs"),
                                      "--sandbox", sandbox, "--json"])
    assert result.exit_code == 1, result.output
    [row] = json.loads(result.stdout)
    assert row["status"] == "failed" and "--task" in row["error"], row
    assert not list((tmp_path / "home").rglob("ran.txt"))  # its prepare.py never ran
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*price*"))


def test_a_trace_naming_a_suite_task_gets_the_suite_task_not_a_folder_beside_it(tmp_path, monkeypatch):
    from environments.task.suite import TASKS_DIR

    problem = (TASKS_DIR / "vectorization" / "scripts" / "research_problem.txt").read_text()
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args={**ARGS, "task": "vectorization"},
                   problem=problem)
    shipped_task(log).rename(log / "vectorization")  # ./vectorization, where the import runs
    monkeypatch.chdir(log)
    out = do_import(log, tmp_path / "runs")
    assert out.status == "imported", out
    assert RunDir.open(out.run_dir).meta.task_source == str((TASKS_DIR / "vectorization").resolve())


def test_a_task_folder_inside_the_log_is_refused_even_when_named(tmp_path):
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    inside = shipped_task(log)
    link = tmp_path / "looks-outside"
    link.symlink_to(inside)
    for given in (inside, link):
        [out] = list(import_logs(log, tmp_path / "runs", task_ref=str(given)))
        assert out.status == "failed" and "inside the log" in out.error, out
        with pytest.raises(MlabImportError, match="inside the log"):
            do_import(log / "env_log", tmp_path / "runs", given)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
