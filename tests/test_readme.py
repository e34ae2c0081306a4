"""README.md opens with the two commands a new user types; CI runs them exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The command lines of the README's first shell block (comments left out)."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md must open with a ```bash block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_the_readme_opens_with_an_install_and_run_and_an_install_and_test_command():
    run, test = readme_commands()
    assert "pip install" in run and "labcoat run" in run
    assert "pip install" in test and "pytest" in test


def test_ci_runs_the_readme_commands_exactly_as_written():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in readme_commands():
        assert any(line.startswith(command + " ") or line == command for line in ci), command


def test_ci_runs_every_test_and_never_skips_docker():
    """The fast set (not slow), then the slow set on two workers (slow and not serial), then the
    serial set alone: every test is in one of the three. And CI requires the Docker tests to
    run whatever ``docker info`` said: an engine that failed to start fails CI."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert '-m "not slow"' in ci and '-m "slow and not serial" -n 2' in ci and "-m serial " in ci
    assert "\nexport LABCOAT_REQUIRE_DOCKER=1\n" in ci
