"""MLAgentBench's ``runner.py`` flags, as labcoat says them.

A person coming from MLAgentBench types its flags (``--llm-name``, ``--resume-step``); click's
own suggestion for an unknown option is the nearest spelling (``--llm-name`` -> ``--max-time``),
which misleads. :data:`FLAGS` is the one table of what each flag is in labcoat: the CLI's error
for an unknown option quotes it (:func:`hint`), and ``docs/mlagentbench.md`` lists it. The two
whose values labcoat takes in another form are mapped (:func:`device`, :func:`python`).
"""

from __future__ import annotations

import re

#: MLAgentBench's runner.py flag -> what labcoat has for it
FLAGS: dict[str, str] = {
    "--task": "the TASK argument (a suite name or a task folder: labcoat run house-price)",
    "--log-dir": "--runs-dir (each run is a folder beneath it)",
    "--work-dir": "nothing: a run's workspace is in its run folder",
    "--max-steps": "--max-steps",
    "--max-time": "--max-time (seconds)",
    "--device": "--device (a GPU index N is cuda:N)",
    "--python": "--python (an absolute path; `python`/`python3` is the sandbox's own)",
    "--interactive": "labcoat tui (a person's own session), or a task folder you write",
    "--resume": "--fork RUN_DIR --at K (a new run from step K); --resume RUN_DIR continues a "
                "labcoat run in place",
    "--resume-step": "--at K, with --fork RUN_DIR",
    "--agent-type": "--agent (research | tree | baseline | langchain | replay)",
    "--llm-name": "--model PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5)",
    "--fast-llm-name": "--fast-model PROVIDER/MODEL",
    "--edit-script-llm-name": "--edit-model PROVIDER/MODEL",
    "--edit-script-llm-max-tokens": "no flag: Edit Script (AI)'s output is capped by the model's",
    "--agent-max-steps": "--max-steps",
    "--actions-remove-from-prompt": "no flag: the actions offered are the task's (see --enable-actions)",
    "--actions-add-to-prompt": "--enable-actions NAMES (actions off by default, as in MLAgentBench)",
    "--retrieval": "--enable-actions with the research log's actions",
    "--valid-format-entires": "--mode react|tools",
    "--max-steps-in-context": "--keep-steps N (steps left whole in the agent's context)",
    "--max-observation-steps-in-context": "--keep-steps N and --observation-cap N",
    "--max-retries": "--format-retries N",
    "--langchain-agent": "--agent langchain --model langchain/module:Class",
}


def hint(option: str) -> str | None:
    """What labcoat has for MLAgentBench's ``option`` (``--llm-name=x`` too), or None."""
    said = FLAGS.get(option.split("=", 1)[0])
    return f"{option.split('=', 1)[0]} is MLAgentBench's; in labcoat: {said}" if said else None


def device(value: str) -> str:
    """``--device`` as MLAgentBench gives it (a GPU index, ``0``) in labcoat's form (``cuda:0``)."""
    return f"cuda:{value}" if re.fullmatch(r"[0-9]+", value) else value


def python(value: str) -> str | None:
    """``--python`` as MLAgentBench gives it: a bare ``python``/``python3``/``python3.11`` is
    "the Python scripts run with", which in labcoat is the sandbox's own (None: no override; a
    host path found on PATH would mean nothing inside a Docker image); anything else unchanged."""
    if re.fullmatch(r"python(\d+(\.\d+)?)?", value):
        return None
    return value
