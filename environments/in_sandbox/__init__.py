"""Programs that run inside a sandbox, kept as real modules and sent there as source.

Each module here is stdlib-only and runs as a script (``python -I -c <source>``: the workspace
is never on ``sys.path``), the way the local backend sends :mod:`sandbox.supervisor`. Keeping
them as modules rather than strings lets the import contracts and the linters read them and
lets tests call their functions in-process; ``tests/environments/test_in_sandbox.py`` also holds
them to the standard library (a sandbox imports nothing of labcoat's).

* :mod:`.eval_runner` and :mod:`.eval_child`: the trusted phase's nonce'd runner and the child
  that imports the task's ``eval.py`` (``environments/scoring/evaluate.py``);
* :mod:`.produce_runner`: the submission phase, ``produce.py`` (``environments/scoring/submission.py``);
* :mod:`.oracle_runner`: an interactive task's oracle (``environments/scoring/submission.py``);
* :mod:`.repl_server`: one call of the Python REPL action (``environments/acting/repl.py``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType


def source(module: ModuleType) -> str:
    """The text a sandbox runs: the module's own file, read once by the host."""
    return Path(module.__file__).read_text()
