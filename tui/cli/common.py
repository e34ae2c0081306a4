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

from tui.terminal_text import SafeConsole, safe_text, visible


def make_console(**kwargs) -> Console:
    """A console for the CLI (rich's ``Console`` arguments): one that shows the control
    characters in what it prints (``\\x1b``) instead of writing them to the terminal."""
    return SafeConsole(**kwargs)


console = make_console()
err_console = make_console(stderr=True)


def echo(text: str, nl: bool = True) -> None:
    """``typer.echo`` for text people read that may quote untrusted words (a Markdown table, a
    workspace diff): control characters shown as escapes, like the consoles do."""
    typer.echo(visible(text), nl=nl)

SANDBOX_OPT = typer.Option(
    "auto", "--sandbox",
    help="auto | docker | local | none (none: actors' code runs on this machine unisolated; "
    "only when you name it)")
JSON_OPT = typer.Option(False, "--json", help="machine-readable output on stdout")


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


def num(x: float | None) -> str:
    """A measurement for people: four significant digits, thousands without an exponent
    (``45,440`` rather than ``4.544e+04``); ``--json`` keeps full precision."""
    if x is None:
        return "n/a"
    if abs(x) >= 1e4:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def print_score(s) -> None:
    if s.value is None:
        console.print(Text.assemble("score: ", ("failed", "red"),
                                    safe_text(f" ({s.failure}) {s.detail[:500]}")))
        return
    imp = "n/a" if s.improvement is None else f"{s.improvement:+.1%}"
    verdict = ("success", "green") if s.success else ("below threshold", "yellow")
    console.print(Text.assemble(f"score: {s.metric} = {num(s.value)} (baseline {num(s.baseline)}, "
                                f"improvement {imp}, threshold {s.threshold:.0%}) → ", verdict))


WIDE_MAX = 240
WIDE_OPT = typer.Option(False, "--wide", help="every column, however wide the terminal")


@dataclass(frozen=True)
class Col:
    """A column of a table people read: ``key`` names are typed back (never cut or folded);
    ``extra`` columns give way to ``--wide`` when the terminal is too narrow for them."""

    name: str
    key: bool = False
    extra: bool = False
    justify: str = "left"


def print_table(title: str, cols: list[Col], rows: list[list[str]], *, wide: bool = False) -> None:
    """Print a table that reads in the terminal (80 columns in a pipe); ``wide``: every
    column at its natural width, however wide that is (for ``less -S`` or a wide window).
    Title, names and cells are plain text (task folders, file names and model strings are
    untrusted): never markup, control characters shown as escapes."""
    table, needed = fitted_table(title, cols, rows, wide=wide)
    # print() caps at the console's width; long summaries still fold past WIDE_MAX
    out = make_console(width=max(console.width, min(needed, WIDE_MAX))) if wide else console
    out.print(table)


def fitted_table(title: str, cols: list[Col], rows: list[list[str]], *, wide: bool = False,
                 width: int | None = None) -> tuple[Table, int]:
    """A table that reads at ``width`` (default: the terminal's), and the width it needs whole.

    When every column does not fit at its natural width, the ``extra`` ones are left out (the
    caption says ``--wide`` shows them); key columns keep their full width, the others fold.
    """
    width = width or console.width
    cols = [replace(c, name=visible(c.name)) for c in cols]
    rows = [[visible(cell) for cell in r] for r in rows]  # widths as they will be shown
    natural = [max([len(c.name), *(len(r[i]) for r in rows)]) for i, c in enumerate(cols)]
    needed = sum(natural) + 3 * len(cols) + 1
    keep = [i for i, c in enumerate(cols) if wide or needed <= width or not c.extra]
    table = Table(title=safe_text(title),
                  box=box.SIMPLE_HEAD if not wide and needed > width else box.HEAVY_HEAD)
    for i in keep:
        c = cols[i]
        if c.key:
            table.add_column(Text(c.name), no_wrap=True, min_width=natural[i], justify=c.justify)
        else:
            table.add_column(Text(c.name), overflow="fold", justify=c.justify)
    for r in rows:
        table.add_row(*(Text(r[i]) for i in keep))
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
