"""Writes ``logs/``: MLAgentBench log folders made by MLAgentBench's own code.

How the fixtures were made (run again the same way to refresh them)::

    git clone https://github.com/snap-stanford/MLAgentBench /tmp/MLAgentBench   # 5d71205 was used
    python tests/environments/mlab_logs/make.py /tmp/MLAgentBench

For each run below this script starts MLAgentBench's ``runner.py`` (``python -u -m
MLAgentBench.runner ...``) from a copy of the checkout's ``MLAgentBench/`` package, with its
output sent to ``LOG_DIR/log`` as ``multi_run_experiment.sh`` sends it (``> $folder/$ts/log
2>&1``). Its ``Environment``, ``Agent``/``ResearchAgent`` and actions run as they are; only what
needs the network or packages this machine lacks is stubbed (the LLM APIs, tiktoken,
transformers, torch, dacite, langchain), and the LLM's replies are the scripted ones of
:data:`RUNS` (an edit's taking 1.1 s, so that two edits' backups have two names). The benchmark it runs is ``price-task/`` here (this project's own tiny task,
copied into the copy's ``benchmarks/``). Nothing of MLAgentBench is kept in this project: only
the files its runs wrote, with the temporary folder's path written as ``/mlab``.

No test runs this script: the tests read ``logs/`` only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASK = HERE / "price-task"
OUT = HERE / "logs"


def _reply(thought: str, action: str, action_input: dict) -> str:
    """One ResearchAgent reply in the format its prompt asks for."""
    return (f"Reflection: {thought}\nResearch Plan and Status: 1. {thought}\n"
            f"Fact Check: none\nThought: {thought}\nAction: {action}\n"
            f"Action Input: {json.dumps(action_input)}\n")


IMPROVED = "```python\nwith open('submission.csv', 'w') as f:\n    f.write('Id,SalePrice\\n1,10\\n2,20\\n3,31\\n')\n```"
SLOW = "```python\nimport time\ntime.sleep(30)\n```"
LIST = _reply("look around", "List Files", {"dir_path": "."})
EDIT = _reply("write the predictions", "Edit Script (AI)",
              {"script_name": "train.py", "edit_instruction": "predict each price", "save_name": "train.py"})
RUN = _reply("run it", "Execute Script", {"script_name": "train.py"})
UNDO = _reply("back to the first", "Undo Edit Script", {"script_name": "train.py"})
FINAL = _reply("done", "Final Answer", {"final_answer": "predicted each price from train.csv"})

#: name -> (runner arguments, the LLM's replies in order: agent turns and Edit Script's code)
RUNS: dict[str, tuple[list[str], list[str]]] = {
    # baseline.sh's agent: Execute Script train.py, then Final Answer "Done!" (no LLM)
    "agent": (["--agent-type", "Agent"], []),
    # a ResearchAgent that edits, runs and answers (edit model apart from the agent's)
    "research": (["--llm-name", "claude-2.1", "--edit-script-llm-name", "gpt-4-0613",
                  "--fast-llm-name", "claude-2.1", "--max-steps", "10"],
                 [LIST, EDIT, IMPROVED, RUN, FINAL]),
    # two edits, then an undo: the undo store (backup/) holds one backup at the end
    "undo": (["--llm-name", "claude-2.1", "--edit-script-llm-name", "claude-2.1", "--max-steps", "10"],
             [EDIT, IMPROVED, EDIT, IMPROVED, UNDO, FINAL]),
    # stopped by MLAgentBench's step limit
    "max-steps": (["--llm-name", "gpt-4-0125-preview", "--max-steps", "2"], [LIST, LIST, LIST]),
    # stopped by MLAgentBench's time limit (SIGALRM in a slow Execute Script)
    "max-time": (["--llm-name", "claude-2.1", "--edit-script-llm-name", "claude-2.1",
                  "--max-time", "3"], [EDIT, SLOW, RUN, FINAL]),
}

STUBS = '''
import importlib.abc, importlib.machinery, json, os, sys, types

class _Any:
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return _Any()
    def __getattr__(self, name): return _Any()

class _Module(types.ModuleType):
    __path__ = []
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (_Any,), {})
        setattr(self, name, value)
        return value

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    PREFIXES = ("anthropic", "tiktoken", "transformers", "torch", "dacite", "langchain",
                "langchain_anthropic", "openai", "vertexai", "helm", "google")
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.PREFIXES:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        return _Module(spec.name)
    def exec_module(self, module):
        if module.__name__ == "anthropic":
            module.AI_PROMPT, module.HUMAN_PROMPT = "\\n\\nAssistant:", "\\n\\nHuman:"

sys.meta_path.insert(0, _Finder())
replies = json.loads(os.environ["MLAB_REPLIES"])

def complete_text(prompt, log_file=None, model=None, **kwargs):
    reply = replies.pop(0)
    if reply.startswith("```python"):  # an edit: its backup is named by the second
        import time
        time.sleep(1.1)
    return reply

import MLAgentBench.LLM as LLM
import MLAgentBench.high_level_actions as hl
import MLAgentBench.agents.agent as agent
import MLAgentBench.agents.agent_research as research
for m in (LLM, hl, agent, research):
    for name in ("complete_text", "complete_text_fast"):
        if hasattr(m, name):
            setattr(m, name, complete_text)
import runpy
runpy.run_module("MLAgentBench.runner", run_name="__main__", alter_sys=True)
'''


def make(checkout: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pkg = root / "MLAgentBench"
        shutil.copytree(checkout / "MLAgentBench", pkg,
                        ignore=shutil.ignore_patterns("benchmarks", "Auto-GPT", "*.pyc"))
        (pkg / "benchmarks").mkdir()
        (pkg / "benchmarks" / "tasks.json").write_text("{}")
        shutil.copytree(TASK, pkg / "benchmarks" / "price-task")
        (root / "stubbed_runner.py").write_text(STUBS)
        shutil.rmtree(OUT, ignore_errors=True)
        for name, (extra, replies) in RUNS.items():
            log_dir = root / "logs" / name / "1700000000"
            log_dir.mkdir(parents=True)
            argv = [sys.executable, "-u", "stubbed_runner.py", "--python", sys.executable,
                    "--task", "price-task", "--device", "0", "--log-dir", str(log_dir),
                    "--work-dir", str(root / "workspaces" / name), *extra]
            with open(log_dir / "log", "w") as out:
                subprocess.run(argv, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                               env={**os.environ, "MLAB_REPLIES": json.dumps(replies),
                                    "PYTHONPATH": str(root)}, timeout=120)
            dest = OUT / name
            shutil.copytree(log_dir, dest)
            for path in dest.rglob("*"):
                if path.is_file() and path.suffix not in (".whl",):
                    try:
                        text = path.read_text()
                    except UnicodeDecodeError:
                        continue
                    path.write_text(text.replace(sys.executable, "/usr/bin/python")
                                    .replace(str(root), "/mlab"))
            print(name, sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())[:8])


if __name__ == "__main__":
    make(Path(sys.argv[1]).resolve())
