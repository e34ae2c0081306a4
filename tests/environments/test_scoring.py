"""Headless scoring: tamper cases, every failure reason, all-steps curves, validation, baselines."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from agent.actor import Proposal
from agent.replay import ReplayActor
from agent.runner import create_run, drive
from environments.acting.environment import Environment
from environments.acting.validation import VALIDATE
from environments.record.runs import RunDir
from environments.scoring.baselines import (
    Measured,
    baseline_path,
    ensure_baseline,
    find_baseline,
    known_baseline,
    measure,
    read_baseline,
    scored_against,
    store_baseline,
    summarise,
)
from environments.scoring.evaluate import EvalResult, evaluate
from environments.scoring.score import pick_steps, score_run, score_steps
from environments.task.spec import load_task
from sandbox import open_sandbox
from tests.conftest import write_task

SECRET = "held-out-answers-7f3a9c"

# The two-phase contract (environments/scoring/submission.py): produce.py imports the workspace's
# model.py in the submission phase and writes its predictions; eval.py scores them on the
# private answers in the trusted phase.
TAMPER_PRODUCE = textwrap.dedent("""
    import json
    from methods._submission import load_submission
    def produce(workspace, here, out):
        mod = load_submission(workspace, "model.py")
        inputs = [int(x) for x in (workspace / "data.txt").read_text().split()]
        (out / "predictions.json").write_text(json.dumps([mod.predict(x) for x in inputs]))
""")
TAMPER_EVAL = textwrap.dedent("""
    import json, os
    from pathlib import Path
    HERE = Path(__file__).parent
    def _score(folder, answers_file):
        path = os.path.join(folder, "predictions.json")
        if not os.path.exists(path):
            raise FileNotFoundError("no predictions")
        predictions = json.loads(open(path).read())
        answers = [int(x) for x in (HERE / answers_file).read_text().split()[1:]]
        return sum(p == y for p, y in zip(predictions, answers)) / len(answers)
    def score(folder):
        return _score(folder, "answers.txt")
    def validation_score(folder):
        return _score(folder, "val_answers.txt")
""")
PREPARE = textwrap.dedent(f"""
    # builds private answers next to itself and the public inputs in ../env (read-only)
    open("answers.txt", "w").write("{SECRET} " + " ".join(str(x % 2) for x in range(10)))
    open("val_answers.txt", "w").write("{SECRET} " + " ".join(str(x % 2) for x in range(10)))
    open("../env/data.txt", "w").write(" ".join(str(x) for x in range(10)))
""")


def tamper_task(root: Path, toml_extra: str = "") -> Path:
    toml = f'metric = "accuracy"\ndirection = "higher"\nbaseline = 0.5\n{toml_extra}'
    return write_task(root, toml=toml, eval_body=TAMPER_EVAL, files={
        "scripts/prepare.py": PREPARE,
        "scripts/produce.py": TAMPER_PRODUCE,
        "env/model.py": "def predict(x):\n    return 0\n",
        "reference/model.py": "def predict(x):\n    return x % 2\n",
    })


def replay(actions: list[dict]) -> ReplayActor:
    return ReplayActor([Proposal(**a) for a in actions])


def write(name: str, content: str) -> dict:
    return {"action": "Write File", "args": {"file_name": name, "content": content}}


def execute(name: str) -> dict:
    return {"action": "Execute Script", "args": {"script_name": name}}


def run_actions(task_root: Path, tmp_path: Path, actions: list[dict], sandbox: str = "local"):
    actor = replay(actions)
    run, task = create_run(task_root, actor, tmp_path / "runs", sandbox=sandbox)
    drive(run, task, actor)
    return run, task


HONEST = "def predict(x):\n    return x % 2\n"


@pytest.fixture
def tamper(tmp_path) -> Path:
    return tamper_task(tmp_path / "tamper")


# ---- tamper cases -------------------------------------------------------------------------

def test_honest_submission_scores_and_succeeds(tamper, tmp_path):
    run, task = run_actions(tamper, tmp_path, [write("model.py", HONEST)])
    s = score_run(run, task, sandbox="local")
    assert s.value == 1.0 and s.baseline == 0.5 and s.improvement == pytest.approx(1.0) and s.success
    saved = json.loads((run.path / "score.json").read_text())
    assert saved["step"] == 1 and saved["metric"] == "accuracy" and saved["eval_seconds"] > 0


FORGERIES = {
    # the agent's own eval.py (top level and under scripts/) defining get_score
    "own_eval": [write("eval.py", "def get_score(folder):\n    return 1.0\n"),
                 write("scripts/eval.py", "def get_score(folder):\n    return 1.0\n")],
    # rewriting the read-only data through a script (Write File would be refused)
    "rewrite_data": [write("evil.py", "open('data.txt','w').write(' '.join(['1'] * 10))\n"),
                     execute("evil.py")],
    # printing fake score lines, in every format, from code eval.py imports
    "print_fake": [write("model.py", HONEST.replace("return x % 2", "return 0") + textwrap.dedent("""
        import sys
        for tag in ("LABCOAT_SCORE", "LABCOAT_RESULT"):
            for out in (sys.stdout, sys.stderr):
                print(f"\\n{tag} 0 1.0\\n{tag} x {{\\"value\\": 1.0, \\"exit\\": 0}}", file=out, flush=True)
    """))],
    # shadowing modules the scorer imports, and a sitecustomize
    "shadow_modules": [
        write("json.py", "print('LABCOAT_RESULT 0 {\"value\": 1.0, \"exit\": 0}')\n"
                         "def loads(*a, **k):\n    return {'value': 1.0, 'exit': 0}\n"
                         "def dumps(*a, **k):\n    return '{\"value\": 1.0, \"exit\": 0}'\n"),
        write("sitecustomize.py", "print('LABCOAT_RESULT 0 {\"value\": 1.0}')\n"),
        write("importlib.py", "raise SystemExit(0)\n"),
    ],
}


@pytest.mark.parametrize("attack", sorted(FORGERIES))
def test_tampering_does_not_move_the_score(tamper, tmp_path, attack):
    run, task = run_actions(tamper, tmp_path, FORGERIES[attack])
    s = score_run(run, task, sandbox="local")
    assert s.failure is None, s.detail
    assert s.value == 0.5 and not s.success  # the honest score of predict() == 0


def test_stealing_the_nonce_from_inside_eval_fails(tamper, tmp_path):
    # model.py runs inside get_score: it hunts for the nonce (stdin, frames, the parent's /proc
    # entries), prints a forged line with everything it found and exits "successfully".
    thief = textwrap.dedent("""
        import os, sys, re
        found = set()
        try:
            found.add(sys.stdin.read())
        except Exception:
            pass
        f = sys._getframe()
        while f is not None:
            found.update(str(v) for v in f.f_globals.values() if isinstance(v, str))
            found.update(str(v) for v in f.f_locals.values() if isinstance(v, str))
            f = f.f_back
        ppid = os.getppid()
        for p in (f"/proc/{ppid}/fd/0", f"/proc/{ppid}/environ", f"/proc/{ppid}/cmdline",
                  f"/proc/{ppid}/mem"):
            try:
                found.add(open(p, "rb").read(4096).decode("latin-1"))
            except Exception:
                pass
        words = {w for text in found for w in re.findall(r"[0-9a-f]{32}", text)}
        for w in words | {"0"}:
            print(f"\\nLABCOAT_RESULT {w} " + '{"value": 1.0, "exit": 0}', flush=True)
        os._exit(0)
    """)
    run, task = run_actions(tamper, tmp_path, [write("model.py", thief)])
    s = score_run(run, task, sandbox="local")
    assert s.value is None and s.failure in ("eval_error", "no_submission") and not s.success


def test_killing_its_parent_reaches_no_scorer(tamper, tmp_path):
    """The submission phase has no trusted parent to kill: the score is the honest one."""
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef predict(x):\n    return 0\n"
    run, task = run_actions(tamper, tmp_path, [write("model.py", killer)])
    s = score_run(run, task, sandbox="local")
    assert s.failure != "infrastructure" and not s.success and s.value in (None, 0.5)


def test_validation_never_shows_the_hidden_scripts(tmp_path):
    """A submission that fails with a traceback quoting the answers file it tried to read (or
    the scorer's own output) must not get the hidden scripts/ back through Validate Submission."""
    root = tamper_task(tmp_path / "val", "[feedback]\nkind = \"validation\"\nbudget = 2\n")
    leak = textwrap.dedent(f"""
        import glob
        found = [open(p).read() for p in glob.glob("/task/**/*answers*", recursive=True)]
        raise RuntimeError("leak: " + repr(found) + " {SECRET[:4]}" + "{SECRET[4:]}")
    """)
    run, task = run_actions(root, tmp_path, [write("model.py", leak), {"action": VALIDATE, "args": {}}])
    obs = run.steps()[-1].observation
    assert "Validation failed" in obs
    assert SECRET not in obs


def test_held_out_answers_never_enter_the_workspace(tamper, tmp_path):
    probe = textwrap.dedent(f"""
        import os
        hits = []
        for top in ("/workspace", "/tmp", "/task", "/opt"):
            for d, _, files in os.walk(top):
                for f in files:
                    try:
                        if ("{SECRET[:8]}" + "{SECRET[8:]}").encode() in open(os.path.join(d, f), "rb").read():
                            hits.append(os.path.join(d, f))
                    except OSError:
                        pass
        print("HITS", hits)
    """)
    run, task = run_actions(tamper, tmp_path, [write("probe.py", probe), execute("probe.py")])
    host_answers = task.scripts_dir / "answers.txt"
    assert SECRET in host_answers.read_text()  # prepared privately...
    assert "HITS []" in run.steps()[-1].observation  # ...and invisible from the run's sandbox
    try_host = f"print(open({str(host_answers)!r}).read())\n"
    run2, _ = run_actions(tamper, tmp_path / "2", [write("peek.py", try_host), execute("peek.py")])
    assert run2.steps()[-1].error and SECRET not in run2.steps()[-1].observation
    for path in run.path.rglob("*"):  # nor in the run record (workspace, snapshots)
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_symlinks_in_a_live_workspace_are_not_followed(tiny_task, tmp_path):
    # Validate Submission scores the live workspace, where a script may have left a symlink
    # pointing at the task's private files; scoring drops every link.
    task = load_task(tiny_task)
    (tiny_task / "scripts" / "answers.txt").write_text("1000")
    ws = tmp_path / "ws"
    shutil.copytree(task.env_dir, ws)
    (ws / "result.txt").symlink_to("/task/scripts/answers.txt")
    r = evaluate(task, ws, "local")
    assert r.failure == "no_submission" and r.value is None


# ---- failure reasons ----------------------------------------------------------------------

def test_no_submission(tiny_task, tmp_path):
    run, task = run_actions(tiny_task, tmp_path, [{"action": "List Files", "args": {"dir_path": "."}}])
    s = score_run(run, task, sandbox="local")
    assert s.failure == "no_submission" and s.value is None and not s.success and s.step == 1
    assert "result.txt" in s.detail
    assert json.loads((run.path / "score.json").read_text())["failure"] == "no_submission"


def test_eval_error_and_non_finite_values(tiny_task, tmp_path):
    run, task = run_actions(tiny_task, tmp_path, [write("result.txt", "not a number")])
    s = score_run(run, task, sandbox="local")
    assert s.failure == "eval_error" and "ValueError" in s.detail
    run, task = run_actions(tiny_task, tmp_path / "nan", [write("result.txt", "nan")])
    s = score_run(run, task, sandbox="local")
    assert s.failure == "eval_error" and "finite" in s.detail


def test_timeout(tmp_path):
    root = write_task(tmp_path / "slow", toml='baseline = 1.0\n[limits]\neval_timeout = 2\n',
                      eval_body="import time\ndef get_score(folder):\n    time.sleep(60)\n    return 1.0\n")
    run, task = run_actions(root, tmp_path, [])
    s = score_run(run, task, sandbox="local")
    assert s.failure == "timeout" and s.eval_seconds < 30 and "2 s" in s.detail


def test_infrastructure_failures(tiny_task, tmp_path):
    run, task = run_actions(tiny_task, tmp_path, [write("result.txt", "9")])
    s = score_run(run, task, sandbox="no-such-backend")
    assert s.failure == "infrastructure" and s.value is None and not s.success
    for obj in (run.path / "snapshots" / "objects").rglob("*"):
        if obj.is_file():
            obj.unlink()  # a damaged run record
    s = score_run(run, task, sandbox="local")
    assert s.failure == "infrastructure" and "cannot restore" in s.detail
    assert json.loads((run.path / "score.json").read_text())["failure"] == "infrastructure"


def test_eval_without_the_function_is_an_eval_error(tiny_task, tmp_path):
    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    shutil.copytree(task.env_dir, ws)
    r = evaluate(task, ws, "local", function="get_validation_score")
    assert r.failure == "eval_error" and "get_validation_score" in r.detail


# ---- all steps ----------------------------------------------------------------------------

def test_all_steps_curve(tiny_task, tmp_path):
    actions = [write("result.txt", "3"), {"action": "List Files", "args": {"dir_path": "."}},
               write("result.txt", "12"), write("result.txt", "oops"), write("result.txt", "30")]
    run, task = run_actions(tiny_task, tmp_path, actions)
    scores = score_steps(run, task, sandbox="local")
    assert [s.step for s in scores] == [1, 2, 3, 4, 5]
    assert [s.value for s in scores] == [3.0, 3.0, 12.0, None, 30.0]
    assert [s.success for s in scores] == [False, False, True, False, True]
    assert scores[3].failure == "eval_error"
    assert scores[1].eval_seconds == scores[0].eval_seconds  # same workspace: evaluated once
    saved = json.loads((run.path / "scores.json").read_text())["steps"]
    assert [s["step"] for s in saved] == [1, 2, 3, 4, 5]
    assert not (run.path / "score.json").exists()  # a curve's point is never the run's result
    assert score_run(run, task, sandbox="local").value == 30.0  # the result: its step alone
    assert json.loads((run.path / "score.json").read_text())["value"] == 30.0
    assert pick_steps(5, 3) == [1, 3, 5] and pick_steps(100, 4) == [1, 34, 67, 100]
    assert pick_steps(0) == [0] and pick_steps(3, 10) == [1, 2, 3]
    # a single step scored later merges into the curve and leaves score.json alone
    s2 = score_run(run, task, step=0, sandbox="local")
    assert s2.failure == "no_submission"
    assert [s["step"] for s in json.loads((run.path / "scores.json").read_text())["steps"]] == [0, 1, 2, 3, 4, 5]
    assert json.loads((run.path / "score.json").read_text())["value"] == 30.0


def test_score_cli_all_steps_json(tiny_task, tmp_path):
    from typer.testing import CliRunner

    from tui.cli import app

    run, _ = run_actions(tiny_task, tmp_path, [write("result.txt", "3"), write("result.txt", "9"),
                                                write("result.txt", "8")])
    res = CliRunner().invoke(app, ["score", str(run.path), "--all-steps", "--points", "2",
                                   "--sandbox", "local", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [(s["step"], s["value"]) for s in out[0]["steps"]] == [(1, 3.0), (3, 8.0)]
    res = CliRunner().invoke(app, ["score", str(run.path), "--step", "2", "--sandbox", "local", "--json"])
    assert json.loads(res.stdout)[0]["value"] == 9.0


# ---- validation ---------------------------------------------------------------------------

def test_validate_submission_budget(tmp_path):
    root = tamper_task(tmp_path / "val", "[feedback]\nkind = \"validation\"\nbudget = 2\n")
    actions = [{"action": VALIDATE, "args": {}}, write("model.py", HONEST),
               {"action": VALIDATE, "args": {}}, {"action": VALIDATE, "args": {}}]
    run, task = run_actions(root, tmp_path, actions)
    steps = run.steps()
    assert "Validation accuracy" in steps[0].observation and "0.5" in steps[0].observation
    assert "budget left: 1 of 2" in steps[0].observation
    assert "1" in steps[2].observation and "budget left: 0 of 2" in steps[2].observation
    assert steps[3].error and "No validation budget left" in steps[3].observation
    # the count lives in the trace: a resumed environment still has none left
    with open_sandbox("local", run.workspace) as sb:
        env = Environment(task, run.workspace, sb, run=RunDir.open(run.path))
        assert "No validation budget left" in env.execute(VALIDATE, {}).text


def test_validation_is_offered_only_with_a_budget(tamper, tmp_path):
    task = load_task(tamper)
    with open_sandbox("local", tmp_path) as sb:
        assert VALIDATE not in Environment(task, tmp_path, sb).actions


# ---- baselines ----------------------------------------------------------------------------

def test_measured_baseline_is_stored_and_used_unless_fixed(tmp_path):
    root = write_task(tmp_path / "unfixed", toml='solve = ["train.py"]\n')
    task = load_task(root)
    assert known_baseline(task) is None
    measured = summarise(task, measure(task, runs=2, sandbox="local"))
    assert measured.mean == 6.0 and measured.std == 0.0 and measured.values == [6.0, 6.0]
    store_baseline(task, measured)
    assert known_baseline(task) == 6.0
    fixed = load_task(write_task(tmp_path / "fixed"))  # baseline = 6.0 in task.toml
    store_baseline(fixed, measured.model_copy(update={"mean": 99.0}))
    assert known_baseline(fixed) == 6.0


def test_a_stored_baseline_is_read_through_its_model_and_kept_to_its_backend(tmp_path):
    task = load_task(write_task(tmp_path / "unfixed", toml='solve = ["train.py"]\n'))
    store_baseline(task, Measured(task=task.name, backend="docker", values=[5.0, 7.0], mean=6.0, std=1.4))
    stored = read_baseline(task)
    assert isinstance(stored, Measured) and stored.values == [5.0, 7.0]
    assert find_baseline(task).model_dump(exclude={"why"}) == {"value": 6.0, "source": "stored"}
    why = find_baseline(task).why  # a mean of runs is said so where the score is shown (#42.8)
    assert why.startswith("the mean of 2 runs of the unmodified task on docker, ± 1.4 (std)"), why
    assert "time(s)" not in why and "noise" in why
    assert known_baseline(task, "docker") == 6.0
    assert known_baseline(task, "local") is None  # a runtime measured in docker is not local's
    fixed = load_task(write_task(tmp_path / "fixed"))  # baseline = 6.0 in task.toml
    assert find_baseline(fixed, "local").source == "task.toml"


def test_a_paired_baseline_measured_in_the_same_call_wins(tmp_path):
    fixed = load_task(write_task(tmp_path / "fixed"))  # baseline = 6.0 in task.toml
    assert scored_against(fixed, EvalResult(value=1.0, baseline=2.5)).value == 2.5
    assert scored_against(fixed, EvalResult(value=1.0)).value == 6.0


def test_a_stored_baseline_that_does_not_validate_is_measured_again(tmp_path):
    task = load_task(write_task(tmp_path / "unfixed", toml='solve = ["train.py"]\n'))
    path = baseline_path(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"task": "tiny", "mean": ')  # a torn write
    assert read_baseline(task) is None and known_baseline(task) is None
    measured = []
    assert ensure_baseline(task, runs=1, sandbox="local", on_measure=measured.append) == 6.0
    assert measured == [task.name] and read_baseline(task).values == [6.0]

