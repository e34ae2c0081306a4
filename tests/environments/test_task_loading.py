from __future__ import annotations

import os
import threading

import pytest

from environments.task.spec import TaskError, load_task
from environments.task.suite import list_tasks, resolve_task
from tests.conftest import write_task


def test_valid_task_loads_with_its_toml(tiny_task):
    task = load_task(tiny_task)
    assert task.name == "tiny"
    assert task.metric == "total" and task.higher_is_better
    assert task.baseline == 6.0 and task.solve == ["train.py"]
    assert task.is_read_only("data.txt") and not task.is_read_only("train.py")
    assert "result.txt" in task.research_problem


def test_folder_without_toml_loads_with_mlagentbench_defaults(tmp_path):
    root = write_task(tmp_path / "mlab", toml="")
    (root / "task.toml").unlink()
    task = load_task(root)
    assert task.success_threshold == pytest.approx(0.10)
    assert task.direction == "higher" and task.baseline is None and task.tools == []
    assert task.solve == ["train.py"]  # MLAgentBench's train.py writes the submission


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        (lambda r: (r / "scripts" / "eval.py").unlink(), "eval.py"),
        (lambda r: (r / "task.toml").write_text("metric = [unclosed"), "task.toml"),
        (lambda r: (r / "task.toml").write_text('direction = "sideways"'), "task.toml"),
        (lambda r: (r / "task.toml").write_text('colour = "blue"'), "task.toml"),
        (lambda r: (r / "scripts" / "read_only_files.txt").write_text("data[.txt\n"), "read_only_files.txt"),
        (lambda r: (r / "scripts" / "read_only_files.txt").write_text("../secret\n"), "read_only_files.txt"),
        (lambda r: (r / "scripts" / "research_problem.txt").unlink(), "research_problem.txt"),
        (lambda r: (r / "task.toml").write_text('solve = ["missing.py"]'), "task.toml"),
    ],
    ids=["no-eval", "bad-toml", "bad-direction", "unknown-field", "bad-glob", "escaping-glob",
         "no-problem", "missing-solve-script"],
)
def test_broken_task_folder_gives_one_clear_error_naming_the_file(tmp_path, breakage, named):
    root = write_task(tmp_path / "broken")
    breakage(root)
    with pytest.raises(TaskError) as info:
        load_task(root)
    assert named in str(info.value)


def test_missing_folder_and_unknown_name(tmp_path):
    with pytest.raises(TaskError, match="no such directory"):
        load_task(tmp_path / "nope")
    with pytest.raises(TaskError, match="neither a suite task"):
        resolve_task("no-such-task-anywhere")


def test_every_suite_task_loads():
    names = {t.name for t in list_tasks()}
    assert {"vectorization", "digits"} <= names


def test_a_retired_key_says_what_replaced_it(tmp_path):
    """``in_process_scoring`` marked tasks scored the old, fakeable way; no task is now, and a
    folder still naming it is told how it scores instead of getting a bare "extra input"."""
    root = write_task(tmp_path / "old")
    (root / "task.toml").write_text("in_process_scoring = true\n")
    with pytest.raises(TaskError) as info:
        load_task(root)
    message = str(info.value)
    assert "task.toml" in message and "in_process_scoring is gone" in message
    assert "scripts/produce.py" in message and "score(outputs)" in message


# A task folder is untrusted input. The host reads its files by path at load (task.toml, the
# research problem, eval.py, the read-only list): a FIFO there hung labcoat (and the TUI's task
# list) forever at the first read; a link out read a host file. Each must be one clear error.
def _fifo(path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


@pytest.mark.parametrize(
    ("plant", "why"),
    [
        (lambda r: _fifo(r / "scripts" / "research_problem.txt"), "not a plain file"),
        (lambda r: _fifo(r / "task.toml"), "not a plain file"),
        (lambda r: _fifo(r / "env" / "data.txt"), "not a plain file"),
        (lambda r: ((r / "scripts" / "research_problem.txt").unlink(),
                    (r / "scripts" / "research_problem.txt").symlink_to("/proc/kmsg")), "out of the task"),
        (lambda r: (r / "env" / "loop").symlink_to("loop"), "cannot be resolved"),
        (lambda r: (r / "env" / "up").symlink_to("../.."), "out of the task"),
    ],
    ids=["fifo-problem", "fifo-toml", "fifo-data", "link-to-kmsg", "link-loop", "link-up"],
)
def test_a_task_folder_holding_a_fifo_or_a_link_out_is_refused_at_load(tmp_path, plant, why):
    root = write_task(tmp_path / "hostile")
    plant(root)
    box: dict = {}

    def load() -> None:
        try:
            load_task(root)
        except TaskError as err:
            box["error"] = str(err)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # release the blocked open so the thread can end
        fd = os.open(root / "scripts" / "research_problem.txt", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("load_task blocked on a FIFO in the task folder")
    assert why in box.get("error", ""), box


def test_links_inside_the_task_folder_still_load(tmp_path):
    root = write_task(tmp_path / "linked")
    (root / "env" / "alias.txt").symlink_to("data.txt")
    assert load_task(root).name == "linked"
