"""Forking a run at step K (agent/fork.py, `labcoat run --fork`) and comparing the family
(environments/family.py, `labcoat report --family`): real runs on a tiny task in the local
sandbox, driven by the replay actor so that a continuation is known exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.fork import ForkError, fork_config, fork_run, prefix_totals
from environments.record.runs import RunDir, Step
from environments.reports.family import diff_workspaces, load_family
from tui.cli import app


def _write(name: str, content: str) -> dict:
    return {"action": "Write File", "args": {"file_name": name, "content": content}}


def _solve(value: int) -> dict:
    return _write("train.py", f"open('result.txt', 'w').write('{value}')\nprint('wrote {value}')\n")


RUN = {"action": "Execute Script", "args": {"script_name": "train.py"}}
ACTIONS = [
    {"action": "List Files", "args": {"dir_path": "."}},
    _solve(10),
    RUN,
    _write("notes.md", "tried 10\n"),
    _solve(42),
    RUN,
    {"action": "Final Answer", "args": {"final_answer": "42"}},
]


def _jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def cli(*args: str) -> dict:
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def cli_error(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 2, res.output
    return " ".join(res.output.split())


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def original(tiny_task, tmp_path) -> RunDir:
    """A finished replay run of ACTIONS, scored (the tiny task's baseline is fixed: 6)."""
    actions = _jsonl(tmp_path / "actions.jsonl", ACTIONS)
    out = cli("run", str(tiny_task), "--actions", str(actions), "--sandbox", "local",
              "--runs-dir", str(tmp_path / "runs"))
    assert out["status"] == "finished" and out["score"]["value"] == 42.0
    return RunDir.open(out["run_dir"])


def test_a_fork_continued_with_the_same_actions_reproduces_the_original(original):
    out = cli("run", "--fork", str(original.path), "--at", "4", "--no-score")
    fork = RunDir.open(out["run_dir"])
    assert out["status"] == "finished" and out["final_answer"] == "42"
    assert tree(fork.workspace) == tree(original.workspace)  # byte for byte
    last = f"{len(ACTIONS):05d}"
    assert {p: e.sha for p, e in fork.snapshots.load(last).files.items()} == \
        {p: e.sha for p, e in original.snapshots.load(last).files.items()}
    steps = fork.steps()
    assert [s.inherited for s in steps] == [True] * 4 + [False] * 3
    assert [(s.action, s.args) for s in steps] == [(s.action, s.args) for s in original.steps()]
    # recorded as a child: in its run.json and in the parent's list of forks
    assert fork.meta.fork.parent == original.meta.run_id and fork.meta.fork.step == 4
    assert fork.meta.fork.inherited.steps == 4 and fork.meta.totals.steps == 7
    assert [r.run_id for r in original.forks()] == [fork.meta.run_id]
    assert fork.path.parent == original.path.parent  # beside its parent by default
    assert fork.meta.config.kind == "replay" and fork.meta.sandbox == original.meta.sandbox


def test_a_fork_with_another_continuation_keeps_the_prefix_and_diverges(original, tmp_path):
    cont = _jsonl(tmp_path / "cont.jsonl", [_solve(60), RUN, {"action": "Final Answer",
                                                              "args": {"final_answer": "60"}}])
    out = cli("run", "--fork", str(original.path), "--at", "3", "--actions", str(cont), "--no-score")
    fork = RunDir.open(out["run_dir"])
    assert (fork.workspace / "result.txt").read_text() == "60"
    assert not (fork.workspace / "notes.md").exists()  # step 4 of the original is not in the prefix
    assert [s.action for s in fork.steps()] == ["List Files", "Write File", "Execute Script",
                                                "Write File", "Execute Script", "Final Answer"]
    kept = [json.loads(line) for line in (fork.path / "actions.jsonl").read_text().splitlines()]
    assert kept[:3] == [{"action": a["action"], "args": a["args"]} for a in ACTIONS[:3]]
    assert len(kept) == 6
    d = diff_workspaces(original, fork)
    assert {f.path: f.change for f in d.files} == {"notes.md": "removed", "result.txt": "changed",
                                                   "train.py": "changed"}
    train = next(f for f in d.files if f.path == "train.py")
    assert "-open('result.txt', 'w').write('42')" in train.diff
    assert "+open('result.txt', 'w').write('60')" in train.diff


def test_a_fork_at_0_starts_from_the_tasks_workspace(original, tiny_task, tmp_path):
    cont = _jsonl(tmp_path / "cont.jsonl", [RUN])
    out = cli("run", "--fork", str(original.path), "--at", "0", "--actions", str(cont), "--no-score")
    fork = RunDir.open(out["run_dir"])
    assert [s.inherited for s in fork.steps()] == [False]
    assert (fork.workspace / "result.txt").read_text() == "6"  # the task's own train.py ran
    assert (fork.workspace / "train.py").read_bytes() == (tiny_task / "env" / "train.py").read_bytes()


def test_budgets_count_the_inherited_steps_and_a_fork_resumes_like_any_run(original):
    out = cli("run", "--fork", str(original.path), "--at", "3", "--max-steps", "5", "--no-score")
    assert out["status"] == "max_steps" and out["totals"]["steps"] == 5
    fork = RunDir.open(out["run_dir"])
    assert [s.inherited for s in fork.steps()] == [True] * 3 + [False] * 2
    out = cli("run", "--resume", str(fork.path), "--max-steps", "20", "--no-score")
    assert out["status"] == "finished" and out["totals"]["steps"] == 7
    assert tree(fork.workspace) == tree(original.workspace)


def test_forking_a_live_run_leaves_its_trace_alone(original):
    """A run still being written ends in a line not yet whole; a fork reads, never trims it."""
    with original.trace_path.open("a") as f:
        f.write('{"index": 8, "actor": "replay", "action": "List')
    size = original.trace_path.stat().st_size
    out = cli("run", "--fork", str(original.path), "--at", "2", "--max-steps", "3", "--no-score")
    assert out["totals"]["steps"] == 3
    assert original.trace_path.stat().st_size == size


@pytest.mark.parametrize("args, message", [
    (["--at", "8"], "--at 8: {id} has steps 0..7"),
    (["--at", "-1"], "--at -1: {id} has steps 0..7"),
    (["--at", "7"], "step 7 of {id} is its Final Answer: nothing can follow it; fork at step 6"),
])
def test_fork_points_that_cannot_continue_are_clear_errors(original, args, message):
    before = sorted(p.name for p in original.path.parent.iterdir())
    out = cli_error("run", "--fork", str(original.path), *args)
    assert message.format(id=original.meta.run_id) in out
    assert sorted(p.name for p in original.path.parent.iterdir()) == before  # nothing written


def test_a_run_without_snapshots_cannot_be_forked(original):
    (original.path / "snapshots" / "manifests" / "00003.json").unlink()
    out = cli_error("run", "--fork", str(original.path), "--at", "5")
    assert f"{original.meta.run_id} has no workspace snapshot for step 3" in out


def test_a_missing_snapshot_object_leaves_no_half_made_fork(original):
    objects = original.path / "snapshots" / "objects"
    for obj in objects.rglob("*"):
        if obj.is_file():
            obj.unlink()
    before = sorted(p.name for p in original.path.parent.iterdir())
    with pytest.raises(ForkError, match="the stored copy of .* is missing"):
        from agent.replay import ReplayActor

        fork_run(original, 4, ReplayActor([]), config=fork_config(original, {})[0])
    assert sorted(p.name for p in original.path.parent.iterdir()) == before


@pytest.mark.parametrize("args, message", [
    (["--at", "2"], "--fork RUN_DIR and --at K go together"),
    (["--fork", "x", "some-task", "--at", "1"], "give no TASK and no --resume with it"),
])
def test_fork_flags_used_wrongly_are_clear_errors(args, message):
    assert message in cli_error("run", *args)


def test_a_persons_run_is_forked_only_with_a_named_actor(original):
    original.meta.config = original.meta.config.model_copy(update={"kind": "human"})
    original.meta.actor = "human"
    with pytest.raises(ForkError, match="was a person's run: name the actor"):
        fork_config(original, {})
    config, _ = fork_config(original, {"model": "baseline/hparam"})
    assert config.kind is None and config.model == "baseline/hparam" and config.actions is None


def test_naming_another_model_drops_the_parents_model_choices_but_keeps_its_settings(original):
    original.meta.config = original.meta.config.model_copy(update={
        "kind": "research", "model": "anthropic/x", "fast_model": "anthropic/y", "actions": None,
        "observation_cap": 500, "seed": 3})
    config, budgets = fork_config(original, {"model": "openai/z", "max_steps": 20})
    assert (config.model, config.fast_model, config.kind) == ("openai/z", None, None)
    assert (config.observation_cap, config.seed) == (500, 3)
    assert budgets.max_steps == 20 and budgets.max_time == original.meta.budgets.max_time


def test_prefix_totals_count_the_calls_made_for_the_inherited_steps():
    steps = [Step(index=i, actor="agent", action="List Files", observation="", seconds=0.5) for i in (1, 2)]
    calls = [{"step": 1, "usage": {"input": 100, "output": 10, "cached": 50}, "cost": 0.01, "seconds": 1.0,
              "retries": 1},
             {"step": 2, "usage": {"input": 200, "output": 20}, "cost": 0.02, "seconds": 2.0},
             {"step": 3, "usage": {"input": 999, "output": 999}, "cost": 9.0, "seconds": 9.0}]
    t = prefix_totals(steps, calls)
    assert (t.steps, t.llm_calls, t.tokens_in, t.tokens_out, t.tokens_cached) == (2, 2, 300, 30, 50)
    assert (t.cost, t.seconds, t.retries) == (0.03, 4.0, 1)


def test_the_family_report_compares_the_continuations(original, tmp_path):
    cont = _jsonl(tmp_path / "cont.jsonl", [_solve(60), RUN, {"action": "Final Answer",
                                                              "args": {"final_answer": "60"}}])
    same = RunDir.open(cli("run", "--fork", str(original.path), "--at", "4")["run_dir"])
    other = RunDir.open(cli("run", "--fork", str(original.path), "--at", "3", "--actions", str(cont),
                            "--runs-dir", str(tmp_path / "elsewhere"))["run_dir"])
    deeper = RunDir.open(cli("run", "--fork", str(other.path), "--at", "4", "--actions", str(cont),
                             "--no-score")["run_dir"])
    cli("score", str(other.path), "--all-steps")
    assert other.path.parent == tmp_path / "elsewhere" and deeper.path.parent == other.path.parent

    fam = load_family(deeper.path)  # any member finds the whole family
    assert [(m.run_id, m.parent, m.at, m.depth) for m in fam.members] == [
        (original.meta.run_id, None, 0, 0), (same.meta.run_id, original.meta.run_id, 4, 1),
        (other.meta.run_id, original.meta.run_id, 3, 1), (deeper.meta.run_id, other.meta.run_id, 4, 2)]
    by_id = {m.run_id: m for m in fam.members}
    assert by_id[same.meta.run_id].score.value == 42.0 and by_id[other.meta.run_id].score.value == 60.0
    assert by_id[other.meta.run_id].curve == {4: 10.0, 5: 60.0, 6: 60.0}  # own steps only (after 3)
    assert (by_id[other.meta.run_id].steps, by_id[other.meta.run_id].own_steps) == (6, 3)
    assert by_id[deeper.meta.run_id].score is None

    out = cli("report", "--family", str(original.path), "--diff")
    assert [m["run_id"] for m in out["members"]] == [m.run_id for m in fam.members]
    diffs = {(d["a"], d["b"]): {f["path"] for f in d["files"]} for d in out["diffs"]}
    assert diffs[(original.meta.run_id, same.meta.run_id)] == set()
    assert diffs[(original.meta.run_id, other.meta.run_id)] == {"notes.md", "result.txt", "train.py"}

    res = CliRunner().invoke(app, ["report", "--family", str(other.path), "--markdown"])
    assert res.exit_code == 0, res.output
    assert f"| └ {other.meta.run_id} | " in res.output and "| 5 |" in res.output
    assert "60 (+900.0%) ✓" in res.output


def test_family_flags_used_wrongly_are_clear_errors(original, tmp_path):
    assert "give it alone" in cli_error("report", str(tmp_path), "--family", str(original.path))
    assert "--diff goes with --family" in cli_error("report", str(tmp_path), "--diff")
    assert "not a run directory" in cli_error("report", "--family", str(tmp_path))


# --- the Undo history a fork inherits (environments/record/backups.py's log, replayed up to K) ----------

UNDO = {"action": "Undo Edit Script", "args": {"script_name": "train.py"}}
FINAL = {"action": "Final Answer", "args": {"final_answer": "done"}}


def _version(n: int) -> dict:
    return _write("train.py", f"print('v{n}')\n")


def _parent(tiny_task, tmp_path, actions: list[dict]) -> RunDir:
    out = cli("run", str(tiny_task), "--actions", str(_jsonl(tmp_path / "parent.jsonl", actions)),
              "--sandbox", "local", "--runs-dir", str(tmp_path / "runs"), "--no-score")
    assert out["status"] == "finished", out
    return RunDir.open(out["run_dir"])


def _fork(parent: RunDir, at: int, tmp_path, continuation: list[dict]) -> RunDir:
    cont = _jsonl(tmp_path / f"cont-{at}.jsonl", continuation)
    out = cli("run", "--fork", str(parent.path), "--at", str(at), "--actions", str(cont), "--no-score")
    return RunDir.open(out["run_dir"])


def _stack_steps(run: RunDir) -> dict[str, list[int | None]]:
    from environments.record.backups import Backups

    return {rel: [e.step for e in stack] for rel, stack in Backups(run.backups_dir).stacks.items()}


def test_undo_in_a_fork_goes_back_as_the_parent_could_right_after_the_fork_step(tiny_task, tmp_path):
    parent = _parent(tiny_task, tmp_path, [_version(1), _version(2), _write("notes.md", "n\n"),
                                           _version(3), FINAL])
    before = tree(parent.backups_dir)
    assert _stack_steps(parent) == {"train.py": [1, 2, 4], "notes.md": [3]}
    fork = _fork(parent, 3, tmp_path, [UNDO, UNDO, UNDO, {"action": "Undo Edit Script",
                                                           "args": {"script_name": "notes.md"}}, FINAL])
    own = fork.steps()[3:]
    assert "print('v1')" in own[0].observation and not own[0].error  # the version before step 2
    original = (tiny_task / "env" / "train.py").read_text()
    assert original.strip() in own[1].observation  # the version before step 1: the task's
    assert own[2].error and "no earlier version" in own[2].observation  # step 4's edit is not there
    assert not own[3].error and not (fork.workspace / "notes.md").exists()
    assert (fork.workspace / "train.py").read_text() == original
    record = json.loads((fork.backups_dir / "inherited.json").read_text())
    assert record["files"] == {"train.py": 2, "notes.md": 1} and record["not_inherited"] == {}
    # the parent's history, byte for byte, after the fork was made and after its Undos
    assert tree(parent.backups_dir) == before
    assert _stack_steps(parent) == {"train.py": [1, 2, 4], "notes.md": [3]}


def test_a_fork_inherits_the_stack_with_undos_up_to_k_and_not_those_after(tiny_task, tmp_path):
    """Undo at step <= K pops the fork's stack too; one after K does not, and the version it
    popped (whose file the parent keeps) is still the fork's to undo to."""
    parent = _parent(tiny_task, tmp_path, [_version(1), _version(2), UNDO, _version(3), UNDO,
                                           _version(4), FINAL])
    assert _stack_steps(parent) == {"train.py": [1, 6]}
    before = tree(parent.backups_dir)
    fork = _fork(parent, 4, tmp_path, [UNDO, UNDO, UNDO, FINAL])
    own = fork.steps()[4:]
    assert "print('v1')" in own[0].observation  # what step 4 overwrote (Undo at 5 is not the fork's)
    assert (tiny_task / "env" / "train.py").read_text().strip() in own[1].observation
    assert own[2].error
    early = _fork(parent, 3, tmp_path, [UNDO, UNDO, FINAL])  # after step 3's Undo: one left
    assert [s.error for s in early.steps()[3:5]] == [False, True]
    assert tree(parent.backups_dir) == before


def test_a_fork_of_a_fork_inherits_the_history_its_parent_inherited(tiny_task, tmp_path):
    parent = _parent(tiny_task, tmp_path, [_version(1), _version(2), UNDO, _version(3), FINAL])
    child = _fork(parent, 4, tmp_path, [_version(9), FINAL])
    assert _stack_steps(child) == {"train.py": [1, 4, 5]}
    grandchild = _fork(child, 2, tmp_path, [UNDO, UNDO, FINAL])  # before step 3's Undo
    own = grandchild.steps()[2:]
    assert "print('v1')" in own[0].observation and not own[1].error


def _make_legacy(run: RunDir) -> None:
    """The run's backups as labcoat kept them before step records: index.json, no log."""
    from environments.record.backups import Backups

    stacks = Backups(run.backups_dir).stacks
    (run.backups_dir / "index.json").write_text(json.dumps({r: [e.entry for e in s] for r, s in stacks.items()}))
    (run.backups_dir / "log.jsonl").unlink()


def test_an_older_run_without_step_records_forks_without_inherited_history(tiny_task, tmp_path):
    parent = _parent(tiny_task, tmp_path, [_version(1), _version(2), _version(3), FINAL])
    _make_legacy(parent)
    before = tree(parent.backups_dir)
    fork = _fork(parent, 2, tmp_path, [UNDO, _version(7), UNDO, FINAL])
    own = fork.steps()[2:]
    assert own[0].error and "no earlier version" in own[0].observation
    assert not own[2].error and "print('v2')" in own[2].observation  # its own edit undoes
    record = json.loads((fork.backups_dir / "inherited.json").read_text())
    assert record["files"] == {} and "before steps were recorded" in record["note"]
    assert "older run" in record["not_inherited"]["train.py"]
    assert tree(parent.backups_dir) == before


def _top_entry(run: RunDir, rel: str = "train.py") -> Path:
    from environments.record.backups import Backups

    return run.backups_dir / Backups(run.backups_dir).stacks[rel][-1].entry


def _plant_symlink(run: RunDir, secret: Path) -> None:
    entry = _top_entry(run)
    entry.unlink()
    entry.symlink_to(secret)


def _plant_fifo(run: RunDir, secret: Path) -> None:
    import os

    entry = _top_entry(run)
    entry.unlink()
    os.mkfifo(entry)


def _plant_escape(run: RunDir, secret: Path) -> None:
    """Log entries naming files outside backups/ (a relative escape, an absolute path)."""
    log = run.backups_dir / "log.jsonl"
    name = _top_entry(run).name
    rel = Path("..", "..", "..", *secret.relative_to(secret.anchor).parts).as_posix()
    lines = log.read_text().replace(f'"{name}"', json.dumps(rel), 1)
    log.write_text(lines + json.dumps({"op": "push", "path": "train.py", "entry": str(secret), "step": 1}) + "\n")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("plant", [_plant_symlink, _plant_fifo, _plant_escape])
def test_a_hostile_parent_backup_is_never_followed_read_or_waited_on(tiny_task, tmp_path, plant):
    from agent.replay import ReplayActor
    from environments.record.backups import Backups

    parent = _parent(tiny_task, tmp_path, [_version(1), _version(2), _write("notes.md", "n\n"), FINAL])
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST SECRET\n")
    plant(parent, secret)
    before = {p.name: (p.lstat().st_mode, p.read_bytes() if p.is_file() and not p.is_symlink() else None)
              for p in parent.backups_dir.iterdir()}
    fork, _ = fork_run(parent, 3, ReplayActor([]), config=fork_config(parent, {})[0])
    record = json.loads((fork.backups_dir / "inherited.json").read_text())
    assert "train.py" in record["not_inherited"] and record["files"] == {"notes.md": 1}
    assert all(b"HOST SECRET" not in p.read_bytes() for p in fork.backups_dir.iterdir())
    assert not any(p.is_symlink() for p in fork.backups_dir.iterdir())
    assert list(Backups(fork.backups_dir).stacks) == ["notes.md"]
    assert secret.read_text() == "HOST SECRET\n"
    assert {p.name: (p.lstat().st_mode, p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in parent.backups_dir.iterdir()} == before


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge"])
def test_a_parent_log_that_is_not_a_plain_file_gives_no_history_and_a_working_fork(tiny_task, tmp_path, kind):
    import os

    parent = _parent(tiny_task, tmp_path, [_version(1), _version(2), FINAL])
    log = parent.backups_dir / "log.jsonl"
    if kind == "huge":
        with log.open("ab") as f:
            f.truncate(65 << 20)  # sparse: larger than a fork reads
    else:
        fake = tmp_path / "fake-log.jsonl"
        fake.write_bytes(log.read_bytes())
        log.unlink()
        log.symlink_to(fake) if kind == "symlink" else os.mkfifo(log)
    fork = _fork(parent, 1, tmp_path, [UNDO, _version(5), UNDO, FINAL])
    own = fork.steps()[1:]
    assert own[0].error and not own[2].error and "print('v1')" in own[2].observation
    record = json.loads((fork.backups_dir / "inherited.json").read_text())
    assert record["files"] == {} and "log" in record["note"]
