"""``baseline/hparam``: the no-LLM baseline agent, a small hyperparameter search.

It makes a real attempt on every task, in three parts, each an ordinary recorded step:

1. **Submit the starting version.** It runs the task's starting script (``solve`` in
   ``task.toml``, else the first ``python X.py`` the research problem names, else a usual dev
   script such as ``run_dev.py``) and checks that the files the task says the script writes
   (``submission.csv``, ``distilled.npz``: names that the research problem and the script both
   mention and the workspace lacks before the run) now exist, so a run is never left without
   its submission. A task without ``solve`` scores the workspace's code itself, so that is
   already submitted.
2. **Measure.** A version's number is the task's metric as the script prints it (else the
   ``mean …`` line of a dev script the research problem names, whose direction its words
   give: accuracy is higher-better, error, regret, evals lower-better), else the task's
   Validate Submission action where the task offers validation feedback
   (``[feedback] kind = "validation"``). A task may say how instead (``[measure]`` in
   ``task.toml``: a pattern whose group is the number, in which script's output, which way is
   better), which comes before any of these guesses.
3. **Search.** It finds the tunable numbers (``[[hparams]]`` in ``task.toml``, else plain
   module-level constants such as ``LR = 0.01`` and settings passed by keyword or kept in a dict
   such as ``n_estimators=50``, ``CONFIG = {"lr": 1e-3}`` in the scripts it may edit; none on a timed
   task, whose numbers define the computation being timed) and tries each number's candidate
   values through Write File and the runs of part 2: a line search per number (walk up from
   the current value while the number improves, else down), taken round robin so every number
   gets a trial early, within the run's budget and its own deadline (``max_seconds``, default
   270). The run's seed orders that round robin (seed 0: the numbers in the order found;
   another seed: a shuffle of them), so runs with different seeds try different settings
   first, as a search's seed should make them. A declared knob may be a string (an enum,
   ``MODE = "sum"``) or whatever text a ``pattern`` finds (a tuple's element, a block of code
   the task offers a replacement for); its values are tried in the order declared. Where a
   task's scripts have no number of their own to tune, the task declares its knobs, so the
   agent makes a real attempt on every suite task (``tests/agent/test_baseline.py`` checks
   that each has something to tune). The first trial is owed the run's budget alone, not the
   agent's deadline, so a slow task still gets one; with no way to compare versions, each knob's
   first value is still run once and said, and the start is put back.

A resumed run's search goes on where it stopped: its trace is replayed into the search
(:meth:`HParamAgent.start`), so its Final Answer knows the start and every trial before the stop.

It leaves the best version in the workspace, re-running it when needed so its outputs match,
and gives its Final Answer, which says what it did and, where it could not search, why (a
person sees it on the terminal, not only in the trace). A proposal that a reviewer rejects
(confirm mode, :mod:`agent.approval`) is not a trial: nothing is recorded as tried that was
not run.
"""

from __future__ import annotations

import ast
import json
import random
import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field

from agent.actor import REJECTED, BaseActor, Proposal, proposal
from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.low_level import ExecuteArgs, FinalAnswerArgs, WriteFileArgs
from environments.acting.observation import Observation, last_lines
from environments.acting.paths import PathRefused
from environments.acting.validation import VALIDATE, ValidateArgs
from environments.record.runs import Step
from environments.task.spec import HParam, TaskSpec

WRITE = "Write File"  # shares its argument model with Append File, so it is named

# a number as scripts print it, thousands separators included (``f"{mae:,.0f}"``: 45,706)
NUMBER = r"([-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"
SKIP = re.compile(r"SEED|SIZE$|^N_|_DIM$|CHANNELS|WORKERS|VERBOSE|PRINT|LOG", re.I)
# scripts a task's workspace conventionally measures itself with, when the problem names none
DEV_SCRIPTS = ("run_dev.py", "dev.py", "check_dev.py", "check.py", "simulate.py", "run.py", "train.py")
NAMED_SCRIPT = re.compile(r"\bpython3?\s+([\w./-]+\.py)\b")
NAMED_FILE = re.compile(r"(?<![\w/.-])([\w-]+(?:/[\w-]+)*\.(?:csv|tsv|npz|npy|json|jsonl|txt|pt|pkl|parquet))\b")
LOWER_WORDS = re.compile(r"error|loss|regret|mse|mae|smape|second|evals|time|distance|gap", re.I)
HIGHER_WORDS = re.compile(r"acc|recall|precision|score|f1|auc|reward", re.I)


# keyword arguments that are a model's or an optimiser's settings (``n_estimators=50``, ``lr=5e-3``),
# never a call's plumbing (``random_state``, ``test_size``: a different split is no better model)
HYPER_KEYWORD = re.compile(
    r"^(lr|learning_rate|\w*_rate|alpha|beta\d?|gamma|lambda_?|C|\w*epochs?|max_iter|\w*iterations|"
    r"n_estimators|max_depth|\w*leaf|num_leaves|min_samples_\w+|\w*hidden\w*|\w*units|\w*layers|"
    r"\w*heads|dropout|\w*decay|momentum|batch_size|n_neighbors|l1_ratio|temperature|\w*smoothing|"
    r"patience|max_features|subsample|n_samples|\w*steps|\w*rounds|reg_\w+|min_child_\w+|top_k|\w*width)$", re.I)


Value = float | int | str  # a knob's value: a number, or a string (an enum, or code for a pattern)


@dataclass
class Knob:
    file: str
    name: str
    value: Value
    candidates: list[Value]
    line: int | None = None  # a keyword argument's line; None: a module-level constant
    keyword: str = ""
    pattern: str | None = None  # a declared [[hparams]] pattern: the text its group finds is the value
    text: str = ""  # with a pattern: the text the pattern found (the starting value as written)

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, (int, float)) for v in [self.value, *self.candidates])

    def written(self, value: Value) -> str:
        """How a pattern knob's value reads in the file: the text found for the starting value,
        a string as is (code), a number as Python writes it."""
        if value == self.value and self.text:
            return self.text
        return value if isinstance(value, str) else repr(value)


def auto_candidates(name: str, value: float | int) -> list[float | int]:
    if isinstance(value, int):
        mults = (3, 10) if re.search(r"EPOCH|ITER|STEPS|ROUNDS", name, re.I) else (0.5, 2, 4)
        return [v for v in dict.fromkeys(max(1, int(value * m)) for m in mults) if v != value]
    if 0 < value < 1 and re.search(r"DROP|MOMENTUM|DECAY|BETA|GAMMA", name, re.I):
        return [v for v in (0.0, 0.1, 0.3, 0.5, 0.9) if v != value]
    return [round(value * m, 10) for m in (0.3, 3, 10) if value * m != value]


def find_constants(source: str, file: str) -> list[Knob]:
    """Module-level ``UPPER_CASE = <int or float>`` assignments a search may change."""
    knobs = []
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Constant):
            continue
        v = value.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not target.id.isupper():
            continue
        if SKIP.search(target.id) or v == 0:
            continue
        knobs.append(Knob(file, target.id, v, auto_candidates(target.id, v)))
    return knobs


def _number(node: ast.AST | None) -> float | int | None:
    v = node.value if isinstance(node, ast.Constant) else None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _settings(tree: ast.AST) -> Generator[tuple[str, ast.expr], None, None]:
    """(name, value) of every keyword argument and every string-keyed dict entry."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from ((kw.arg, kw.value) for kw in node.keywords if kw.arg)
        elif isinstance(node, ast.Dict):
            yield from ((k.value, v) for k, v in zip(node.keys, node.values)
                        if isinstance(k, ast.Constant) and isinstance(k.value, str))


def find_keywords(source: str, file: str) -> list[Knob]:
    """Numeric settings passed by keyword (``RandomForestRegressor(n_estimators=50)``) or kept in
    a dict (``CONFIG = {"lr": 1e-3}``), one knob per site, named by the keyword (and its line,
    where a keyword appears twice)."""
    sites = []
    for arg, value in _settings(ast.parse(source)):
        v = _number(value)
        if v and HYPER_KEYWORD.match(arg):
            sites.append((value.lineno, value.col_offset, arg, v))
    sites.sort()
    seen: dict[str, int] = {}
    for _, _, arg, _ in sites:
        seen[arg] = seen.get(arg, 0) + 1
    knobs, lines = [], set()
    for line, _, arg, v in sites:
        if (line, arg) in lines:  # the same keyword twice on one line: left alone
            continue
        lines.add((line, arg))
        name = arg if seen[arg] == 1 else f"{arg}@{line}"
        knobs.append(Knob(file, name, v, auto_candidates(arg.upper(), v), line=line, keyword=arg))
    return knobs


def set_keyword(source: str, line: int, keyword: str, value: float | int) -> str:
    """``source`` with the number passed as ``keyword=`` on ``line`` replaced by ``value``."""
    for arg, node in _settings(ast.parse(source)):
        if arg == keyword and node.lineno == line and _number(node) is not None:
            lines = source.splitlines(keepends=True)
            raw = lines[line - 1].encode()  # ast's columns count UTF-8 bytes
            lines[line - 1] = (raw[:node.col_offset] + repr(value).encode()
                               + raw[node.end_col_offset:]).decode()
            return "".join(lines)
    raise ValueError(f"no {keyword}= number on line {line}")


def declared_knob(h: HParam, source: str) -> Knob | str:
    """The knob an ``[[hparams]]`` row declares in ``source`` (its file), or why there is none."""
    if h.pattern is not None:
        text = find_pattern(source, h.pattern)
        if text is None:
            return f"[[hparams]] {h.name}: its pattern finds nothing in {h.file}"
        current: Value | None = as_value(text)
    else:
        text, current = "", _assigned(source, h.name)
    if current is None:
        return f"[[hparams]] {h.name}: no module-level number or string {h.name} in {h.file}"
    values = [v for v in h.values if v != current and v != text]
    if not values and not isinstance(current, str):
        values = auto_candidates(h.name, current)
    if not values:
        return f"[[hparams]] {h.name}: no value to try other than its current {_shown(current)}"
    return Knob(h.file, h.name, current, values, pattern=h.pattern, text=text)


def find_pattern(source: str, pattern: str) -> str | None:
    """The text a declared pattern's first group (else its whole match) finds in ``source``."""
    found = re.search(pattern, source, re.M)
    if found is None:
        return None
    return found.group(1) if found.re.groups else found.group(0)


def as_value(text: str) -> Value:
    """A pattern's text as the knob's value: a number where it is one (so a line search can walk
    it), else the text itself."""
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else text


def set_pattern(source: str, knob: Knob, current: Value, value: Value) -> str:
    """``source`` with the knob's current text (where its pattern finds it, else the first place
    that text is: a replaced block of code no longer matches the pattern) replaced by ``value``'s."""
    old, new = knob.written(current), knob.written(value)
    found = re.search(knob.pattern, source, re.M)
    group = (1 if found.re.groups else 0) if found else 0
    if found and found.group(group) == old:
        return source[:found.start(group)] + new + source[found.end(group):]
    if old in source:
        return source.replace(old, new, 1)
    raise ValueError(f"{knob.name}: neither its pattern nor its text {old[:40]!r} is in {knob.file}")


def set_value(source: str, knob: Knob, value: Value, current: Value | None = None) -> str:
    if knob.pattern is not None:
        return set_pattern(source, knob, knob.value if current is None else current, value)
    if knob.keyword:
        return set_keyword(source, knob.line, knob.keyword, value)
    return set_constant(source, knob.name, value)


def set_constant(source: str, name: str, value: float | int) -> str:
    pattern = re.compile(rf"^({re.escape(name)}\s*(?::[^=\n]+)?=\s*)([^#\n]*?)(\s*(?:#.*)?)$", re.M)
    new, n = pattern.subn(lambda m: f"{m.group(1)}{value!r}{m.group(3)}", source, count=1)
    if n != 1:
        raise ValueError(f"no module-level assignment to {name}")
    return new


def read_metric(output: str, metric: str) -> float | None:
    """The script's own validation number: ``validation accuracy 0.91``, ``accuracy: 0.9``, or,
    for a metric ``test_error``, ``validation error 23.4%`` (its last word, or a word it begins:
    ``mean_test_acc`` in ``validation accuracy 0.8``, after val/dev), else
    ``heldout_mse`` read from ``training-task MSE 7.7`` (its last word alone) ..."""
    m = re.escape(metric).replace("_", "[ _]")
    last = re.escape(re.split(r"[_\W]+", metric.strip("_"))[-1])
    val = r"(?:val(?:idation)?|dev)"
    num = rf"(?<![\w.]){NUMBER}"  # a number of its own, never the tail of a name (``dev_19.npz``)
    for pattern in (rf"{val}[ _]*{m}\W*?{num}", rf"{val}\w*[ _-]+{last}\w*\W*?{num}",
                    rf"{val}\w*\W*?{num}", rf"{m}\W*?{num}", rf"\b{last}\w*\W*?{num}"):
        found = re.findall(pattern, output, re.I)
        if found:
            return _float(found[-1])
    return None


def _float(text: str) -> float:
    return float(text.replace(",", ""))


def read_proxy(output: str) -> tuple[float, bool] | None:
    """A dev script's summary (``mean regret/s: 12.3``, ``…, mean 0.91``) and whether higher is
    better, as the line's own words say; None when there is none or its words do not say."""
    for line in reversed(output.splitlines()):
        found = (re.search(rf"\bmean\b[^:\n]*:\s*{NUMBER}", line, re.I)
                 or re.search(rf"\bmean\s+{NUMBER}", line, re.I))
        if not found:
            continue
        lower, higher = bool(LOWER_WORDS.search(line)), bool(HIGHER_WORDS.search(line))
        return (_float(found.group(1)), higher) if lower != higher else None
    return None


def tail(observation: Observation, chars: int = 300) -> str:
    """The last lines a run printed, on one line (the reason a script failed)."""
    return last_lines(observation.full_text or observation.text, chars, sep=" | ")


@dataclass
class Plan:
    """What the agent found before its first step: what to run, what it must write, what to tune."""

    start: str | None  # the starting script: makes the submission (or checks the code that is it)
    dev: list[str] = field(default_factory=list)  # scripts that may print a number when start does not
    outputs: list[str] = field(default_factory=list)  # files the starting script must leave
    knobs: list[Knob] = field(default_factory=list)
    why_no_knobs: str = ""
    notes: list[str] = field(default_factory=list)


def scripts_named(task: TaskSpec) -> list[str]:
    """``python X.py`` commands of the research problem, in order."""
    return list(dict.fromkeys(NAMED_SCRIPT.findall(task.research_problem)))


class HParamAgent(BaseActor):
    kind = "baseline"

    def __init__(self, reserve_steps: int = 3, max_seconds: float | None = 270.0, seed: int = 0) -> None:
        self.reserve_steps = reserve_steps
        self.seed = seed
        self.max_seconds = max_seconds  # the search's own deadline, so a default run ends in minutes
        self.started = time.monotonic()
        self.last: Observation | None = None
        self.rejected = False  # the last proposal was rejected by a reviewer, so it never ran
        self.validations_left = 0
        self.dev_prints_metric = False  # the dev script prints the task's metric (else a mean line)
        self.measure_runs = False  # the task's [measure] names a script of its own, run per version
        self.gen: Generator[Proposal, None, None] | None = None
        self.log: list[str] = []
        self.history: list[Step] = []  # a resumed run's steps, replayed into the search (start)
        self.replayed = 0

    def extra_actions(self) -> Sequence[ActionSpec]:
        return ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        """A resumed run's search goes on where it stopped: the steps it took are replayed into
        it (each proposal that matches the next recorded step is answered by that step's
        observation, and the workspace is read as that step's snapshot has it), so it knows its
        start, its trials and its best version as if never stopped."""
        self.env = env
        self.started = time.monotonic()
        self.history = list(history)
        self.replayed = 0
        self.gen = self.search(_Replayed(env, self) if self.history else env)

    @property
    def replaying(self) -> bool:
        return self.replayed < len(self.history)

    def propose(self, env: Environment) -> Proposal | None:
        try:
            while True:
                p = next(self.gen)
                if not self.replaying:
                    return p
                step = self.history[self.replayed]
                if _key(p.action, p.args, p.meta) != _key(step.action, step.args, step.meta):
                    self.history = self.history[:self.replayed]  # it went another way: live from here
                    return p
                self.replayed += 1
                self.observe(p, Observation(text=step.observation, full_text=step.observation_full,
                                            error=step.error, exit_code=step.exit_code,
                                            seconds=step.seconds, data=step.data))
        except StopIteration:
            return None

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        # an approval policy tells a rejection as an error observation (agent.approval); the
        # search then skips that trial rather than read the next, unchanged run as its result
        self.rejected = observation.error and observation.text.startswith(REJECTED)
        self.last = observation

    # --- what to run, what it writes, what to tune ------------------------------------------------

    def plan(self, env: Environment) -> Plan:
        task = env.task
        exists = lambda rel: _kind(env, rel) == "file"  # noqa: E731
        named = [s for s in scripts_named(task) if exists(s)]
        solve = [s for s in task.solve if s.endswith(".py") and exists(s)]
        start = next(iter(solve + named + [s for s in DEV_SCRIPTS if exists(s)]), None)
        if start is None and task.hparams:
            start = task.hparams[0].file if exists(task.hparams[0].file) else None
        plan = Plan(start)
        if solve:  # a dev script that may measure what the solve script made (distill, then run_dev)
            plan.dev = [s for s in named + [s for s in DEV_SCRIPTS if exists(s)] if s != start][:1]
        if task.solve and start:  # the script makes the submission: the files the problem and
            # the script both name and the workspace lacks (a data file is there; a hidden one is
            # not named by the script)
            source = _source(env, start)
            plan.outputs = [f for f in dict.fromkeys(NAMED_FILE.findall(task.research_problem))
                            if _kind(env, f) is None and f in source]
        plan.knobs, plan.why_no_knobs = self.knobs(env, start, plan.notes)
        return plan

    def knobs(self, env: Environment, start: str | None, notes: list[str]) -> tuple[list[Knob], str]:
        task = env.task
        if task.hparams:
            out = []
            for h in task.hparams:
                if _kind(env, h.file) != "file":
                    notes.append(f"[[hparams]] {h.name}: no file {h.file}")
                    continue
                knob = declared_knob(h, _source(env, h.file))
                if isinstance(knob, str):
                    notes.append(knob)
                else:
                    out.append(knob)
            return out, "" if out else "its [[hparams]] name nothing the scripts define"
        if task.timed:
            return [], ("it is a timed task: its numbers define the computation being timed, so "
                        "changing them changes what is computed, not how fast")
        if task.solve:
            files = [s for s in task.solve if s.endswith(".py")]
        else:
            files = [name for name, kind in env.list_folder(".") if name.endswith(".py") and kind == "file"]
        files = [f for f in files if _kind(env, f) == "file" and not task.is_read_only(f)]
        out = []
        for f in files:
            try:
                source = _source(env, f)
                out += find_constants(source, f) + find_keywords(source, f)
            except SyntaxError:
                notes.append(f"{f} does not parse")
        where = ", ".join(files) or "no editable script"
        return out, "" if out else (f"no [[hparams]] in task.toml, and no module-level numeric "
                                    f"constants (such as LR = 0.01) or numeric settings passed by "
                                    f"keyword (such as n_estimators=50) in {where}")

    # --- the budget --------------------------------------------------------------------------------

    def left(self, env: Environment) -> tuple[int, float]:
        meta = env.run.meta if env.run else None
        if meta is None:
            return 10**6, float("inf")
        left = meta.budgets.left(meta.totals)
        return (10**6 if left.max_steps is None else left.max_steps,
                float("inf") if left.max_time is None else left.max_time)

    def time_for_a_trial(self, env: Environment, slowest: float, steps: int = 2, first: bool = False) -> bool:
        """Whether one more trial fits in the run's budget and the agent's own deadline; the
        first trial is owed the run's budget alone (a slow task still gets a real attempt).
        While a resumed run's trace is replayed, the trace says what fitted."""
        if self.replaying:
            return True
        steps_left, seconds = self.left(env)
        if self.max_seconds is not None and not first:
            seconds = min(seconds, self.max_seconds - (time.monotonic() - self.started))
        return steps_left >= steps + self.reserve_steps and seconds >= 2 * slowest

    # --- measuring one version ---------------------------------------------------------------------

    def measure(self, env: Environment, plan: Plan, how: str, trial: object
                ) -> Generator[Proposal, None, float | None]:
        """The current version's number, by ``how`` (after its starting script ran): read from
        that run (``printed``), from a dev script's run (``dev``) or by Validate Submission
        (``validation``). None when it failed or was rejected (``self.rejected`` says which)."""
        if how == "declared":
            return (yield from self.declared(env, plan, trial))
        if how in ("printed", "proxy"):
            out = self.last.full_text or self.last.text
            proxy = None if how == "printed" else read_proxy(out)
            return None if self.last.error else (read_metric(out, env.task.metric) if how == "printed"
                                                 else proxy and proxy[0])
        if how == "dev":
            yield proposal(ExecuteArgs(script_name=plan.dev[0]), trial=trial)
            if self.last.error or self.rejected:
                return None
            out = self.last.full_text or self.last.text
            if self.dev_prints_metric:
                return read_metric(out, env.task.metric)
            proxy = read_proxy(out)
            return None if proxy is None else proxy[0]
        # Validate Submission is registered by the task, not a built-in: its proposal is built by hand
        yield Proposal(action=VALIDATE, args=ValidateArgs().model_dump(), meta={"trial": trial})
        data = self.last.data or {}
        self.validations_left = data.get("left", self.validations_left - 1)
        return None if self.last.error or self.rejected else data.get("value")

    def declared(self, env: Environment, plan: Plan, trial: object) -> Generator[Proposal, None, float | None]:
        """The number the task's ``[measure]`` pattern finds in its script's output (that script
        run now, unless it is the starting script, which just ran)."""
        measure = env.task.measure
        script = measure.script or plan.start
        if script != plan.start:
            self.measure_runs = True
            yield proposal(ExecuteArgs(script_name=script), trial=trial)
        if self.last.error or self.rejected:
            return None
        found = re.findall(measure.pattern, self.last.full_text or self.last.text, re.M)
        if not found:
            return None
        text = found[-1] if isinstance(found[-1], str) else found[-1][0]
        try:
            return _float(text)
        except ValueError:
            return None

    def how_to_measure(self, env: Environment, plan: Plan
                       ) -> Generator[Proposal, None, tuple[str, float | None, int]]:
        """(how, the starting version's number, direction) or ("", None, 0) with the reason in notes."""
        task = env.task
        direction = 1 if task.higher_is_better else -1
        if task.measure is not None:  # the task says how: its word before any guess
            value = yield from self.declared(env, plan, "start")
            if value is not None:
                better = task.measure.direction or task.direction
                self.log.append(f"measured by [measure] in {task.measure.script or plan.start}'s output, "
                                f"{better} is better")
                return "declared", value, 1 if better == "higher" else -1
            plan.notes.append(f"[measure]'s pattern found no number in "
                              f"{task.measure.script or plan.start}'s output ({tail(self.last)})")
        printed = read_metric(self.last.full_text or self.last.text, task.metric)
        if printed is not None:
            return "printed", printed, direction
        proxy = read_proxy(self.last.full_text or self.last.text)
        if proxy is not None:
            self.log.append(f"measured by {plan.start}'s mean line, "
                            f"{'higher' if proxy[1] else 'lower'} is better")
            return "proxy", proxy[0], 1 if proxy[1] else -1
        tried = [f"{plan.start} printed no {task.metric}, validation number or 'mean …' line whose "
                 "words say which way is better"]
        if plan.dev:
            yield proposal(ExecuteArgs(script_name=plan.dev[0]), trial="start")
            if self.rejected:
                tried.append(f"the reviewer rejected running {plan.dev[0]}")
            elif self.last.error:
                tried.append(f"{plan.dev[0]} failed ({tail(self.last)})")
            else:
                out = self.last.full_text or self.last.text
                dev_metric = read_metric(out, task.metric)
                if dev_metric is not None:
                    self.dev_prints_metric = True
                    return "dev", dev_metric, direction
                proxy = read_proxy(out)
                if proxy is not None:
                    self.log.append(f"measured by {plan.dev[0]}'s mean line, "
                                    f"{'higher' if proxy[1] else 'lower'} is better")
                    return "dev", proxy[0], 1 if proxy[1] else -1
                tried.append(f"{plan.dev[0]} printed no {task.metric} and no 'mean …' line whose "
                             "words say which way is better")
        if task.validation_budget > 0:
            self.validations_left = task.validation_budget
            value = yield from self.measure(env, plan, "validation", "start")
            if value is not None:
                return "validation", value, direction
            tried.append("Validate Submission " + ("was rejected" if self.rejected else
                                                    f"gave no value ({_first_line(self.last.text)})"))
        else:
            tried.append("the task offers no validation feedback ([feedback] kind = \"validation\")")
        plan.notes.append("; ".join(tried))
        return "", None, 0

    # --- the search, as a generator of proposals (each sees self.last afterwards) ---------------

    def search(self, env: Environment) -> Generator[Proposal, None, None]:
        """Every way the run ends, early or after its trials, is one Final Answer saying why."""
        try:
            text = yield from self._search(env)
        except _Ended as ended:
            text = str(ended)
        yield self.final(text)

    def _search(self, env: Environment) -> Generator[Proposal, None, str]:
        plan = self.plan(env)
        submitted = yield from self.submit_start(env, plan)
        knobs = self.knobs_in_order(plan, submitted)
        search = yield from self.measure_start(env, plan, submitted)
        while any(search.todo.values()):
            for knob in knobs:  # round robin: one trial per knob per round
                value = self.next_value(env, search, knob)
                if value is not None:
                    yield from self.trial(env, search, knob, value)
        yield from self.leave_best(search)
        return self.report(env, search)

    def submit_start(self, env: Environment, plan: Plan) -> Generator[Proposal, None, str]:
        """Run the starting script: whatever the search does later, the run has a submission
        (or says why not). Returns what the Final Answer says of it."""
        script = plan.start
        if script is None:
            raise _Ended("found no script to run (no solve in task.toml, no `python X.py` in the "
                         "research problem, no run_dev.py or train.py); left the workspace as is.")
        yield proposal(ExecuteArgs(script_name=script), trial="start")
        if self.rejected:
            raise _Ended(f"the reviewer rejected running the starting script {script}; "
                         "nothing was run, the workspace is as it was.")
        if self.last.error:
            raise _Ended(f"the starting script {script} failed ({tail(self.last)}); left the "
                         "workspace as is, without a search.")
        missing = [f for f in plan.outputs if _kind(env, f) != "file"]
        if missing:
            raise _Ended(f"the starting script {script} ran but wrote no {', '.join(missing)}, "
                         f"which the task's problem names as what it writes (its output: "
                         f"{tail(self.last)}); left the workspace as is.")
        if plan.outputs:
            return f"ran {script}; its result ({', '.join(plan.outputs)}) is submitted"
        if not env.task.solve:
            return f"ran {script}; the workspace's code is the submission"
        return f"ran {script}; its result is submitted"

    def knobs_in_order(self, plan: Plan, submitted: str) -> list[Knob]:
        """The knobs in the round robin's order, which the run's seed shuffles: runs with
        different seeds should try different settings first, as a search's seed makes them."""
        if not plan.knobs:
            raise _Ended(f"{submitted}. No search: found no tunable numbers "
                         f"({plan.why_no_knobs}){_notes(plan)}.")
        if self.seed:
            random.Random(self.seed).shuffle(plan.knobs)
        return plan.knobs

    def measure_start(self, env: Environment, plan: Plan, submitted: str
                      ) -> Generator[Proposal, None, Search]:
        """The starting version's number, without which no trial could be compared."""
        slowest = self.last.seconds  # the starting script's run, the last step taken
        knobs = plan.knobs
        started_at = time.monotonic()
        how, best, direction = yield from self.how_to_measure(env, plan)
        slowest += time.monotonic() - started_at if how in ("dev", "validation", "declared") else 0.0
        if best is None:
            ran = yield from self.blind(env, plan, knobs, slowest)
            raise _Ended(f"{submitted}. No search over {', '.join(k.name for k in knobs)}: no way to "
                         f"compare versions ({_notes(plan).lstrip('; ')}), so it kept the first "
                         f"working version. Tried unjudged: {'; '.join(ran) or 'nothing (no time)'}.")
        search = Search(plan, submitted, how, direction, start_score=best, best=best, slowest=slowest,
                        setting={k.name: k.value for k in knobs},
                        sources={k.file: _source(env, k.file) for k in knobs},
                        todo={k.name: _sides(k) for k in knobs}, extra_run=self.measure_runs)
        self.log.append(f"start: {_setting(search.setting)} -> {best:g}")
        return search

    def blind(self, env: Environment, plan: Plan, knobs: list[Knob], slowest: float
              ) -> Generator[Proposal, None, list[str]]:
        """With no way to compare versions, each knob's first value is still run once (does the
        changed script run?) and the start is put back: an attempt whose result is said, never
        a guess kept. Returns what each run did."""
        sources = {k.file: _source(env, k.file) for k in knobs}
        ran: list[str] = []
        dirty: set[str] = set()
        for knob in knobs:
            if not self.time_for_a_trial(env, slowest, first=not ran):
                break
            value = knob.candidates[0]
            for other in sorted(dirty - {knob.file}):
                yield proposal(WriteFileArgs(file_name=other, content=sources[other]), WRITE, trial="restore")
                dirty.discard(other)
            edited = set_value(sources[knob.file], knob, value)
            yield proposal(WriteFileArgs(file_name=knob.file, content=edited), WRITE, trial={knob.name: value})
            if self.rejected:
                continue
            dirty.add(knob.file)
            yield proposal(ExecuteArgs(script_name=plan.start), trial={knob.name: value})
            if not self.rejected:
                ran.append(f"{knob.name}={_shown(value)} " + (f"failed ({tail(self.last, 120)})"
                                                             if self.last.error else "ran"))
        for file in sorted(dirty):
            yield proposal(WriteFileArgs(file_name=file, content=sources[file]), WRITE, trial="best")
        if dirty:
            yield proposal(ExecuteArgs(script_name=plan.start), trial="best")
        return ran

    def next_value(self, env: Environment, search: Search, knob: Knob) -> Value | None:
        """The knob's next value, or None once its line search is over. A trial that would not
        fit in the time, steps or validations left is never begun: half a trial measures nothing."""
        sides = search.todo[knob.name]
        while sides and not sides[0]:
            sides.pop(0)
        if (not sides or not self.time_for_a_trial(env, search.slowest, search.steps_per_trial,
                                                   first=search.tried == 0)
                or (search.how == "validation" and self.validations_left < 1)):
            search.todo[knob.name] = []
            return None
        return sides[0].pop(0)

    def trial(self, env: Environment, search: Search, knob: Knob, value: Value
              ) -> Generator[Proposal, None, None]:
        """One number changed from the best version (other files put back first), so that what
        the score does is that number's doing. A step the reviewer rejects never ran: the trial
        ends there, unjudged, and is logged as not tried."""
        search.tried += 1
        yield from self.restore_others(search, knob.file)
        edited = set_value(search.sources[knob.file], knob, value, search.setting[knob.name])
        yield proposal(WriteFileArgs(file_name=knob.file, content=edited), WRITE, trial={knob.name: value})
        if self.rejected:  # never written, never run: not a trial
            self.log.append(f"{knob.name}={_shown(value)} rejected by the reviewer, not tried")
            return
        search.dirty.add(knob.file)
        search.last_is_best = False  # the workspace now differs from the best version
        began = time.monotonic()
        yield proposal(ExecuteArgs(script_name=search.plan.start), trial={knob.name: value})
        if self.rejected:
            self.log.append(f"{knob.name}={_shown(value)} rejected by the reviewer, not tried")
            return
        score = None if self.last.error else (
            yield from self.measure(env, search.plan, search.how, {knob.name: value}))
        if self.rejected:
            self.log.append(f"{knob.name}={_shown(value)}: its measurement was rejected, not compared")
            return
        search.slowest = max(search.slowest, time.monotonic() - began if search.how in ("dev", "validation", "declared")
                             else self.last.seconds)
        self.log.append(f"{knob.name}={_shown(value)} -> {score if score is not None else 'failed'}")
        search.judge(knob, value, score, edited)

    def restore_others(self, search: Search, file: str) -> Generator[Proposal, None, None]:
        """Put back the best version of the other files, so that a trial differs from the best
        version in its one number only."""
        for other in sorted(search.dirty - {file}):
            yield proposal(WriteFileArgs(file_name=other, content=search.sources[other]), WRITE,
                           trial="restore")
            if not self.rejected:
                search.dirty.discard(other)

    def leave_best(self, search: Search) -> Generator[Proposal, None, None]:
        """The best version back in the workspace, re-run so that its outputs are its own."""
        if search.last_is_best:
            return
        for file in sorted(search.dirty):
            yield proposal(WriteFileArgs(file_name=file, content=search.sources[file]), WRITE, trial="best")
        yield proposal(ExecuteArgs(script_name=search.plan.start), trial="best")

    def report(self, env: Environment, search: Search) -> str:
        """The Final Answer of a search that ran, with every trial in it: a person sees what
        was tried and why it stopped, not only what won."""
        plan, script = search.plan, search.plan.start
        dev = plan.dev[0] if plan.dev else script
        if not search.tried:
            plan.notes.append(f"no trial fit in what the run's budget or the agent's deadline left "
                              f"(a version takes {search.slowest:.0f} s to run and measure; a trial needs "
                              "twice that)")
        measured = {"printed": f"{env.task.metric} as {script} prints it",
                    "proxy": f"the mean line {script} prints", "dev": f"what {dev} prints",
                    "validation": f"validation {env.task.metric} (Validate Submission)",
                    "declared": f"the number [measure] finds in {(env.task.measure.script if env.task.measure else None) or script}'s output"}[search.how]
        return (f"{search.submitted}; best setting {_setting(search.setting)}: {measured} {search.best:g}, from "
                f"{search.start_score:g} for the starting script{_notes(plan)}. Trials: " + "; ".join(self.log))

    def final(self, text: str) -> Proposal:
        return proposal(FinalAnswerArgs(final_answer=f"Hyperparameter search baseline: {text}"))


def _sides(knob: Knob) -> list[list[Value]]:
    """A knob's values still to try: a number's line search (upwards first, then downwards);
    otherwise each value in the order declared, a side of its own (an enum has no order to walk)."""
    if knob.numeric:
        return [sorted(v for v in knob.candidates if v > knob.value),
                sorted((v for v in knob.candidates if v < knob.value), reverse=True)]
    return [[v] for v in knob.candidates]


def _key(action: str, args: object, meta: dict) -> tuple:
    """What makes a proposal the same as a recorded step: the action, its file or script, what
    it writes, and which trial it belongs to."""
    args = args if isinstance(args, dict) else {}
    return (action, args.get("script_name"), args.get("file_name"), args.get("content"),
            json.dumps((meta or {}).get("trial"), sort_keys=True))


class _Replayed:
    """The Environment as the search sees it while a resumed run's trace is replayed: the
    workspace read as the snapshot after the last replayed step has it (the live workspace is
    the state after the interrupt, not what the search saw then); live once replay ends."""

    def __init__(self, env: Environment, agent: HParamAgent) -> None:
        self._env, self._agent = env, agent

    def __getattr__(self, name: str) -> object:
        return getattr(self._env, name)

    def _files(self) -> tuple[str, dict[str, object]] | None:
        agent, run = self._agent, self._env.run
        if not agent.replaying or run is None:
            return None
        k = agent.replayed
        label = (agent.history[k - 1].snapshot if k else None) or f"{k:05d}"
        try:
            return label, run.snapshots.load(label).files
        except (OSError, ValueError, RuntimeError):  # SnapshotError is a RuntimeError
            return None

    def read_text(self, name: str, limit: int) -> str:
        seen = self._files()
        if seen is None:
            return self._env.read_text(name, limit)
        try:
            return self._env.run.snapshots.read(seen[0], name.removeprefix("./"), limit).decode("utf-8", "replace")
        except (OSError, KeyError, ValueError, RuntimeError):
            return self._env.read_text(name, limit)

    def file_kind(self, name: str) -> str | None:
        self._env.guard.relative(name)  # the same refusals as the live workspace's
        seen = self._files()
        if seen is None:
            return self._env.file_kind(name)
        rel = name.removeprefix("./").rstrip("/")
        if rel in seen[1]:
            return "file"
        return "dir" if rel in (".", "") or any(f.startswith(rel + "/") for f in seen[1]) else None

    def list_folder(self, name: str = ".") -> list[tuple[str, str]]:
        seen = self._files()
        if seen is None or name not in (".", "./", ""):
            return self._env.list_folder(name)
        top = {f.split("/", 1)[0]: ("dir" if "/" in f else "file") for f in seen[1]}
        return sorted(top.items())


class _Ended(Exception):
    """The search ends before its trials; the message is its Final Answer (why it ended)."""


@dataclass
class Search:
    """A search under way: the best version found so far and what is left to try."""

    plan: Plan
    submitted: str  # what the Final Answer says of the starting version
    how: str  # how a version is measured (HParamAgent.measure)
    direction: int  # 1: higher is better, -1: lower
    start_score: float
    best: float
    slowest: float  # seconds the slowest version took to run and measure
    setting: dict[str, Value]  # the best version's value of each knob
    sources: dict[str, str]  # the best version of each file a knob is in
    # per knob: the values still to try, upwards first, then downwards (a line search each)
    todo: dict[str, list[list[Value]]]
    dirty: set[str] = field(default_factory=set)  # files the workspace has in another version
    last_is_best: bool = True  # the workspace's outputs are the best version's
    tried: int = 0
    extra_run: bool = False  # a [measure] script runs after the starting script in each trial

    @property
    def steps_per_trial(self) -> int:
        return 2 + (self.how in ("dev", "validation")) + (self.how == "declared" and self.extra_run)

    def judge(self, knob: Knob, value: Value, score: float | None, edited: str) -> None:
        """Keep a better version and walk on the same way; else this way has stopped helping:
        turn to the other way, or end the knob's line search once its value has moved."""
        sides = self.todo[knob.name]
        self.last_is_best = score is not None and (score - self.best) * self.direction > 0
        if self.last_is_best:
            self.best, self.setting[knob.name] = score, value
            self.sources[knob.file], self.dirty = edited, set()
            if len(sides) == 2 and knob.numeric:
                sides.pop()  # improving upwards: no need to try downwards
        else:
            sides.pop(0)
            if self.setting[knob.name] != knob.value:
                sides.clear()


def _assigned(source: str, name: str) -> Value | None:
    """The number or string a module-level ``name = ...`` assigns (None: none such)."""
    current = next((k.value for k in find_constants(source, "") if k.name == name), None)
    if current is not None:
        return current
    found = re.search(rf"^{re.escape(name)}\s*(?::[^=\n]+)?=\s*(.+)$", source, re.M)
    try:
        current = ast.literal_eval(found.group(1).split("#")[0].strip()) if found else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return current if isinstance(current, (int, float, str)) and not isinstance(current, bool) else None


def _shown(value: Value) -> str:
    """A value as the Final Answer says it: a number or a short string as Python writes it, a
    block of code by its first line, cut."""
    if not isinstance(value, str) or (len(value) <= 30 and "\n" not in value):
        return repr(value)
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return repr(first[:29] + "…") + (f" ({len(lines)} lines)" if len(lines) > 1 else "")


def _setting(setting: dict[str, Value]) -> str:
    return "{" + ", ".join(f"{name!r}: {_shown(v)}" for name, v in setting.items()) + "}"


def _notes(plan: Plan) -> str:
    return "".join(f"; {n}" for n in plan.notes)


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")[:200]


SOURCE_LIMIT = 4 << 20


def _source(env: Environment, rel: str) -> str:
    """A script of the workspace, read through the Environment, which waits for any command
    to end (the sandbox may still be swapping names while the baseline plans its search)."""
    return env.read_text(rel, SOURCE_LIMIT)


def _kind(env: Environment, rel: str) -> str | None:
    """What ``rel`` is in the workspace; None for a name the guard refuses too (a research
    problem's ``python ../x.py`` names no script of the workspace)."""
    try:
        return env.file_kind(rel)
    except PathRefused:
        return None
