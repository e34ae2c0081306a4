"""Live progress of a headless run: a rich panel on a terminal, plain lines otherwise.

Everything shown here is the run's: script output, file names and model words, so any of it may
hold escape sequences or lone surrogates. Each line and cell passes through
:func:`tui.terminal_text.visible` (plain lines) or becomes a ``Text`` of it (the panel), and the
panel's console is the CLI's ``SafeConsole`` besides.
"""

from __future__ import annotations

import difflib
import re
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from agent.runner import RunHooks
from environments.record.runs import RunDir, Step
from environments.untrusted.words import plural
from tui.terminal_text import safe_text, visible


def _head(text: str, width: int = 100) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first[:width]


METRIC = re.compile(r"\b(acc|accuracy|loss|score|error|f1|auc|rmse|mae|perplexity|ppl|val\w*|test\w*)"
                    r"\b[^\n]{0,20}?(?:[:=]|\s)\s*-?\.?\d", re.I)
# a warning Python printed (``x.py:3: UserWarning: ...``, then the line of source it points at,
# indented), or a logger's: never what a run gave
WARNING = re.compile(r"\b\w*Warning\b:|^\s*warnings\.warn\(|^\s*(?:\[?warn(?:ing)?\]?)\b[:\s]", re.I)
VALIDATION = re.compile(r"\b(val(idation)?|dev)", re.I)
WRITES = {"Write File": "written", "Append File": "appended"}
MOSTLY_KEPT = 0.5  # a write keeping less of the file's lines (:func:`_kept`) is a rewrite, told by size
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\S")
NAME = re.compile(r"[A-Za-z_]\w*")
VALUE_CHARS = 30  # of a changed value shown (a rewritten line is not a value)
EDIT_PARTS = 4  # an edit changing more places than this is told by its line counts


LINE_CHANGES = 3  # a line changed in more places than this is a new line, shown as written
VALUE_TOKENS = 3  # of a value changed beside another on one line (``-1e-3``: 3 tokens)


def _changed_value(old: str, new: str) -> str | None:
    """One replaced line as the changes it makes: ``EPOCHS = 12`` → ``EPOCHS = 30`` reads
    ``EPOCHS 12 → 30`` (``MLP(hidden=64)``: ``hidden 64 → 128``; two settings of one call that
    both changed: ``n_estimators 400 → 200, max_depth 6 → 12``), each named after the
    identifier before it; None for a line changed in more places, or a new line."""
    ta, tb = list(TOKEN.finditer(old)), list(TOKEN.finditer(new))
    a, b = [t.group() for t in ta], [t.group() for t in tb]
    diffs = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
             if op[0] != "equal"]
    if not diffs or len(diffs) > LINE_CHANGES or (diffs[0][1], diffs[0][2]) == (0, len(a)):
        return None  # none, too many, or a new line
    if len(diffs) > 1 and any(max(i2 - i1, j2 - j1) > VALUE_TOKENS for _, i1, i2, j1, j2 in diffs):
        return None  # several places, one of them more than a value: a rewritten line

    def span(tokens: list[re.Match], text: str, i: int, j: int) -> str:  # as written, spaces kept
        return _cut(text[tokens[i].start():tokens[j - 1].end()], VALUE_CHARS) if j > i else "∅"

    changes = []
    for _, i1, i2, j1, j2 in diffs:
        name = _tuple_name(old, ta[i1].start()) if i1 < len(ta) else None
        name = name or next((t for t in reversed(a[:i1]) if NAME.fullmatch(t)), "")
        changes.append(f"{name} {span(ta, old, i1, i2)} → {span(tb, new, j1, j2)}".strip())
    return ", ".join(changes)


TUPLE_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*=\s*")


def _tuple_name(line: str, at: int) -> str | None:
    """In ``STEPS, BATCH, LR = 8000, 64, 0.05`` the name of the value at column ``at`` (``STEPS``
    for 8000), by its place in the tuple; None for another line or a place left of the values."""
    found = TUPLE_ASSIGN.match(line)
    if not found or at < found.end():
        return None
    names = [n.strip() for n in found.group(1).split(",")]
    place = line[found.end():at].count(",")
    return names[place] if place < len(names) else None


def change_gist(old: list[str], new: list[str]) -> list[str]:
    """What an edit changed, as people say it: each replaced line's changed value
    (``EPOCHS 12 → 30``), else the new line itself; added and removed lines counted."""
    parts: list[str] = []
    strip = [x.strip() for x in old], [x.strip() for x in new]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *strip, autojunk=False).get_opcodes():
        if op == "replace":
            pairs = list(zip(strip[0][i1:i2], strip[1][j1:j2]))
            for was, now in pairs:
                parts.append(_changed_value(was, now) or _cut(now, VALUE_CHARS))
            extra = (j2 - j1) - (i2 - i1)
            if extra:
                parts.append(f"{'+' if extra > 0 else '−'}{abs(extra)} line{'s' * (abs(extra) != 1)}")
        elif op == "insert":
            added = [x for x in strip[1][j1:j2] if x]
            parts.append(_cut(added[0], VALUE_CHARS) if len(added) == 1 else f"+{j2 - j1} lines")
        elif op == "delete":
            parts.append(f"−{i2 - i1} line{'s' * (i2 - i1 != 1)}")
    return parts


def _kept(old: list[str], new: list[str]) -> int:
    """Lines a write kept: equal ones, and replaced ones that changed a single value."""
    strip = [x.strip() for x in old], [x.strip() for x in new]
    kept = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *strip, autojunk=False).get_opcodes():
        if op == "equal":
            kept += i2 - i1
        elif op == "replace":
            kept += sum(_changed_value(a, b) is not None for a, b in zip(strip[0][i1:i2], strip[1][j1:j2]))
    return kept


def _joined(head: str, parts: list[str], width: int) -> str:
    """``head: a, b, c`` within ``width``: the parts that fit, then ``(+N more)``."""
    shown: list[str] = []
    for k, part in enumerate(parts):
        rest = len(parts) - k - 1
        more = f" (+{rest} more)" if rest else ""
        candidate = f"{head}: {', '.join([*shown, part])}{more}"
        if len(candidate) > width and shown:
            return f"{head}: {', '.join(shown)} (+{len(parts) - k} more)"
        shown.append(part)
    return _cut(f"{head}: {', '.join(shown)}", width)


def _diff_sides(diff: str) -> tuple[list[str], list[str]]:
    """A unified diff's removed and added lines, in order (what an Edit Script step shows)."""
    lines = diff.splitlines()
    old = [x[1:] for x in lines if x.startswith("-") and not x.startswith("---")]
    new = [x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")]
    return old, new


def _tree_tag(step: Step) -> str:
    """``node 3 improve of 1: `` for a tree agent's step (its ``meta["tree"]``), else ``""``."""
    tag = (step.meta or {}).get("tree")
    if not isinstance(tag, dict) or tag.get("node") is None:
        return ""
    parent = tag.get("parent")
    of = f" of {parent}" if parent not in (None, 0) and tag.get("op") in ("improve", "debug") else ""
    return f"node {tag['node']} {tag.get('op', '?')}{of}: "


def step_summary(step: Step, width: int = 100, before: str | None = None, metric: str | None = None) -> str:
    """What a step did, in one line for a person watching the run: what was tried and what it
    gave.

    The observation's first line is usually boilerplate ("The script has been executed.
    Here is the output:"); say instead what happened: a write's changed values against
    ``before`` (the file as it was, when known: ``train.py: EPOCHS 12 → 30``), an edit's
    changed lines, a script's line with the task's ``metric`` as the baseline agent reads it
    (:func:`agent.baseline.read_metric`: a validation number first), else its last metric-like
    line, else its last output line that is no warning, and its exit code. A tree agent's step
    opens with its node and operator.
    """
    tag = _tree_tag(step)
    return tag + _what(step, max(20, width - len(tag)), before, metric)


def _output_lines(obs: str) -> list[str]:
    """A script run's output lines, without warnings (and the source line a Python warning
    quotes after itself), stripped."""
    lines, quoted = [], False
    for line in obs.split("\n", 1)[1].splitlines():
        if WARNING.search(line):
            quoted = True
            continue
        if quoted and line[:1].isspace():  # the source line a warning points at
            quoted = False
            continue
        quoted = False
        if line.strip():
            lines.append(line.strip())
    return lines


def _result_line(output: list[str], metric: str | None) -> str:
    """The line that says what a run gave: its validation number of the task's metric, else
    any line with that metric, else a metric-like line, else its last line."""
    if metric:
        from agent.baseline import read_metric

        found = [line for line in output if read_metric(line, metric) is not None]
        if found:
            return ([line for line in found if VALIDATION.search(line)] or found)[-1]
    metrics = [line for line in output if METRIC.search(line)]
    validation = [line for line in metrics if VALIDATION.search(line)]
    return (validation or metrics or output or [""])[-1]


def _what(step: Step, width: int, before: str | None, metric: str | None = None) -> str:
    obs = step.observation or ""
    args = step.args if isinstance(step.args, dict) else {}
    if step.action in WRITES and isinstance(args.get("content"), str) and not step.error:
        content = args["content"]
        name = str(args.get("file_name", "?"))
        lines = len(content.splitlines())
        size = len(content.encode("utf-8", "surrogatepass"))  # a lone surrogate is 3 bytes too
        verb = WRITES[step.action]
        if step.action == "Write File" and before is not None:
            old, new = before.splitlines(), content.splitlines()
            if old == new:
                return f"{name}: rewritten unchanged"
            if _kept(old, new) >= MOSTLY_KEPT * max(len(old), len(new)):
                return _joined(name, change_gist(old, new), width)
            verb = "rewritten"  # a new script, not a change to read line by line
        return _cut(f"{name}: {lines} line{'s' * (lines != 1)}, {human_bytes(size)} {verb}", width)
    if step.action == "Execute Script" and "\n" in obs:
        output = _output_lines(obs)
        shown = (output or [""])[-1] if step.exit_code else _result_line(output, metric)  # failed: its last word
        code = f"exit {step.exit_code}: " if step.exit_code else ""
        return _cut(code + shown, width)
    if step.action.startswith("Edit Script"):
        old, new = _diff_sides(obs)
        name = str(args.get("script_name", "")) or "edited"
        parts = change_gist(old, new)
        if len(parts) > EDIT_PARTS:  # a rewrite, not a change to read line by line
            return _cut(f"{name} edited: +{len(new)} −{len(old)} lines", width)
        if parts:
            return _joined(name, parts, width)
    return _head(obs, width)


def task_metric(run: RunDir) -> str | None:
    """The run's task's metric name (what a script run's progress line looks for), read from
    its prepared folder; None where that folder is gone or broken (never prepared again just
    to word a progress line)."""
    from environments.task.spec import TaskError, load_task

    root = Path(run.meta.task_root)
    try:
        return load_task(root, run.meta.task).metric if root.is_dir() else None
    except (TaskError, OSError, ValueError):
        return None


BEFORE_CAP = 1 << 20  # a write larger than this is summarised by its size, not diffed


def before_write(run: RunDir, step: Step) -> str | None:
    """The file a Write File step replaced, as the run's previous snapshot holds it (None: a
    new file, another action, a write too large to diff, or a snapshot not there to read)."""
    args = step.args if isinstance(step.args, dict) else {}
    name, content = args.get("file_name"), args.get("content")
    if step.action != "Write File" or not isinstance(name, str) or not isinstance(content, str) \
            or len(content) > BEFORE_CAP:
        return None
    try:
        old = run.snapshots.read(f"{step.index - 1:05d}", name.removeprefix("./"))
    except (OSError, ValueError, KeyError, RuntimeError):  # SnapshotError is a RuntimeError
        return None
    return old.decode("utf-8", "replace") if len(old) <= 4 * BEFORE_CAP else None


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def count(n: int) -> str:
    """A token count for people: ``950``, ``12.3k``, ``1.2M`` (``--json`` keeps the number)."""
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}k" if n < 1_000_000 else f"{n / 1_000_000:.1f}M"


def clock(seconds: float) -> str:
    """``H:MM:SS``, e.g. a budget's time left (the status line and the headless progress)."""
    secs = int(max(0.0, seconds))
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


def isolation_mark(sandbox: str) -> str:
    """Said on every status line of a run whose code ran unisolated (``--sandbox none``)."""
    return "UNISOLATED (--sandbox none)" if sandbox == "none" else ""


def _left(run: RunDir) -> str:
    """What remains of the run's time and step budgets, e.g. ``, 41 steps, 3:52:10 left``."""
    left = run.meta.budgets.left(run.meta.totals)
    parts = []
    if left.max_steps is not None:
        parts.append(plural(left.max_steps, "step"))
    if left.max_time is not None:
        parts.append(clock(left.max_time))
    return f", {' '.join(parts)} left" if parts else ""


FINAL_CAP = 2000  # characters of the final answer printed; run.json keeps it whole


def ending(run: RunDir) -> str:
    """How the run ended and the actor's final answer (what it says it found); a stopped one
    says how to continue it, naming its folder."""
    reason = run.meta.status_reason
    # a reason that restates the status (an older run's "interrupted (Ctrl-C)") is not said twice
    line = reason if reason.startswith(run.meta.status) else f"{run.meta.status}: {reason}"
    answer = (run.meta.final_answer or "").strip()
    if answer:
        more = f" … ({len(answer) - FINAL_CAP} more characters in run.json)" if len(answer) > FINAL_CAP else ""
        line += f"\nfinal answer: {answer[:FINAL_CAP]}{more}"
    if run.meta.status in ("interrupted", "error"):
        line += f"\nrun dir: {run.path}\nresume: labcoat run --resume {run.path}"
    return line


class PlainHooks(RunHooks):
    """One line per step, for logs and pipes."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.metric: dict[str, str | None] = {}  # per run id: its task's metric, read once

    def after_step(self, run: RunDir, step: Step | None) -> None:
        if step is None:
            return
        t = run.meta.totals
        flag = " ERROR" if step.error else ""
        mark = isolation_mark(run.meta.sandbox)
        flag += f" {mark}" if mark else ""
        if run.meta.run_id not in self.metric:
            self.metric[run.meta.run_id] = task_metric(run)
        said = step_summary(step, before=before_write(run, step), metric=self.metric[run.meta.run_id])
        print(visible(f"[{run.meta.run_id}] step {step.index} {step.action}{flag}: {said} "
                      f"(tokens {count(t.tokens_in)}/{count(t.tokens_out)}, ${t.cost:.4f}, "
                      f"{t.seconds:.0f}s{_left(run)})"), file=self.stream, flush=True)

    def on_end(self, run: RunDir) -> None:
        print(visible(f"[{run.meta.run_id}] {ending(run)}"), file=self.stream)


class LiveHooks(RunHooks):
    """A live table of the last steps with step, tokens, cost and time left."""

    def __init__(self, console: Console, keep: int = 12) -> None:
        self.console = console
        self.keep = keep
        self.rows: list[tuple[Step, str]] = []  # each step with its summary, made once
        self.started = time.monotonic()
        self.live = Live(console=console, refresh_per_second=4, transient=False)
        self.run: RunDir | None = None
        self.metric: str | None = None

    def _render(self) -> Table:
        meta = self.run.meta
        t = meta.totals
        limits = meta.budgets
        left = _left(self.run)
        cost_cap = f"/${limits['max_cost']:g}" if limits.get("max_cost") else ""
        token_cap = f" of {limits['max_tokens']}" if limits.get("max_tokens") else ""
        title = (f"{meta.task} · {meta.agent}{' · ' + meta.model if meta.model else ''} · step "
                 f"{t.steps}/{limits.get('max_steps') or '∞'} · tokens {count(t.tokens_in)}/{count(t.tokens_out)}"
                 f"{token_cap} (cached {count(t.tokens_cached)}) · ${t.cost:.4f}{cost_cap} · {plural(t.llm_calls, 'call')}{left}")
        if mark := isolation_mark(meta.sandbox):
            title += f" · {mark}"
        table = Table(title=safe_text(title), expand=True)
        table.add_column("#", width=4)
        table.add_column("action", width=22)
        table.add_column("observation")
        table.add_column("s", width=6)
        for s, said in self.rows[-self.keep:]:
            style = "red" if s.error else ""
            table.add_row(str(s.index), safe_text(s.action), safe_text(said, style), f"{s.seconds:.1f}")
        return table

    def before_step(self, run: RunDir) -> None:
        if self.run is None:
            self.run = run
            self.metric = task_metric(run)
            self.rows = [self._row(run, s) for s in run.steps()[-self.keep:]]
            self.live.start()
            self.live.update(self._render())

    def after_step(self, run: RunDir, step: Step | None) -> None:
        if step is not None:
            self.rows.append(self._row(run, step))
        self.live.update(self._render())

    def _row(self, run: RunDir, step: Step) -> tuple[Step, str]:
        return step, step_summary(step, 200, before_write(run, step), self.metric)

    def on_end(self, run: RunDir) -> None:
        if self.run is not None:
            self.live.update(self._render())
            self.live.stop()
        self.console.print(safe_text(ending(run)))


def hooks_for(console: Console, quiet: bool) -> RunHooks:
    if quiet:
        return RunHooks()
    return LiveHooks(console) if console.is_terminal else PlainHooks()
