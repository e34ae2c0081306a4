"""``baseline/hparam``: the no-LLM baseline agent, a small hyperparameter search.

It finds the task script's tunable numbers (``[[hparams]]`` in ``task.toml``, else plain
module-level constants such as ``LR = 0.01``), runs the script once as is, then tries each
number's candidate values through Write File and Execute Script: a line search per number
(walk up from the current value while the metric the script prints improves, else down), taken
round robin so every number gets a trial early, within the run's budget and its own deadline (``max_seconds``, default 270). The run's seed orders
that round robin (seed 0: the numbers in the order found; another seed: a shuffle of them), so
runs with different seeds try different settings first, as a search's seed should make them.
It leaves the best version
in the workspace, re-running it when needed so its outputs match, and gives its Final Answer.
Every edit and run is an ordinary recorded step, so its runs score like any other.
"""

from __future__ import annotations

import ast
import random
import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from agent.actor import Proposal, proposal
from environments.actions import ActionSpec
from environments.environment import Environment
from environments.low_level import ExecuteArgs, FinalAnswerArgs, WriteFileArgs
from environments.observation import Observation
from environments.runs import Step

WRITE = "Write File"  # shares its argument model with Append File, so it is named

NUMBER = r"([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"
SKIP = re.compile(r"SEED|SIZE$|^N_|_DIM$|CHANNELS|WORKERS|VERBOSE|PRINT|LOG", re.I)


@dataclass
class Knob:
    file: str
    name: str
    value: float | int
    candidates: list[float | int]


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


def set_constant(source: str, name: str, value: float | int) -> str:
    pattern = re.compile(rf"^({re.escape(name)}\s*(?::[^=\n]+)?=\s*)([^#\n]*?)(\s*(?:#.*)?)$", re.M)
    new, n = pattern.subn(lambda m: f"{m.group(1)}{value!r}{m.group(3)}", source, count=1)
    if n != 1:
        raise ValueError(f"no module-level assignment to {name}")
    return new


def read_metric(output: str, metric: str) -> float | None:
    """The script's own validation number: ``validation accuracy 0.91``, ``accuracy: 0.9`` ..."""
    m = re.escape(metric).replace("_", "[ _]")
    val = r"(?:val(?:idation)?|dev)"
    for pattern in (rf"{val}[ _]*{m}\W*?{NUMBER}", rf"{val}\w*\W*?{NUMBER}", rf"{m}\W*?{NUMBER}"):
        found = re.findall(pattern, output, re.I)
        if found:
            return float(found[-1])
    return None


class HParamAgent:
    kind = "baseline"

    def __init__(self, reserve_steps: int = 3, max_seconds: float | None = 270.0, seed: int = 0) -> None:
        self.reserve_steps = reserve_steps
        self.seed = seed
        self.max_seconds = max_seconds  # the search's own deadline, so a default run ends in minutes
        self.started = time.monotonic()
        self.last: Observation | None = None
        self.gen: Generator[Proposal, None, None] | None = None
        self.log: list[str] = []

    def extra_actions(self) -> Sequence[ActionSpec]:
        return ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        self.env = env
        self.started = time.monotonic()
        self.gen = self.search(env)

    def propose(self, env: Environment) -> Proposal | None:
        try:
            return next(self.gen)
        except StopIteration:
            return None

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        self.last = observation

    # --- the search, as a generator of proposals (each sees self.last afterwards) ---------------

    def knobs(self, env: Environment) -> list[Knob]:
        task = env.task
        if task.hparams:
            out = []
            for h in task.hparams:
                src = _source(env, h.file)
                current = next((k.value for k in find_constants(src, h.file) if k.name == h.name), None)
                if current is None:
                    current = ast.literal_eval(re.search(rf"^{h.name}\s*=\s*(.+)$", src, re.M).group(1))
                values = [v for v in h.values if v != current] or auto_candidates(h.name, current)
                out.append(Knob(h.file, h.name, current, values))
            return out
        files = [s for s in task.solve if s.endswith(".py")] or ["train.py"]
        out = []
        for f in files:
            if env.guard.fs.kind(f) == "file" and not task.is_read_only(f):
                out += find_constants(_source(env, f), f)
        return out

    def left(self, env: Environment) -> tuple[int, float]:
        meta = env.run.meta if env.run else None
        if meta is None:
            return 10**6, float("inf")
        left = meta.limits.left(meta.totals)
        return (10**6 if left.max_steps is None else left.max_steps,
                float("inf") if left.max_time is None else left.max_time)

    def time_for_a_trial(self, env: Environment, slowest: float) -> bool:
        steps, seconds = self.left(env)
        if self.max_seconds is not None:
            seconds = min(seconds, self.max_seconds - (time.monotonic() - self.started))
        return steps >= 2 + self.reserve_steps and seconds >= 2 * slowest

    def search(self, env: Environment) -> Generator[Proposal, None, None]:
        direction = 1 if env.task.higher_is_better else -1
        knobs = self.knobs(env)
        script = knobs[0].file if knobs else ((env.task.solve or ["train.py"])[0])
        if self.seed:
            random.Random(self.seed).shuffle(knobs)
        if not knobs:
            yield self.final("found no tunable numbers (no [[hparams]] in task.toml and no "
                             f"module-level numeric constants in {script}); left the workspace as is.")
            return
        yield proposal(ExecuteArgs(script_name=script), trial="start")
        best = read_metric(self.last.full_text or self.last.text, env.task.metric)
        slowest = self.last.seconds
        if best is None or self.last.error:
            yield self.final(f"could not read a {env.task.metric} or validation number from {script}'s "
                             "output; left the workspace as is.")
            return
        start_score, setting = best, {k.name: k.value for k in knobs}
        self.log.append(f"start: {setting} -> {best:g}")
        sources = {k.file: _source(env, k.file) for k in knobs}
        last_is_best, dirty = True, set()
        # per knob: the values still to try, upwards first, then downwards (a line search each)
        plans = {k.name: [sorted(v for v in k.candidates if v > k.value),
                          sorted((v for v in k.candidates if v < k.value), reverse=True)] for k in knobs}
        while any(plans.values()):
            for knob in knobs:  # round robin: one trial per knob per round
                sides = plans[knob.name]
                while sides and not sides[0]:
                    sides.pop(0)
                if not sides or not self.time_for_a_trial(env, slowest):
                    plans[knob.name] = []
                    continue
                value = sides[0].pop(0)
                for other in dirty - {knob.file}:  # put back the best version of other files
                    yield proposal(WriteFileArgs(file_name=other, content=sources[other]), WRITE, trial="restore")
                dirty = {knob.file}
                trial = set_constant(sources[knob.file], knob.name, value)
                yield proposal(WriteFileArgs(file_name=knob.file, content=trial), WRITE, trial={knob.name: value})
                yield proposal(ExecuteArgs(script_name=script), trial={knob.name: value})
                slowest = max(slowest, self.last.seconds)
                score = None if self.last.error else read_metric(self.last.full_text or self.last.text,
                                                                  env.task.metric)
                self.log.append(f"{knob.name}={value!r} -> {score if score is not None else 'failed'}")
                last_is_best = score is not None and (score - best) * direction > 0
                if last_is_best:  # keep it, and keep walking this way
                    best, setting[knob.name] = score, value
                    sources[knob.file], dirty = trial, set()
                    if len(sides) == 2:
                        sides.pop()  # improving upwards: no need to try downwards
                else:  # this way stops helping: the other side, or this knob is done
                    sides.pop(0)
                    if setting[knob.name] != knob.value:
                        sides.clear()
        if not last_is_best:
            for file, text in sources.items():
                if file not in dirty:
                    continue
                yield proposal(WriteFileArgs(file_name=file, content=text), WRITE, trial="best")
            yield proposal(ExecuteArgs(script_name=script), trial="best")
        yield self.final(f"best setting {setting}: {env.task.metric} (as {script} reports it) "
                         f"{best:g}, from {start_score:g} unchanged. Trials: " + "; ".join(self.log))

    def final(self, text: str) -> Proposal:
        return proposal(FinalAnswerArgs(final_answer=f"Hyperparameter search baseline: {text}"))


SOURCE_LIMIT = 4 << 20


def _source(env: Environment, rel: str) -> str:
    """A script of the workspace, read the one race-proof way (the sandbox may still be
    swapping names while the baseline plans its search)."""
    return env.guard.fs.read(rel, SOURCE_LIMIT)[0].decode("utf-8", "replace")
