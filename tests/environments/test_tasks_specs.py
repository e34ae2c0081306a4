"""What each MLAgentBench-style suite task declares in its ``task.toml``, as one table.

The per-task files (``test_tasks_<name>.py``) test what is particular to a task's data and eval;
the declarations every task has (metric, direction, what the actor's solve step runs, which
inputs are read-only, whether the baseline is recorded) are rows here, checked by one test.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from tests import task_checks as th


class Declared(NamedTuple):
    metric: str
    direction: str
    solve: list[str]
    read_only: tuple[str, ...] = ()
    recorded_baseline: bool = True  # False: a runtime, measured on the machine that scores
    problem_mentions: str = ""


TRAIN = ["train.py"]
EVAL_RUNS_THE_CODE: list[str] = []

DECLARED: dict[str, Declared] = {
    "clrs-sorting": Declared("pointer_accuracy", "higher", TRAIN),
    "digits": Declared("accuracy", "higher", TRAIN, ("train.csv", "test.csv")),
    "house-price": Declared("mae", "lower", TRAIN, ("train.csv", "test.csv")),
    "imdb": Declared("accuracy", "higher", TRAIN),
    "llama-inference": Declared("tokens_per_second", "higher", EVAL_RUNS_THE_CODE,
                                recorded_baseline=False),
    "ogbn-arxiv": Declared("accuracy", "higher", TRAIN, ("graph.npz",)),
    "parkinsons": Declared("smape", "lower", TRAIN),
    "spaceship-titanic": Declared("accuracy", "higher", TRAIN),
    "vectorization": Declared("forward_seconds", "lower", EVAL_RUNS_THE_CODE,
                              recorded_baseline=False, problem_mentions="Conv2DLayer"),
}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_task_declares_its_metric_and_solve_step(name):
    spec, want = th.task_spec(name), DECLARED[name]
    assert spec.kind == "classic"
    assert (spec.metric, spec.direction, spec.solve) == (want.metric, want.direction, want.solve)
    for rel in want.read_only:
        assert spec.is_read_only(rel), f"{name}: {rel} should be read-only"
    assert (spec.baseline is not None) == want.recorded_baseline
    assert want.problem_mentions in spec.research_problem
