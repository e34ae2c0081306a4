"""A command's ``python`` (and the tools of its task's environment) is the sandbox's interpreter.

MLAgentBench's scripts run tools by name (prepare.py runs ``kaggle``; a train.py may run
``python other.py``): with only the image's ``/usr/bin`` on ``PATH`` they got the bare system
Python, or nothing, instead of the task's environment (``sandbox/pyenv.py``).
"""

from __future__ import annotations

import pytest

from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox


@pytest.mark.parametrize("backend", [p for p in BACKEND_PARAMS if p.id != "local-bundled-bwrap"])
def test_python_on_path_is_the_sandboxes_interpreter(backend, tmp_path):
    with make_sandbox(backend, tmp_path) as sb:
        r = sb.exec(["sh", "-c", "command -v python; python -c 'import sys; print(sys.executable)'"])
        assert r.ok, r.stderr
        found, executable = r.stdout.split()
        assert found == sb.python
        assert executable == sb.python
