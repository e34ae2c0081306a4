"""Where the test suite's time goes, by cause: ``python -m pytest -p tests.costs ...``.

A pytest plugin that times, inside every test (setup, call and teardown), the calls that make
tests slow: opening and closing sandboxes, commands run in them, building the Docker image or a
task's Python environment, preparing a task, and ``time.sleep``. The time a test spends outside
all of them is ``in-process`` (its own computation, Textual, the stub servers). A call nested in
another timed call counts for the outer one only, so the causes of one test add up to its
duration. Each xdist worker appends one JSON line per test to ``$LABCOAT_COSTS`` (default
``.pytest_cache/costs.jsonl``); ``python -m tests.costs [FILE] [--top N]`` prints the per-cause
totals and the slowest tests with their causes.

Why a plugin and not ``--durations``: durations say which tests are slow, not why; the levers
(share a sandbox, drop a backend leg, wait on an event instead of sleeping, move a training
out of the fast set) depend on the why.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

DEFAULT = Path(".pytest_cache") / "costs.jsonl"

# cause -> the callables (module:qualname) whose time is that cause's
TIMED: dict[str, list[str]] = {
    "image build": ["sandbox.image:build_offline", "sandbox.image:build_dockerfile"],
    "python env build": ["sandbox.pyenv:_build"],
    "prepare": ["environments.task.prepare:prepare_task"],
    "sandbox open": ["sandbox.local:LocalSandbox.__init__", "sandbox.docker:DockerSandbox.__init__",
                     "sandbox.local:LocalSandbox._namespace"],
    "sandbox close": ["sandbox.local:LocalSandbox.close", "sandbox.docker:DockerSandbox.close"],
    "sandbox exec": ["sandbox.local:LocalSandbox.exec", "sandbox.docker:DockerSandbox.exec"],
    "sleep": ["time:sleep"],
}

_state = threading.local()
_totals: dict[str, float] = defaultdict(float)
_lock = threading.Lock()


def _timed(cause: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_state, "inside", False) or (
                cause == "sleep" and threading.current_thread() is not threading.main_thread()):
            return fn(*args, **kwargs)
        _state.inside = True
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                _totals[cause] += time.perf_counter() - start
            _state.inside = False
    return wrapper


def _install() -> None:
    for cause, targets in TIMED.items():
        for target in targets:
            module_name, _, qualname = target.partition(":")
            try:
                owner = importlib.import_module(module_name)
            except ImportError:
                continue
            *path, attr = qualname.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = getattr(owner, attr, None)
            if original is not None:
                setattr(owner, attr, _timed(cause, original))


def pytest_configure(config) -> None:
    _install()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _totals.clear()
    start = time.perf_counter()
    yield
    spent = time.perf_counter() - start
    causes = dict(_totals)
    causes["in-process"] = max(0.0, spent - sum(causes.values()))
    out = Path(os.environ.get("LABCOAT_COSTS", DEFAULT))
    out.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"test": item.nodeid, "seconds": round(spent, 3),
                       "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                       "causes": {k: round(v, 3) for k, v in causes.items() if v >= 0.0005}})
    with open(out, "a") as f:
        f.write(line + "\n")


def summarize(path: Path, top: int) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_cause: dict[str, float] = defaultdict(float)
    by_worker: dict[str, float] = defaultdict(float)
    for row in rows:
        by_worker[row["worker"]] += row["seconds"]
        for cause, seconds in row["causes"].items():
            by_cause[cause] += seconds
    total = sum(row["seconds"] for row in rows)
    workers = ", ".join(f"{w} {s:.0f} s" for w, s in sorted(by_worker.items()))
    lines = [f"{len(rows)} tests, {total:.0f} s of test time ({workers})", "",
             f"{'cause':<18} {'seconds':>8} {'share':>6}"]
    for cause, seconds in sorted(by_cause.items(), key=lambda kv: -kv[1]):
        lines.append(f"{cause:<18} {seconds:8.0f} {seconds / total:6.1%}")
    lines += ["", f"slowest {top}:"]
    for row in sorted(rows, key=lambda r: -r["seconds"])[:top]:
        main = ", ".join(f"{c} {s:.1f}" for c, s in sorted(row["causes"].items(), key=lambda kv: -kv[1])[:3])
        lines.append(f"{row['seconds']:7.1f} s  {row['test']}  ({main})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Summarise a costs file written by -p tests.costs.")
    parser.add_argument("file", nargs="?", type=Path, default=Path(os.environ.get("LABCOAT_COSTS", DEFAULT)))
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    print(summarize(args.file, args.top))


if __name__ == "__main__":
    main()
