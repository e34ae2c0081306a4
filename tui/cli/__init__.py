"""The headless ``labcoat`` command line: typer and rich only, never Textual.

It runs on machines (CI, clusters) where nobody looks at a terminal UI, so it must not pay
Textual's import or depend on it; import-linter holds that. ``labcoat tui`` loads the
workbench by name when that command runs (``tui/cli/launch.py``).
"""

from tui.cli.main import app, main

__all__ = ["app", "main"]
