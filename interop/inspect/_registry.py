"""What inspect_ai loads through labcoat's ``inspect_ai`` entry point (pyproject.toml): the
sandbox types first, so a task module that cannot import still leaves them registered."""

import importlib.util

from interop.inspect import sandbox  # noqa: F401  (registers labcoat, labcoat-local, labcoat-docker)

if importlib.util.find_spec("interop.inspect.tasks") is not None:
    from interop.inspect import tasks  # noqa: F401  (registers labcoat/<task>)
