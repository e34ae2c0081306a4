"""Shared pieces of the agent tests: well-formed replies and running one episode."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent.factory import make_actor
from agent.runner import Budgets, create_run, drive

SEP = "\n---8<---\n"


def react(action: str, args: dict, thought: str = "next step", plan: str = "1. work (in progress)") -> str:
    return (f"Reflection: ok\nResearch Plan and Status: {plan}\nFact Check: none\nThought: {thought}\n"
            f"Action: {action}\nAction Input: {json.dumps(args)}")


def write_replies(path: Path, replies: list[str]) -> str:
    path.write_text(SEP.join(replies) + "\n")
    return f"scripted/{path}"


def episode(task, tmp_path: Path, model: str, budgets: Budgets | None = None, agent: str | None = None,
            **actor_kw):
    actor = make_actor(agent, model=model, **actor_kw)
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model,
                           budgets=budgets)
    meta = drive(run, spec, actor)
    return run, spec, meta


def files_containing(root: Path, needle: str) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and needle.encode() in p.read_bytes():
            hits.append(str(p.relative_to(root)))
    return hits


def children(pid: int) -> set[int]:
    """Live descendants of ``pid`` (read from /proc)."""
    found, frontier = set(), {pid}
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == parent and fields[0] != "Z" and int(entry) not in found:
                found.add(int(entry))
                frontier.add(int(entry))
    return found
