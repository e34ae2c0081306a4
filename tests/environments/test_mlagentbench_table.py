"""MLAgentBench's tasks as labcoat knows them (environments/task/mlagentbench.py): the table, and
recognising a folder as one of them by its content rather than its name (no sandbox here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from environments.scoring.baselines import fixed_fallback
from environments.scoring.evaluate import error_summary
from environments.task.mlagentbench import KAGGLE_ENV, TABLE, recognise
from environments.task.spec import TaskError, load_task
from tests import mlab_folders as mlab

BENCHMARKS = ["vectorization", "llama-inference", "house-price", "spaceship-titanic", "imdb",
              "ogbn-arxiv", "cifar10", "CLRS", "babylm", "fathomnet", "feedback",
              "identify-contrails", "amp-parkinsons-disease-progression-prediction",
              "bibtex-generation", "literature-review-tool"]
# MLAgentBench/plot.py's "special baseline numbers"
PLOT_PY = {"house-price": 1e10, "spaceship-titanic": 0.5, "imdb": 0.5, "ogbn-arxiv": 0.3134,
           "fathomnet": 1e-10, "vectorization": 6.1742}
BUILDERS = {"house-price": mlab.make_house_price, "spaceship-titanic": mlab.make_spaceship_titanic,
            "amp-parkinsons-disease-progression-prediction": mlab.make_amp_parkinsons}


def test_the_table_covers_mlagentbench_with_its_fixed_baselines():
    assert sorted(TABLE) == sorted(BENCHMARKS)
    assert {n: t.baseline for n, t in TABLE.items() if t.baseline is not None} == PLOT_PY
    assert {n for n, t in TABLE.items() if not t.has_eval} == {
        "llama-inference", "bibtex-generation", "literature-review-tool"}
    for name in ("amp-parkinsons-disease-progression-prediction", "CLRS", "fathomnet", "feedback",
                 "identify-contrails"):
        assert TABLE[name].eval_reads_env, name  # their eval.py imports from ../env
    assert TABLE["house-price"].prepare.env == KAGGLE_ENV and TABLE["house-price"].prepare.network
    assert TABLE["imdb"].prepare is None  # MLAgentBench ships no prepare.py for it


@pytest.mark.parametrize("task", sorted(BUILDERS))
def test_a_synthetic_folder_loads_without_task_toml_as_its_task(tmp_path, task):
    spec = load_task(BUILDERS[task](tmp_path / task))
    entry = TABLE[task]
    assert spec.mlagentbench is not None and spec.mlagentbench.task == task
    assert spec.mlagentbench.by == "content"
    assert (spec.metric, spec.direction, spec.solve) == (entry.metric, entry.direction, ["train.py"])
    assert spec.prepare.network and spec.prepare.env == KAGGLE_ENV  # MLAgentBench's Kaggle download
    assert spec.is_read_only("train.csv") or spec.is_read_only("train_clinical_data.csv")


def test_a_renamed_copy_is_recognised_and_a_lookalike_name_is_not(tmp_path):
    copy = mlab.make_house_price(tmp_path / "mlab" / "hp-copy")
    spec = load_task(copy)
    assert spec.name == "hp-copy" and spec.mlagentbench.task == "house-price"
    assert fixed_fallback(spec) == (1e10, TABLE["house-price"].baseline_from)

    lookalike = tmp_path / "house-price"  # named like it, something else inside
    shutil.copytree(copy, lookalike)
    (lookalike / "scripts" / "eval.py").write_text(
        "import os\ndef get_score(folder):\n    return float(open(os.path.join(folder, 'y.txt')).read())\n")
    spec = load_task(lookalike)
    assert spec.mlagentbench.by == "name"
    assert (spec.metric, spec.direction) == ("mae", "lower")  # the name's defaults, as before...
    assert fixed_fallback(spec) is None  # ...but never house-price's baseline
    assert not spec.prepare.network and spec.prepare.env == []  # nor its network and credentials


def test_a_task_toml_overrides_recognition(tmp_path):
    root = mlab.make_house_price(tmp_path / "hp")
    (root / "task.toml").write_text('metric = "mae"\ndirection = "lower"\n')
    spec = load_task(root)
    assert spec.mlagentbench is None and fixed_fallback(spec) is None and not spec.prepare.network


def test_a_folder_matching_two_tasks_is_none_of_them_unless_named_after_one():
    problem = mlab.HOUSE_PROBLEM + mlab.SPACESHIP_PROBLEM
    both = mlab.HOUSE_EVAL + mlab.SPACESHIP_EVAL
    assert recognise("mixed", problem, both) is None
    assert recognise("spaceship-titanic", problem, both).by == "content"
    assert recognise("spaceship-titanic", problem, both).task == "spaceship-titanic"
    # markers survive re-wrapping (whitespace is folded) but not removal
    assert recognise("x", mlab.AMP_PROBLEM.replace(" ", "\n  "), mlab.AMP_EVAL).task.startswith("amp")
    assert recognise("x", mlab.AMP_PROBLEM.replace("SMAPE", "error"), mlab.AMP_EVAL) is None


def _no_eval_folder(root: Path, problem: str) -> Path:
    (root / "env").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "env" / "inference.py").write_text("print('tokens per second: 1.0')\n")
    (root / "scripts" / "research_problem.txt").write_text(problem)
    return root


def test_mlagentbench_tasks_without_eval_py_load_and_others_still_need_one(tmp_path):
    llama = _no_eval_folder(tmp_path / "speed-up", "Make inference.py generate faster with the "
                            "accelerate library, then give the final answer.")
    spec = load_task(llama)
    assert spec.mlagentbench.task == "llama-inference" and not spec.has_eval
    assert spec.solve == []  # nothing makes a submission: a run is the agent's (or a person's)
    other = _no_eval_folder(tmp_path / "llama-inference", "Make it faster.")  # the name is not enough
    with pytest.raises(TaskError, match="eval.py"):
        load_task(other)


def test_error_summary_keeps_what_failed_and_the_exception():
    tail = ("hp: train.py failed (exit 1):\nTraceback (most recent call last):\n  File \"train.py\", "
            "line 16, in <module>\n    print(train_mae)\nNameError: name 'train_mae' is not defined\n")
    assert error_summary(tail) == "hp: train.py failed (exit 1): NameError: name 'train_mae' is not defined"
    assert error_summary(tail.split("\n", 1)[1]) == "NameError: name 'train_mae' is not defined"
    assert error_summary("") == "no output" and len(error_summary("x" * 1000)) == 300


def test_a_recognised_folder_gets_mlagentbench_era_requirements_unless_it_says_its_own(tmp_path):
    """MLAgentBench's spaceship-titanic imports seaborn (train.py) and datasets (eval.py), which
    labcoat does not install: the table declares them. The folder's own scripts/requirements.txt
    (CLRS ships one) wins, here an empty one."""
    folder = mlab.make_spaceship_titanic(tmp_path / "st")
    assert load_task(folder).python_requirements == []
    (folder / "scripts" / "requirements.txt").unlink()
    assert load_task(folder).python_requirements == ["seaborn", "datasets"]
    (folder / "scripts" / "requirements.txt").write_text("pandas>=1\n")
    assert load_task(folder).python_requirements == ["pandas>=1"]
    assert TABLE["vectorization"].requirements == ("numpy<2", "pandas<3")
    assert TABLE["feedback"].requirements == ("scikit-learn<1.6",)
    assert not TABLE["house-price"].requirements  # pandas and scikit-learn: labcoat's own
