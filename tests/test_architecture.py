"""The rooms of ARCHITECTURE.md import only downwards, and the workbench never imports torch."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
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
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0 and "No module named" in proc.stderr:
        proc = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _contract(name_part: str) -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c for c in config["contracts"] if name_part in c["name"])


def test_the_independence_contract_names_every_method_package():
    """A new method package is covered as soon as it exists (a list that lags is no contract)."""
    packages = {f"methods.{p.name}" for p in (ROOT / "methods").iterdir()
                if (p / "__init__.py").is_file() and not p.name.startswith(("_", "."))}
    contract = _contract("method package is independent")
    assert contract["type"] == "independence" and set(contract["modules"]) == packages


def test_environments_modules_are_checked_for_circles():
    """The Environment registers the actions, which get an ActionContext: an action module
    importing the Environment again (even for a type hint) would close a circle."""
    contract = _contract("environments' floors and their modules import no circle")
    assert contract["type"] == "acyclic_siblings" and not contract.get("ignore_imports")
    floors = [p.name for p in (ROOT / "environments").iterdir() if (p / "__init__.py").is_file()]
    assert {"environments", *(f"environments.{f}" for f in floors if f != "in_sandbox")} == set(contract["ancestors"])


def test_environments_is_floors_and_each_floor_imports_only_the_floors_below():
    """No module at the top of environments/ but its __init__; every floor is in the layers
    contract (a new floor must be placed there); and no module of a floor imports its own
    floor's face (the face imports the floor's modules: that would be a circle)."""
    top = sorted(p.name for p in (ROOT / "environments").glob("*.py"))
    assert top == ["__init__.py"], top
    contract = _contract("environments' floors import only downwards")
    assert contract["type"] == "layers" and contract["containers"] == ["environments"]
    assert not contract.get("ignore_imports")
    floors = {p.name for p in (ROOT / "environments").iterdir() if (p / "__init__.py").is_file()}
    assert floors == set(contract["layers"])
    for floor in floors:
        modules = {p.stem for p in (ROOT / "environments" / floor).glob("*.py")}
        for path in (ROOT / "environments" / floor).glob("*.py"):
            if path.name == "__init__.py":
                continue
            for names in re.findall(rf"^\s*from environments\.{floor} import ([^\n]+)", path.read_text(), re.M):
                faced = {n.split(" as ")[0].strip() for n in names.split(",")} - modules
                assert not faced, f"{path.relative_to(ROOT)} imports {faced} from its own floor's face"


def test_every_room_and_the_model_layer_and_screens_are_checked_for_circles():
    contract = _contract("each room's modules import no circle")
    assert contract["type"] == "acyclic_siblings" and not contract.get("ignore_imports")
    assert set(contract["ancestors"]) == {"agent", "agent.models", "tui", "tui.screens", "sandbox"}


def test_reading_the_registry_and_the_workbench_never_imports_torch():
    code = (
        "import sys, methods.registry as r, agent.runner, environments.acting.environment, tui.cli\n"
        "tools = r.all_tools()\n"
        "[t.args_model.model_json_schema() for t in tools.values()]\n"
        "heavy = [m for m in ('torch', 'sklearn', 'scipy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(len(tools))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
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
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
