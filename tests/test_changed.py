"""The short loop's choice of test files (``tests/changed.py``), on a made-up tree of tests."""

from __future__ import annotations

from tests.changed import module_of, select

TESTS = {
    "tests/agent/test_runner.py": "from agent.runner import drive\n",
    "tests/agent/test_runner_budgets.py": "import json\n",
    "tests/agent/test_models.py": "from agent.models import openai_model\n",
    "tests/environments/test_scoring.py": "from environments.scoring.score import make_score\n",
    "tests/environments/test_suite_tasks.py": "TASKS = []\n",
    "tests/environments/test_tasks_digits.py": 'NAME = "digits"\n',
    "tests/sandbox/test_quota.py": "import sandbox.quota as quota\n",
    "tests/tui/test_help.py": "from tests.tui.conftest import SIZE\n",
}


def test_a_module_maps_to_its_name():
    assert module_of("agent/models/openai_model.py") == "agent.models.openai_model"
    assert module_of("environments/__init__.py") == "environments"
    assert module_of("README.md") is None and module_of("docs/x.py") is None


def test_importers_and_the_mirrored_file_are_picked():
    assert select(["agent/runner.py"], TESTS) == ["tests/agent/test_runner.py",
                                                   "tests/agent/test_runner_budgets.py"]
    assert select(["agent/models/openai_model.py"], TESTS) == ["tests/agent/test_models.py"]
    assert select(["sandbox/quota.py"], TESTS) == ["tests/sandbox/test_quota.py"]


def test_a_changed_test_file_and_a_conftest_pick_themselves_and_their_folder():
    assert select(["tests/environments/test_scoring.py"], TESTS) == ["tests/environments/test_scoring.py"]
    assert select(["tests/tui/conftest.py"], TESTS) == ["tests/tui/test_help.py"]


def test_a_task_folder_picks_the_suite_checks_and_the_files_naming_it():
    assert select(["environments/tasks/digits/env/train.py"], TESTS) == [
        "tests/environments/test_suite_tasks.py", "tests/environments/test_tasks_digits.py"]


def test_what_no_test_touches_picks_nothing():
    assert select(["README.md", "environments/scoring_notes.txt"], TESTS) == []
    assert select(["environments/task/anchors.py"], TESTS) == []
