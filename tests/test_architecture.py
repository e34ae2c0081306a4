"""The rooms of ARCHITECTURE.md import only downwards, and the workbench never imports torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ["tui", "agent", "environments", "sandbox", "methods"]
ALLOWED = {
    "tui": {"tui", "agent", "environments", "sandbox", "methods.registry", "methods.toolspec"},
    "agent": {"agent", "environments", "sandbox", "methods.toolspec"},
    "environments": {"environments", "sandbox", "methods.registry", "methods.toolspec"},
    "sandbox": {"sandbox"},
    "methods": {"methods"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_rooms_import_only_what_architecture_allows():
    """AST scan (catches imports inside functions too, which import-linter also sees)."""
    violations = []
    for room in ROOMS:
        for path in (ROOT / room).rglob("*.py"):
            if path.is_relative_to(ROOT / "environments" / "tasks"):
                continue  # task scripts run inside the sandbox, not in the workbench
            for line, module in _imports(path):
                top = module.split(".")[0]
                if top not in ROOMS:
                    continue
                if not any(module == a or module.startswith(a + ".") for a in ALLOWED[room]):
                    violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert violations == []


def test_import_linter_contracts_hold():
    proc = subprocess.run([sys.executable, "-m", "importlinter.cli", "--config", "pyproject.toml"],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0 and "No module named" in proc.stderr:
        proc = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_reading_the_registry_and_the_workbench_never_imports_torch():
    code = (
        "import sys, methods.registry as r, agent.runner, environments.environment, tui.cli\n"
        "tools = r.all_tools()\n"
        "[t.args_model.model_json_schema() for t in tools.values()]\n"
        "heavy = [m for m in ('torch', 'sklearn', 'scipy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(len(tools))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_headless_cli_runs_without_loading_textual():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from tui.cli import app\n"
        "for argv in (['--help'], ['tasks', '--json'], ['run', '--help'], ['tui', '--help']):\n"
        "    res = CliRunner().invoke(app, argv)\n"
        "    assert res.exit_code == 0, (argv, res.output)\n"
        "assert 'textual' not in sys.modules, sorted(m for m in sys.modules if 'textual' in m)[:5]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
