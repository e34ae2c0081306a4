"""What labcoat knows of MLAgentBench's own tasks, so their folders need no ``task.toml``.

MLAgentBench keeps a task's facts in its code, not in its folder: ``scripts/eval.py`` returns
a number (its direction is known to MLAgentBench's runner), some baselines are fixed in
``MLAgentBench/plot.py``, and ``scripts/prepare.py`` downloads with Kaggle's credentials.
:data:`TABLE` states them for MLAgentBench's 15 ``benchmarks/`` folders.

A folder is recognised **by content**: every marker of a task (distinctive names, not prose,
that MLAgentBench's own ``scripts/research_problem.txt`` and ``scripts/eval.py`` contain:
file, column and function names) must occur in the folder's texts (whitespace folded), so a
renamed copy (``~/mlab/hp-copy``) is recognised. Markers were checked against MLAgentBench's
files (``git show HEAD:MLAgentBench/benchmarks/<task>/scripts/...``); a folder that matches
two tasks is recognised as the one it is named after, else as none. A folder only **named**
like one (``house-price`` with other content) gets the metric and direction (the older
behaviour) and nothing else: no fixed baseline, no ``[prepare]`` declaration (network and
credentials), no loading without ``eval.py``. ``task.toml`` overrides everything.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

KAGGLE_ENV = ["KAGGLE_USERNAME", "KAGGLE_KEY"]
# MLAgentBench/plot.py, get_all_runs_eval (lines ~245-273): "special baseline numbers"
PLOT_PY = "MLAgentBench/plot.py (special baseline numbers)"
NO_EVAL = "MLAgentBench has no eval.py for this task: not scored"


class PrepareNeeds(BaseModel):
    """What MLAgentBench's ``scripts/prepare.py`` reaches: ``task.toml``'s ``[prepare]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    network: bool = False
    env: list[str] = Field(default_factory=list)


class Markers(BaseModel):
    """Strings that must all occur in ``research_problem.txt`` and in ``eval.py``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    problem: tuple[str, ...] = ()
    eval: tuple[str, ...] = ()


class MlabTask(BaseModel):
    """One MLAgentBench task: its metric, direction, fixed baseline and what its scripts need."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    metric: str
    direction: Literal["higher", "lower"]
    baseline: float | None = None  # MLAgentBench's fixed baseline, where it states one
    baseline_from: str = ""  # where MLAgentBench states it
    has_eval: bool = True
    submission: tuple[str, ...] = ()  # what eval.py reads in the scored folder
    eval_reads_env: tuple[str, ...] = ()  # modules or files of ../env (the pristine env/) it uses
    eval_needs: str = ""  # what else scoring needs (a download at scoring time, a package)
    prepare: PrepareNeeds | None = None  # None: MLAgentBench ships no scripts/prepare.py
    # what its train.py / eval.py import beyond labcoat's own install, and pins where today's
    # versions break its code (MLAgentBench's requirements.txt names no versions for them)
    requirements: tuple[str, ...] = ()
    # what its eval.py returns when it cannot evaluate (vectorization's ``except: return 1e10``)
    failure_values: tuple[float, ...] = ()
    # its metric is a runtime the submission measured and wrote itself (not timed by the scorer)
    self_timed: bool = False
    markers: Markers

    def toml_defaults(self) -> dict:
        """What a recognised folder without ``task.toml`` gets, as ``task.toml`` would say it."""
        data: dict = {"metric": self.metric, "direction": self.direction}
        if self.prepare is not None and (self.prepare.network or self.prepare.env):
            data["prepare"] = self.prepare.model_dump()
        if self.requirements:
            data["python"] = {"requirements": list(self.requirements)}
        return data


def _kaggle() -> PrepareNeeds:
    return PrepareNeeds(network=True, env=KAGGLE_ENV)


_CSV = ("submission.csv",)
_GENERIC = ("evaluation_details.txt",)  # fathomnet, feedback, identify-contrails, amp share prose

TABLE: dict[str, MlabTask] = {t.name: t for t in [
    MlabTask(name="vectorization", metric="runtime_seconds", direction="lower",
             baseline=6.1742, baseline_from=PLOT_PY, submission=_CSV,
             # its starter fails under numpy 2 (a ragged array); pandas 3 needs numpy 2
             requirements=("numpy<2", "pandas<3"),
             failure_values=(1e10,), self_timed=True,
             markers=Markers(problem=("vectoris", "submission.csv"),
                             eval=("submission.columns[0]",))),
    MlabTask(name="llama-inference", metric="tokens_per_second", direction="higher",
             has_eval=False, markers=Markers(problem=("inference.py", "accelerate"))),
    MlabTask(name="house-price", metric="mae", direction="lower",
             baseline=1e10, baseline_from=PLOT_PY, submission=_CSV, prepare=_kaggle(),
             markers=Markers(problem=("data_description.txt",),
                             eval=("SalePrice", "answer.csv"))),
    MlabTask(name="spaceship-titanic", metric="accuracy", direction="higher",
             baseline=0.5, baseline_from=PLOT_PY, submission=_CSV, prepare=_kaggle(),
             requirements=("seaborn", "datasets"),  # train.py: seaborn; eval.py: datasets
             markers=Markers(problem=("task_descriptor.txt",),
                             eval=("Transported", "answer.csv"))),
    MlabTask(name="imdb", metric="accuracy", direction="higher",
             baseline=0.5, baseline_from=PLOT_PY, submission=_CSV,
             eval_needs="network at scoring: datasets.load_dataset('imdb')",
             requirements=("datasets",),
             markers=Markers(problem=("IMDb", "DistilBERT"), eval=("load_dataset", "imdb"))),
    MlabTask(name="ogbn-arxiv", metric="accuracy", direction="higher",
             baseline=0.3134, baseline_from=PLOT_PY, submission=_CSV,
             prepare=PrepareNeeds(network=True),
             eval_needs="ogb and torch_geometric; the dataset under networks/ of the scored folder",
             requirements=("ogb", "torch-geometric", "tqdm"),
             markers=Markers(problem=("train.py",),
                             eval=("ogbn-arxiv", "PygNodePropPredDataset"))),
    MlabTask(name="cifar10", metric="accuracy", direction="higher", submission=_CSV,
             prepare=PrepareNeeds(network=True),
             eval_needs="torchvision; CIFAR10 under data/ of the scored folder (else a download)",
             markers=Markers(problem=("train.py", "submission.csv"), eval=("CIFAR10",))),
    MlabTask(name="CLRS", metric="accuracy", direction="higher",
             submission=("checkpoints/best.pkl", "checkpoints/spec_list.pkl",
                         "checkpoints/model_params.pkl"),
             eval_reads_env=("baselines.py (BaselineModel) and the modules it imports",),
             eval_needs="clrs, jax, tensorflow, absl; the CLRS30 dataset (downloaded if absent)",
             markers=Markers(problem=("floyd_warshall", "CLRS"),
                             eval=("BaselineModel", "spec_list.pkl"))),
    MlabTask(name="babylm", metric="perplexity", direction="lower",
             submission=("output/", "babyLM_for_hf.py"), prepare=PrepareNeeds(network=True),
             eval_needs="transformers, datasets, evaluate; babylm_data/ beside the scored folder",
             requirements=("transformers", "datasets", "evaluate", "accelerate"),
             markers=Markers(problem=("babyLM",), eval=("babyLM-10M",))),
    MlabTask(name="fathomnet", metric="map_at_20", direction="higher",
             baseline=1e-10, baseline_from=PLOT_PY, submission=_CSV, prepare=_kaggle(),
             eval_reads_env=("metric.py (score)",),
             requirements=("keras", "tensorflow-cpu", "tqdm"),
             markers=Markers(problem=_GENERIC, eval=("from metric import score", "osd"))),
    MlabTask(name="feedback", metric="mcrmse", direction="lower", submission=_CSV,
             prepare=_kaggle(),
             eval_reads_env=("train.py (compute_metrics_for_regression, DIMENSIONS)",),
             requirements=("scikit-learn<1.6",),  # its eval passes squared=False, gone in 1.6
             markers=Markers(problem=_GENERIC,
                             eval=("compute_metrics_for_regression", "DIMENSIONS"))),
    MlabTask(name="identify-contrails", metric="dice", direction="higher", submission=_CSV,
             prepare=_kaggle(), eval_reads_env=("encode.py (rle_decode)",),
             # under numpy 2 its encode.py writes run lengths as "np.int64(1)", which its eval
             # cannot read back; pandas 3 needs numpy 2
             requirements=("numpy<2", "pandas<3", "tqdm"),
             markers=Markers(problem=_GENERIC, eval=("rle_decode", "human_pixel_masks"))),
    MlabTask(name="amp-parkinsons-disease-progression-prediction", metric="smape",
             direction="lower", submission=_CSV, prepare=_kaggle(),
             eval_reads_env=("train.py (smapep1)",),
             markers=Markers(problem=("SMAPE",), eval=("smapep1", "answer.csv"))),
    MlabTask(name="bibtex-generation", metric="score", direction="higher", has_eval=False,
             markers=Markers(problem=("bibtex_generation.py", "google scholar"))),
    MlabTask(name="literature-review-tool", metric="score", direction="higher", has_eval=False,
             markers=Markers(problem=("literature_review.py", "arxiv"))),
]}

# the older name-only table's view, for callers that have only a folder name
DEFAULTS: dict[str, dict[str, str]] = {
    name: {"metric": t.metric, "direction": t.direction} for name, t in TABLE.items()
}


class Recognition(BaseModel):
    """Which MLAgentBench task a folder is, and how labcoat knows (what it may apply)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    by: Literal["content", "name"]

    @property
    def entry(self) -> MlabTask:
        return TABLE[self.task]

    def toml_defaults(self) -> dict:
        """Recognised by content: the whole declaration; by name only: metric and direction."""
        if self.by == "content":
            return self.entry.toml_defaults()
        return defaults_for(self.task)


def _folded(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def matches(entry: MlabTask, problem: str, eval_source: str | None) -> bool:
    """Every marker of ``entry`` in the texts; a task with an eval.py needs one to match."""
    problem, source = _folded(problem), _folded(eval_source or "")
    if entry.has_eval != (eval_source is not None):
        return False
    return (all(m in problem for m in entry.markers.problem)
            and all(m in source for m in entry.markers.eval))


def recognise(folder_name: str, problem: str, eval_source: str | None) -> Recognition | None:
    """The task a folder is, from its research problem and ``eval.py`` (None: no eval.py);
    by content when exactly one task matches (or several and the folder is named after one),
    else by name when it is named like one, else None."""
    found = [name for name, entry in TABLE.items() if matches(entry, problem, eval_source)]
    if folder_name in found or len(found) == 1:
        return Recognition(task=folder_name if folder_name in found else found[0], by="content")
    if folder_name in TABLE:
        return Recognition(task=folder_name, by="name")
    return None


def recognise_folder(root: Path, name: str | None = None,
                     read_text=lambda p: p.read_text(errors="replace")) -> Recognition | None:
    """:func:`recognise` on a task folder called ``name`` (default: its folder name;
    ``read_text``: the caller's capped reader)."""
    scripts = Path(root) / "scripts"
    problem_path, eval_path = scripts / "research_problem.txt", scripts / "eval.py"
    if not problem_path.is_file():
        return None
    source = read_text(eval_path) if eval_path.is_file() else None
    return recognise(name or Path(root).name, read_text(problem_path), source)


def defaults_for(folder_name: str) -> dict[str, str]:
    """Metric and direction for a folder named like one of MLAgentBench's (empty if unknown)."""
    return dict(DEFAULTS.get(folder_name, {}))


#: beyond these, a value of a recognised task's eval.py is a failure sentinel, never a metric
SENTINEL = 1e10


def failure_value(found: Recognition | None, value: float) -> str | None:
    """Why ``value`` from the ``eval.py`` of a folder recognised as ``found`` (a task folder's
    ``TaskSpec.mlagentbench``: one without ``task.toml``) is MLAgentBench's way of
    saying the evaluation failed (vectorization's ``1e10`` for a missing ``submission.csv``;
    ``±1e10`` and beyond for any of its tasks), or None when it is a score. Such a value is
    a failure, never averaged into a report (``-383622254670.7%`` was)."""
    if found is None:
        return None
    if value in found.entry.failure_values or abs(value) >= SENTINEL:
        return (f"MLAgentBench's eval.py returned {value:g}, its value for an evaluation that "
                "failed (e.g. no readable submission.csv): a failure, not a score")
    return None


def not_comparable(found: Recognition | None) -> str | None:
    """Why the scores of a folder recognised as ``found`` cannot be a success, or None.

    MLAgentBench's vectorization scores the runtime the submission measured and wrote itself
    (``submission.csv``), on whatever machine and load it ran, against a baseline measured
    elsewhere (MLAgentBench's fixed 6.1742 s, or labcoat's measurement of the unchanged
    folder): its own do-nothing agent scored +47% "success". Decided: such a score is shown
    with its improvement but is never a success. A folder with a ``task.toml`` is recognised
    as none (its declaration is labcoat's: ``timed = true`` times baseline and submission
    paired, with an interval, as the suite's vectorization does)."""
    if found is None or not found.entry.self_timed:
        return None
    return ("not comparable, so never a success: the runtime is the one the submission measured "
            "and wrote itself, against a baseline timed on another occasion; labcoat's suite "
            "task vectorization times both, paired, on this machine")

