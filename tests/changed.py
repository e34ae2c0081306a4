"""The short loop: run only the tests of what a change touches. ``python -m tests.changed``.

Picks, for every file changed since ``--base`` (default: the merge base with ``origin/main``
when there is one, else ``HEAD``; uncommitted and untracked files included):

- a changed test file itself (``tests/**/test_*.py``);
- the test files that import a changed module by name (``from environments.task.spec import``,
  ``import sandbox.local``, ``from agent.models import openai_model``), and the test file
  that mirrors it (``agent/runner.py`` -> ``tests/agent/test_runner*.py``);
- for a changed file of a suite task (``environments/tasks/NAME/...``), the suite checks and
  the test files that name the task.

A changed helper under ``tests/`` (a conftest, ``task_checks.py``) selects the test files that
import it, or its whole folder for a conftest. Then it runs README's fast-set command on those
files (``-m "not slow"``, two workers); ``--list`` prints them instead, and anything after
``--`` goes to pytest (``-- -m slow`` for the slow tests of the same files).

It follows imports one level: a test that reaches a changed module only through another module
is not picked. It is the loop while working, not a replacement for the fast set before pushing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "environments", "sandbox", "methods", "tui")
FAST = ["-m", "not slow", "-n", "2", "--dist", "loadfile"]


def _git(*args: str) -> list[str]:
    out = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def default_base() -> str:
    merged = _git("merge-base", "HEAD", "origin/main")
    return merged[0] if merged else "HEAD"


def changed_files(base: str) -> list[str]:
    """Paths relative to the repository: changed since ``base``, staged or not, and untracked."""
    files = set(_git("diff", "--name-only", base)) | set(_git("ls-files", "--others", "--exclude-standard"))
    return sorted(files)


def module_of(path: str) -> str | None:
    """``agent/models/openai_model.py`` -> ``agent.models.openai_model``; None outside the rooms."""
    p = Path(path)
    if p.suffix != ".py" or p.parts[0] not in PACKAGES + ("tests",):
        return None
    parts = list(p.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(text: str, module: str) -> bool:
    """Whether ``text`` imports ``module`` (or a name from it, or it from its package)."""
    package, _, leaf = module.rpartition(".")
    patterns = [rf"^\s*(from|import)\s+{re.escape(module)}\b"]
    if package:
        patterns.append(rf"^\s*from\s+{re.escape(package)}\s+import\s+[^\n]*\b{re.escape(leaf)}\b")
    return any(re.search(p, text, re.MULTILINE) for p in patterns)


def select(changed: list[str], tests: dict[str, str]) -> list[str]:
    """The test files (keys of ``tests``: path -> text) that the ``changed`` paths touch."""
    picked: set[str] = set()
    for path in changed:
        p = Path(path)
        if path in tests:
            picked.add(path)
            continue
        if p.name == "conftest.py" and p.parts[0] == "tests":
            picked |= {t for t in tests if Path(t).is_relative_to(p.parent)}
            continue
        if p.parts[:2] == ("environments", "tasks") and len(p.parts) > 2:
            name = p.parts[2]
            picked.add("tests/environments/test_suite_tasks.py")
            picked |= {t for t, text in tests.items() if f'"{name}"' in text}
            continue
        module = module_of(path)
        if module is None:
            continue
        picked |= {t for t, text in tests.items() if _imports(text, module)}
        if p.parts[0] in PACKAGES:
            mirror = Path("tests", *p.parts[:-1]) if len(p.parts) > 1 else Path("tests")
            picked |= {t for t in tests if Path(t).parent == mirror
                       and Path(t).name.startswith(f"test_{p.stem}")}
    return sorted(t for t in picked if t in tests)


def test_files() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(errors="replace")
            for p in sorted((ROOT / "tests").rglob("test_*.py")) if "benchmarks" not in p.parts}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="compare with this commit (default: the merge base with origin/main, else HEAD)")
    parser.add_argument("--list", action="store_true", help="print the test files, run nothing")
    args = parser.parse_args(argv)
    files = select(changed_files(args.base or default_base()), test_files())
    if args.list:
        print("\n".join(files))
        return 0
    if not files:
        print("no test file touches what changed (python -m tests.changed --list)")
        return 0
    print(f"{len(files)} test file(s): {' '.join(files)}", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", "-q", *FAST, *extra, *files], cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
