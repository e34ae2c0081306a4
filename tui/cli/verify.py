"""``labcoat verify RUN``: the run's test-exposure ledger checked against its chain, its trace and
records, and the task as it is now (:mod:`environments.reports.verify`); per split, what
reached the agent. Exit 1 when the ledger is broken, does not match the trace, or the task's
scorer or a split's data changed since the run; 0 otherwise."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from environments.untrusted.words import plural
from tui.cli.common import JSON_OPT, WIDE_OPT, Col, console, fail, print_table
from tui.terminal_text import safe_text


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_cmd)


def verify_cmd(
    run_dir: Path = typer.Argument(..., metavar="RUN", help="a run directory"),
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
) -> None:
    """Check a run's test-exposure ledger (exposure.jsonl) and say, per private split, what
    reached the agent: an unbroken hash chain, a line for every call the trace and the score
    records show (and none they do not), the scorer and split data the task has now. Exit 1
    when a check fails. The head hash printed pins the ledger: publish it with a result."""
    from environments.record.runs import RunReadError
    from environments.reports.verify import verify_run

    try:
        verdict = verify_run(run_dir)
    except (FileNotFoundError, RunReadError) as err:
        fail(str(err))
        raise  # unreachable: fail() exits
    if as_json:
        typer.echo(verdict.model_dump_json(indent=2))
    else:
        print_verdict(verdict, wide=wide)
    if not verdict.ok:
        raise typer.Exit(1)


def print_verdict(verdict, *, wide: bool = False) -> None:
    """The splits table (calls by the agent and the harness, what reached the agent), the
    problems, and one verdict line."""
    rows = [[s.name, str(s.agent), str(s.harness),
             plural(s.shown_to_agent, "result") if s.shown_to_agent else "nothing", s.about]
            for s in verdict.splits]
    console.print(safe_text(f"{verdict.run} ({verdict.task}): {plural(verdict.lines, 'ledger line')}"),
                  highlight=False)
    print_table("calls on each private split", [
        Col("split", key=True), Col("agent", justify="right"), Col("harness", justify="right"),
        Col("reached the agent", short="reached agent"), Col("about")], rows, wide=wide)
    for problem in verdict.problems:
        console.print(Text.assemble(("problem:", "red"), " ", safe_text(problem)), highlight=False)
    for note in verdict.notes:
        console.print(Text.assemble(("note:", "yellow"), " ", safe_text(note)), highlight=False)
    words = (verdict.summary().removeprefix("ledger: ") if verdict.ok
             else f"{plural(len(verdict.problems), 'problem')}, above")
    console.print(Text.assemble(("verified" if verdict.ok else "NOT verified", "green" if verdict.ok else "red"),
                                f": {words}"), highlight=False)
    console.print(safe_text(f"head {verdict.head} (publish it to pin this ledger)"), highlight=False)


def print_ledger(verdict) -> None:
    """One line beside another command's output (``labcoat score``, ``report tree``): ``ledger:
    intact, test not seen by the agent``, or the first problem (``labcoat verify`` says all)."""
    if verdict.ok:
        console.print(Text(verdict.summary(), style="yellow" if verdict.test_seen_by_agent else "green"))
        return
    console.print(Text.assemble(("ledger:", "red"), " ",
                                safe_text(verdict.summary().removeprefix("ledger: ")),
                                safe_text(f" (labcoat verify {verdict.path} says all)")), highlight=False)
