"""Pieces every ``labcoat`` command shares: consoles, common options, error exit.

Every console of the CLI comes from :func:`make_console`, a :class:`~tui.terminal_text.SafeConsole`:
run output, file names, task folders and model strings are untrusted, and none of them may
reach the terminal as a control sequence. Untrusted text is also never markup: it goes to rich
as a ``Text`` (``safe_text``), never inside a markup string.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from environments.untrusted.words import failure_text, gain, metric
from tui.terminal_text import SafeConsole, safe_text, visible


class CliConsole(SafeConsole):
    """The CLI's console: a :class:`SafeConsole` whose lines of text, when it writes to no
    terminal (a pipe, a log, a test's runner), are written whole: a log line broken at 80
    columns mid-phrase reads as two lines and defeats ``grep``. Tables are still laid out at
    the width (they need one); a terminal still wraps text between words."""

    def print(self, *objects, soft_wrap: bool | None = None, **kwargs) -> None:
        if soft_wrap is None and not self.is_terminal and all(isinstance(o, (str, Text)) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


def make_console(**kwargs) -> Console:
    """A console for the CLI (rich's ``Console`` arguments): one that shows the control
    characters in what it prints (``\\x1b``) instead of writing them to the terminal, and
    writes plain lines unbroken where no terminal reads them (:class:`CliConsole`)."""
    return CliConsole(**kwargs)


console = make_console()
err_console = make_console(stderr=True)


def echo(text: str, nl: bool = True) -> None:
    """``typer.echo`` for text people read that may quote untrusted words (a Markdown table, a
    workspace diff): control characters shown as escapes, like the consoles do."""
    typer.echo(visible(text), nl=nl)

#: what a value-taking flag shows when it names no metavar of its own (typer's ``<int>``)
METAVARS = {"<int>": "N", "<float>": "NUMBER", "<str>": "TEXT", "<path>": "PATH"}


def label_params(params: list, ctx) -> list:
    """``params`` with a metavar a person can read: none on a flag (``--score/--no-score``
    takes no value; typer would show ``<bool>``), ``N``/``NUMBER``/``TEXT``/``PATH`` on a
    value whose option named none. Arguments keep their name."""
    from typer.core import TyperOption

    for p in params:
        if not isinstance(p, TyperOption) or p.metavar is not None:
            continue
        p.metavar = "" if p.is_flag else METAVARS.get(p.display_type(ctx) or "", None)
    return params


class Group(TyperGroup):
    """labcoat's command group: every command's flags, its own and the help's, shown with the
    metavars of :func:`label_params` whoever declared them."""

    def get_params(self, ctx) -> list:
        return label_params(super().get_params(ctx), ctx)

    def get_command(self, ctx, cmd_name: str):
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, TyperGroup):
            label_params(command.get_params(ctx), ctx)
        return command

    def invoke(self, ctx):
        """An MLAgentBench flag (``--llm-name``) is answered with labcoat's, not with click's
        nearest spelling (``tui/cli/mlab_flags.py``)."""
        from tui.cli.mlab_flags import hint

        try:
            return super().invoke(ctx)
        except Exception as err:  # by name: typer vendors its own click (NoSuchOption is its)
            said = hint(err.option_name) if type(err).__name__ == "NoSuchOption" else None
            if said is None:
                raise
            raise type(err)(err.option_name, message=f"No such option: {said}", ctx=err.ctx) from None


SANDBOX_OPT = typer.Option(
    "auto", "--sandbox", metavar="BACKEND",
    help="auto | docker | local | none (none: actors' code runs on this machine unisolated; "
    "only when you name it)")
JSON_OPT = typer.Option(False, "--json", help="machine-readable output on stdout")
PYTHON_OPT = typer.Option(
    None, "--python", metavar="PATH", help="the interpreter the task's code runs with (local: a "
    "host interpreter, mounted read-only; docker: a path inside the image); the requirements a task "
    "declares are layered over it")
DEVICE_OPT = typer.Option(
    None, "--device", metavar="DEVICE", help="cpu | cuda | cuda:N: what the task's code sees "
    "(CUDA_VISIBLE_DEVICES; docker: --gpus); default: no GPU")
PASS_ENV_OPT = typer.Option(
    None, "--pass-env", metavar="NAME", help="let a task's prepare.py have this host variable "
    "(e.g. KAGGLE_KEY) if its task.toml asks for it (prepare env); repeatable; standing: "
    "$LABCOAT_PASS_ENV=NAME,NAME. A task folder's asking alone gets it nothing")


def fail(message: str, code: int = 2) -> None:
    """Say ``message`` (plain text: it may quote a path, a model string or a reply) and exit."""
    err_console.print(Text.assemble(("error:", "red"), " ", safe_text(message)))
    raise typer.Exit(code)


NO_MODEL = ("--agent research needs a model and no provider key is set: pass --model "
            "openai/gpt-4o (with OPENAI_API_KEY), --model anthropic/claude-sonnet-4-5 (with "
            "ANTHROPIC_API_KEY), or --model scripted/FILE; baseline/hparam runs without "
            "--agent research")


def isolating(kind: str) -> str:
    """The backend ``kind`` stands for here, or a clean exit saying how to get isolation (or
    that ``--sandbox none`` runs code unisolated) before any actor's code could run."""
    from sandbox import SandboxError, resolve_kind

    try:
        return resolve_kind(kind)
    except (SandboxError, ValueError) as err:
        fail(str(err))
        raise  # unreachable: fail() exits


def use_runtime(python: str | None, device: str | None) -> None:
    """``--python`` and ``--device`` for every sandbox this command opens (through
    ``$LABCOAT_PYTHON`` and ``$LABCOAT_DEVICE``, which ``environments/task/sandboxing.py`` reads);
    a device this machine lacks, or a relative interpreter path, is refused before anything
    starts."""
    import re

    from environments.task.sandboxing import DEVICE_ENV, PYTHON_ENV
    from sandbox.pyenv import PyEnvError, check_device
    from tui.cli import mlab_flags

    if device is not None:
        device = mlab_flags.device(device)  # MLAgentBench's --device 0 is cuda:0
        if not re.fullmatch(r"cpu|cuda(:[0-9]+)?", device):
            fail(f"--device {device}: give cpu, cuda or cuda:N")
        try:
            check_device(device)
        except PyEnvError as err:
            fail(str(err))
        os.environ[DEVICE_ENV] = device
    if python is not None:
        python = mlab_flags.python(python)  # MLAgentBench's --python python: the sandbox's own
    if python is not None:
        if not python.startswith("/"):
            fail(f"--python {python}: give the interpreter's absolute path")
        os.environ[PYTHON_ENV] = python


def pass_env(names: list[str] | None) -> None:
    """``--pass-env`` for every task this command prepares, in this process and the ones it
    starts (batch workers): added to ``$LABCOAT_PASS_ENV``, which ``environments/task/prepare.py``
    reads. A name that cannot be a variable's, here or in ``$LABCOAT_PASS_ENV``, is refused
    before anything starts."""
    import re

    from environments.task.prepare import PASS_ENV, allowed_env
    from environments.task.spec import TaskError

    bad = [n for n in names or () if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
    if bad:
        fail(f"--pass-env {bad[0]!r}: give an environment variable's name (e.g. KAGGLE_KEY)")
    try:
        allowed = allowed_env(names or ())
    except TaskError as err:
        fail(str(err))
    if names:
        os.environ[PASS_ENV] = ",".join(sorted(allowed))


def known_task(text: str) -> None:
    """Exit with a usage error, before anything starts, unless ``text`` names one task: a
    suite task (``suite:NAME`` always), or a folder; a name that is both is refused naming
    both, and a near miss names the task meant (``digit``: did you mean digits?)."""
    from environments.task.spec import TaskError
    from environments.task.suite import locate_task

    try:
        locate_task(text)
    except TaskError as err:
        fail(f"{err} (labcoat tasks lists the suite)")


num = metric  # a measurement for people (environments/reports/words.py); --json keeps full precision


def improvement_text(s) -> str:
    """A score's improvement as people should read it: with its 95% interval when the score
    has one (a timed task's paired comparison), so a no-op's +8.2% [−3.1%, +19.5%] is not
    taken for a result."""
    if s.improvement is None:
        return "n/a"
    interval = getattr(s, "interval", None)
    if interval is None:
        return gain(s.improvement)
    low, high = interval
    return f"{gain(s.improvement)} [95% CI {gain(low)}, {gain(high)}]"


def print_score(s, so_far: int | None = None) -> None:
    """The score line: value, baseline, improvement (with its interval when it has one),
    threshold, verdict; of a run stopped before its end (``so_far``: its last step), no
    verdict but what the score is of."""
    if s.value is None:
        if s.failure == "not_scored":  # a task without eval.py: nothing failed
            console.print(safe_text(f"score: {s.detail}"))
            return
        if s.failure == "infrastructure":  # the machine's failure: nothing of the actor's judged
            console.print(Text.assemble("score: ", ("not scored", "yellow"),
                                        safe_text(f" (infrastructure failure): {failure_text(s.detail)}")))
            return
        console.print(Text.assemble("score: ", ("failed", "red"),
                                    safe_text(f" ({s.failure}) {failure_text(s.detail)}")))
        return
    imp = improvement_text(s)
    verdict = ("success", "green") if s.success else ("below threshold", "yellow")
    if so_far is not None:  # an interrupted run: the workspace as its last step left it
        verdict = (f"no verdict: interrupted after step {so_far}, the score of its workspace so far", "yellow")
    console.print(Text.assemble(f"score: {s.metric} = {num(s.value)} (baseline {num(s.baseline)}, "
                                f"improvement {imp}, threshold {s.threshold:.0%}) → ", verdict))
    if getattr(s, "baseline_source", None):  # which baseline, and why (environments/scoring/baselines.py)
        console.print(safe_text(f"  baseline: {s.baseline_source} ({s.baseline_why[:400]})"))


WIDE_MAX = 240
WIDE_OPT = typer.Option(False, "--wide", help="every column, however wide the terminal")


@dataclass(frozen=True)
class Col:
    """A column of a table people read: ``key`` names are typed back (never cut or folded);
    ``extra`` columns give way to ``--wide`` when the terminal is too narrow for them;
    ``short`` is the header then (``avail`` for ``available``)."""

    name: str
    key: bool = False
    extra: bool = False
    justify: str = "left"
    short: str | None = None


Cell = str | Text  # a Text cell is the caller's, built with safe_text (a coloured yes/no)


def print_table(title: str, cols: list[Col], rows: list[list[Cell]], *, wide: bool = False) -> None:
    """Print a table that reads in the terminal (80 columns in a pipe); ``wide``: every
    column at its natural width, however wide that is (for ``less -S`` or a wide window).
    Title, names and cells are plain text (task folders, file names and model strings are
    untrusted): never markup, control characters shown as escapes."""
    table, needed = fitted_table(title, cols, rows, wide=wide)
    # print() caps at the console's width; long summaries still fold past WIDE_MAX
    out = make_console(width=max(console.width, min(needed, WIDE_MAX))) if wide else console
    out.print(table)


def clip(text: str, width: int) -> str:
    """``text`` on one line within ``width``, cut between words with ``…`` (a word longer
    than the whole width is cut inside)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: max(1, width - 1)]
    if text[len(cut)] != " " and " " in cut:  # the cut fell inside a word: drop the word
        cut = cut[: cut.rindex(" ")].rstrip(" ,;:(")
    return cut + "…"


FOLD_PAST = 24  # a cell's word longer than this (a path, a model file) may fold in a narrow table


def longest_word(text: str) -> int:
    """The width a header needs so that it wraps only between its words."""
    return max((len(w) for w in text.split()), default=0)


def fitted_table(title: str, cols: list[Col], rows: list[list[Cell]], *, wide: bool = False,
                 width: int | None = None) -> tuple[Table, int]:
    """A table that reads at ``width`` (default: the terminal's), and the width it needs whole.

    When every column does not fit at its natural width, the ``extra`` columns are left out,
    headers take their ``short`` form (the largest saving first) until the rest fits, and
    when even that is too wide the rightmost other columns are left out too; the caption
    says ``--wide`` shows them. Key columns keep their full width, the others fold their
    cells (a word past ``FOLD_PAST`` characters, a path, inside), and no header is broken
    inside a word (``improv/ement``): it wraps between words.
    """
    width = width or console.width
    cols = [replace(c, name=visible(c.name), short=visible(c.short) if c.short else None) for c in cols]
    cells = [[c if isinstance(c, Text) else Text(visible(c)) for c in r] for r in rows]
    natural = [max([len(c.name), *(r[i].cell_len for r in cells)]) for i, c in enumerate(cols)]
    needed = sum(natural) + 3 * len(cols) + 1
    narrow = not wide and needed > width
    keep = [i for i, c in enumerate(cols) if not (narrow and c.extra)]
    headers = [c.name for c in cols]
    if narrow:  # short headers, the largest saving first, until the table fits (or none is left)
        def least_of(i: int, header: str) -> int:  # a header's words whole; a cell may fold
            return max([longest_word(header), *(min(longest_word(r[i].plain), FOLD_PAST) for r in cells)])

        least = [natural[i] if c.key else least_of(i, c.name) for i, c in enumerate(cols)]

        def fits() -> bool:
            return sum(least[i] for i in keep) + 3 * len(keep) + 1 <= width

        for i in sorted((i for i in keep if cols[i].short), key=lambda i: len(cols[i].short) - len(cols[i].name)):
            if fits():
                break
            headers[i] = cols[i].short
            least[i] = least_of(i, headers[i])
        while not fits() and any(not cols[i].key for i in keep):  # else rich drops one unsaid
            keep.remove(max(i for i in keep if not cols[i].key))
        # rich's own shrinking ignores minimum widths, so the widths are set here: each column
        # its least, then what is left to the ones that would use it, the nearest to whole first
        set_width = {i: least[i] for i in keep}
        spare = width - (sum(least[i] for i in keep) + 3 * len(keep) + 1)
        whole = {i: max([len(headers[i]), *(r[i].cell_len for r in cells)]) for i in keep}
        for i in sorted(keep, key=lambda i: whole[i] - least[i]):
            more = max(0, min(spare, whole[i] - set_width[i]))
            set_width[i] += more
            spare -= more
    table = Table(title=safe_text(title), box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD)
    for i in keep:
        c = cols[i]
        header = Text(headers[i])
        fixed = set_width[i] if narrow else None
        if c.key:
            table.add_column(header, no_wrap=True, min_width=natural[i], width=fixed, justify=c.justify)
        else:
            table.add_column(header, overflow="fold", min_width=longest_word(header.plain), width=fixed,
                             justify=c.justify)
    for r in cells:
        table.add_row(*(r[i] for i in keep))
    left_out = [c.name for i, c in enumerate(cols) if i not in keep]
    if left_out:
        table.caption = Text(f"--wide adds: {', '.join(left_out)}")
    return table, needed


@contextmanager
def stdout_for_json_only(active: bool = True) -> Iterator[None]:
    """While a ``--json`` command works, send whatever else reaches stdout to stderr.

    A ``--json`` stdout must hold one document a script can parse, but libraries print there
    on their own (Ray's driver announces a dead node on it, from C++ as well as Python), so the
    file descriptor itself is pointed at stderr until the work is done.
    """
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
