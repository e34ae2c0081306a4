"""The task folder contract, loaded into a pydantic :class:`TaskSpec`.

A task folder follows MLAgentBench's ``benchmarks/<task>/`` layout (``env/``,
``scripts/research_problem.txt``, ``scripts/read_only_files.txt``, optional
``scripts/prepare.py``, ``scripts/eval.py`` with ``get_score(submission_folder) -> float``) plus
labcoat's optional ``task.toml`` and ``reference/``. Loading validates everything up front so a
broken folder fails once, naming the file, instead of half-way through a run. A folder without
``task.toml`` that is one of MLAgentBench's own tasks (recognised by content,
:mod:`environments.task.mlagentbench`) gets that task's declaration instead, and may lack
``eval.py`` where MLAgentBench's does (it is then never scored).
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from environments.task.mlagentbench import Recognition, recognise_folder
from environments.task.splits import (
    LEGACY_SEARCH,
    SPLITS,
    SplitName,
    SplitToml,
    declared,
    function_for,
)
from environments.task.tree import FolderError, check_within, tree
from environments.untrusted.bounded import LimitError, read_capped
from sandbox.pyenv import requirement_line, requirement_lines

DEFAULT_THRESHOLD = 0.10
MAX_TOML_BYTES = 1 << 20  # task.toml, research_problem.txt, read_only_files.txt: read capped
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class TaskError(ValueError):
    """A task folder that cannot be used; the message names the offending file."""


class TaskLimits(BaseModel):
    """Per-task resource limits, applied by the sandbox and by the runner's budgets."""

    model_config = ConfigDict(extra="forbid")

    exec_timeout: float = Field(600.0, gt=0, description="seconds one Execute Script may run")
    eval_timeout: float = Field(300.0, gt=0, description="seconds eval.py may run when scoring")
    memory_mb: int = Field(4096, ge=64)
    cpus: float = Field(2.0, gt=0)
    pids: int = Field(256, ge=8)
    output_bytes: int = Field(1_000_000, ge=1024, description="stdout+stderr kept per command")
    max_steps: int = Field(50, ge=1)
    max_time: float = Field(4 * 3600.0, gt=0, description="seconds of wall clock for a run")
    disk_mb: int = Field(1024, ge=1, description="MB of files a run may add to its workspace "
                         "(apparent sizes, so sparse files count whole); past it a step is not snapshotted")
    max_files: int = Field(200_000, ge=16, description="files and folders a run may add to its "
                           "workspace; past it (or disk_mb) a write fails with ENOSPC")


class HParam(BaseModel):
    """A knob the no-LLM baseline agent (``agent/baseline.py``) may search over: a module-level
    ``name = value`` of ``file`` (a number or a string), or, with ``pattern``, whatever text the
    pattern's first group (else its whole match) finds in ``file`` (a tuple's element, a keyword,
    a block of code). A task declares them where its scripts have no plain number to tune, so the
    default agent still makes a real attempt. A string value is written as is with ``pattern``
    (code), as a string literal without it (an enum such as ``MODE = "sum"``)."""

    model_config = ConfigDict(extra="forbid")

    file: str
    name: str
    values: list[float | int | str] = Field(default_factory=list)
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern, re.M)
            except re.error as err:
                raise ValueError(f"pattern {pattern!r} is no regular expression: {err}") from None
        return pattern


class MeasureToml(BaseModel):
    """``[measure]``: how the baseline agent compares two versions where the task's scripts
    print no number it would find itself: the number ``pattern``'s first group finds (the last
    match) in the output of ``script`` (default: the starting script), better as ``direction``
    says (default: the task's)."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    script: str | None = None
    direction: Literal["higher", "lower"] | None = None

    @field_validator("pattern")
    @classmethod
    def _one_group(cls, pattern: str) -> str:
        try:
            groups = re.compile(pattern).groups
        except re.error as err:
            raise ValueError(f"pattern {pattern!r} is no regular expression: {err}") from None
        if groups < 1:
            raise ValueError(f"pattern {pattern!r} needs a group around the number")
        return pattern


class FeedbackToml(BaseModel):
    """``[feedback]``: the one test signal an actor may get before its Final Answer.

    Declared, not implied, because what an actor was shown is part of what its score means:
    ``kind = "none"`` (the default) offers nothing; ``kind = "validation"`` offers Validate
    Submission ``budget`` times per run (``environments/acting/validation.py`` enforces it)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["none", "validation"] = "none"
    budget: int = Field(0, ge=0, le=1000, description="Validate Submission calls per run")

    @model_validator(mode="after")
    def _budget_matches_kind(self) -> FeedbackToml:
        if self.kind == "validation" and self.budget < 1:
            raise ValueError('kind = "validation" needs budget >= 1')
        if self.kind == "none" and self.budget:
            raise ValueError('kind = "none" takes no budget')
        return self


class OracleToml(BaseModel):
    """``[oracle]``: an interactive submission (``environments/scoring/submission.py``): ``produce.py``
    may ask ``eval.py``'s oracle at most ``max_requests`` questions, each message at most
    ``max_message_mb``; the host relays and checks every one."""

    model_config = ConfigDict(extra="forbid")

    max_requests: int = Field(ge=1, le=10_000)
    max_message_mb: float = Field(4.0, gt=0, le=256)

    @property
    def max_bytes(self) -> int:
        return int(self.max_message_mb * (1 << 20))


class PrepareToml(BaseModel):
    """``[prepare]``: what ``scripts/prepare.py`` may reach besides its own copy of the folder.

    A task folder is untrusted code (it comes from the internet), so its prepare.py runs in
    the sandbox (``environments/task/prepare.py``) with nothing of the host: no network and no
    environment unless declared here (MLAgentBench's prepare scripts download their data, with
    Kaggle's credentials). Only prepare.py gets these: an actor's commands never do."""

    model_config = ConfigDict(extra="forbid")

    network: bool = Field(False, strict=True,
                          description="prepare.py reaches the network (the host's)")
    env: list[str] = Field(default_factory=list, description="names of the person's environment "
                           "variables prepare.py gets (credentials included, on purpose)")

    @field_validator("env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not ENV_NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"not environment variable names: {bad}")
        return names


class PythonToml(BaseModel):
    """``[python]``: packages the task's code needs at versions other than labcoat's own
    (MLAgentBench's tasks were written for numpy 1, scikit-learn's ``squared=False``).

    ``requirements`` and the lines of ``requirements_file`` (a file of the task folder) are
    plain PEP 508 specifiers (:func:`sandbox.pyenv.requirement_line`): a pip option, a URL or a
    path would let the folder point pip anywhere. The sandbox builds the environment once per
    requirements and caches it (``sandbox/pyenv.py``); commands, eval.py and prepare.py use it."""

    model_config = ConfigDict(extra="forbid")

    requirements: list[str] = Field(default_factory=list)
    requirements_file: str | None = Field(None, description="e.g. scripts/requirements.txt")

    @field_validator("requirements")
    @classmethod
    def _specifiers(cls, lines: list[str]) -> list[str]:
        return [requirement_line(line) for line in lines]

    @field_validator("requirements_file")
    @classmethod
    def _inside(cls, rel: str | None) -> str | None:
        if rel is not None and (rel.startswith("/") or ".." in Path(rel).parts):
            raise ValueError(f"{rel!r} must be a path inside the task folder")
        return rel


# keys that task.toml no longer takes, and what replaced them
_GONE = {
    "validation_budget": 'is declared as [feedback] kind = "validation", budget = N',
    "in_process_scoring": "is gone: every task that runs submitted code scores in two phases, "
    "scripts/produce.py (the submission, in its own sandbox) and eval.py's score(outputs) "
    "(see docs/adding-a-method.md)",
}


class TaskToml(BaseModel):
    """The schema of ``task.toml``; every field has a default so the file is optional."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    kind: Literal["classic", "method"] = "classic"
    summary: str = ""
    metric: str = "score"
    direction: Literal["higher", "lower"] = "higher"
    baseline: float | None = Field(None, description="fixed baseline; else measured and stored")
    baseline_std: float | None = None
    success_threshold: float = Field(DEFAULT_THRESHOLD, ge=0)
    solve: list[str] = Field(
        default_factory=list,
        description="scripts that turn a workspace into a submission (run to measure the "
        "baseline and the reference; an agent must run them itself)",
    )
    tools: list[str] = Field(default_factory=list, description="method tools offered")
    feedback: FeedbackToml = Field(default_factory=FeedbackToml)
    splits: dict[str, SplitToml] = Field(
        default_factory=dict, description="the private splits besides test: search, select "
        "(environments/task/splits.py)")
    oracle: OracleToml | None = None
    timed: bool = Field(False, description="the metric is the submission phase's runtime, "
                        "measured by the host against the pristine env/ (environments/scoring/timing.py)")
    hparams: list[HParam] = Field(default_factory=list)
    measure: MeasureToml | None = None
    limits: TaskLimits = Field(default_factory=TaskLimits)
    prepare: PrepareToml = Field(default_factory=PrepareToml)
    python: PythonToml = Field(default_factory=PythonToml)

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: object) -> object:
        """A key labcoat once read says where it went, not just "extra inputs not permitted"."""
        for key, where in _GONE.items():
            if isinstance(data, dict) and key in data:
                raise ValueError(f"{key} {where}")
        return data

    @field_validator("splits")
    @classmethod
    def _split_names(cls, splits: dict[str, SplitToml]) -> dict[str, SplitToml]:
        unknown = sorted(set(splits) - set(SPLITS))
        if unknown:
            raise ValueError(f"[splits] {', '.join(unknown)}: a split is one of {', '.join(SPLITS)}")
        return splits

    @property
    def split_names(self) -> tuple[SplitName, ...]:
        """The private splits this task scores on (``test`` always)."""
        return declared(self.splits)

    @property
    def validation_budget(self) -> int:
        """Validate Submission calls per run: 0 unless ``[feedback]`` declares validation."""
        return self.feedback.budget if self.feedback.kind == "validation" else 0

    @field_validator("solve", mode="before")
    @classmethod
    def _one_or_many(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


class TaskSpec(TaskToml):
    """A loaded, validated task folder."""

    name: str
    root: Path
    research_problem: str
    read_only_globs: list[str]
    python_requirements: list[str] = Field(default_factory=list, description="[python]'s "
                                           "requirements and its requirements_file's, validated")
    # which of MLAgentBench's tasks a folder without task.toml is (environments/task/mlagentbench.py)
    mlagentbench: Recognition | None = None

    @property
    def env_dir(self) -> Path:
        return self.root / "env"

    @property
    def scripts_dir(self) -> Path:
        return self.root / "scripts"

    @property
    def reference_dir(self) -> Path:
        return self.root / "reference"

    @property
    def eval_path(self) -> Path:
        return self.scripts_dir / "eval.py"

    @property
    def prepare_path(self) -> Path:
        return self.scripts_dir / "prepare.py"

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    @property
    def has_eval(self) -> bool:
        """False only for an MLAgentBench task that has no ``eval.py`` (it loads, runs, and is
        not scored: :data:`environments.task.mlagentbench.NO_EVAL`)."""
        return self.eval_path.is_file()

    def is_read_only(self, rel_path: str) -> bool:
        """Whether a workspace-relative POSIX path matches a read-only glob."""
        return any(fnmatch.fnmatchcase(rel_path, g) for g in self.read_only_globs)


def _read_text(path: Path) -> str:
    """A task folder's text file, read capped (:data:`MAX_TOML_BYTES`): TaskError when larger."""
    try:
        return read_capped(path, MAX_TOML_BYTES).decode(errors="replace")
    except LimitError as err:
        raise TaskError(str(err)) from err


def _read_globs(path: Path) -> list[str]:
    if not path.exists():
        return []
    globs = []
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("/") or ".." in Path(line).parts:
            raise TaskError(f"{path}:{n}: glob {line!r} must be relative to the workspace")
        if line.count("[") != line.count("]"):
            raise TaskError(f"{path}:{n}: malformed glob {line!r} (unbalanced brackets)")
        globs.append(line.removeprefix("./"))
    return globs


def check_folder(root: Path) -> None:
    """:func:`environments.task.tree.check_within`, its error a :class:`TaskError`."""
    try:
        check_within(root)
    except FolderError as err:
        raise TaskError(str(err)) from err


def folder_entries(root: Path) -> list[tuple[str, os.stat_result]]:
    """:func:`environments.task.tree.tree`, its error a :class:`TaskError`."""
    try:
        return tree(root)
    except FolderError as err:
        raise TaskError(str(err)) from err


def load_task(root: str | Path, name: str | None = None) -> TaskSpec:
    """Load and validate a task folder; raises :class:`TaskError` naming the broken file.

    ``name`` overrides the folder name (a prepared copy keeps its suite name).
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise TaskError(f"{root}: not a task folder (no such directory)")
    check_folder(root)  # before any read: a FIFO would block it, a link out would reach the host
    toml_path = root / "task.toml"
    data: dict = {}
    recognised = None
    if not toml_path.exists() and (root / "env" / "train.py").is_file():
        data["solve"] = ["train.py"]  # MLAgentBench's convention: train.py makes the submission
    if not toml_path.exists():  # MLAgentBench's metric, direction, [prepare], [python]
        recognised = recognise_folder(root, name, read_text=_read_text)
        data.update(recognised.toml_defaults() if recognised else {})
    if not toml_path.exists() and (root / "scripts" / "requirements.txt").is_file():
        data["python"] = {"requirements_file": "scripts/requirements.txt"}  # CLRS has one: it wins
    if toml_path.exists():
        text = _read_text(toml_path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise TaskError(f"{toml_path}: invalid TOML: {err}") from err
        except RecursionError as err:  # tomllib recurses per nested array or table
            raise TaskError(f"{toml_path}: invalid TOML: nested too deeply") from err
    try:
        toml = TaskToml.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()
        )
        raise TaskError(f"{toml_path}: {problems}") from err
    scripts = root / "scripts"
    no_eval_known = recognised is not None and recognised.by == "content" and not recognised.entry.has_eval
    for required in (root / "env", *(() if no_eval_known else (scripts / "eval.py",))):
        if not required.exists():
            raise TaskError(f"{required}: missing (every task needs env/ and scripts/eval.py)")
    problem_path = scripts / "research_problem.txt"
    if not problem_path.exists():
        raise TaskError(f"{problem_path}: missing (the actor needs a research problem)")
    spec = TaskSpec(
        **toml.model_dump(exclude={"name"}),
        name=toml.name or name or root.name,
        root=root,
        research_problem=_read_text(problem_path).strip(),
        read_only_globs=_read_globs(scripts / "read_only_files.txt"),
        python_requirements=_python_requirements(root, toml.python, toml_path),
        mlagentbench=recognised,
    )
    _check_contract(spec, toml_path)
    for script in spec.solve:
        if not (spec.env_dir / script).exists():
            raise TaskError(f"{toml_path}: solve script {script!r} is not in env/")
    return spec


def _python_requirements(root: Path, python: PythonToml, toml_path: Path) -> list[str]:
    """``[python]``'s requirements, then its ``requirements_file``'s (read capped; a link that
    leaves the folder is refused: its lines would be quoted in errors)."""
    if python.requirements_file is None:
        return list(python.requirements)
    path = root / python.requirements_file
    if not path.is_file() or not path.resolve().is_relative_to(root):
        raise TaskError(f"{toml_path}: [python] requirements_file {python.requirements_file!r} "
                        "is not a file inside the task folder")
    try:
        return [*python.requirements, *requirement_lines(_read_text(path), str(path))]
    except ValueError as err:
        raise TaskError(str(err)) from err


def _check_contract(spec: TaskSpec, toml_path: Path) -> None:
    """What ``[oracle]`` and ``[feedback]`` promise must exist in ``scripts/``."""
    if spec.oracle is not None and not (spec.scripts_dir / "produce.py").is_file():
        raise TaskError(f"{toml_path}: [oracle] needs scripts/produce.py (the submission phase)")
    if spec.oracle is not None and spec.timed:
        raise TaskError(f"{toml_path}: [oracle] and timed = true do not mix (a relayed call's "
                        "time is not the submission's)")
    source = spec.eval_path.read_text(errors="replace") if spec.has_eval else ""
    if spec.oracle is not None and "def make_oracle" not in source:
        raise TaskError(f"{spec.eval_path}: [oracle] needs make_oracle(challenge) in eval.py")
    two_phase = (spec.scripts_dir / "produce.py").is_file()
    for split in spec.split_names:
        function = function_for(split, two_phase)
        if split != "test" and f"def {function}" not in source:
            raise TaskError(f"{spec.eval_path}: [splits.{split}] needs {function}() in eval.py "
                            "(environments/task/splits.py)")
    if spec.feedback.kind == "validation" and "search" not in spec.splits and not any(
            f in source for f in LEGACY_SEARCH):  # a def, or a name bound to one
        raise TaskError(f"{spec.eval_path}: [feedback] validation scores on the search split: "
                        "declare [splits.search] and its function in eval.py "
                        "(environments/task/splits.py)")
