"""Shared fixtures: a tiny task folder, sandboxes, and an isolated LABCOAT_HOME."""

from __future__ import annotations

import os

# Before numpy/scipy load: OpenBLAS's own thread pool once deadlocked a test process here
# (blas_thread_init waiting on its mutex, in a scipy LU, after hundreds of other tests in the
# same xdist worker). Two workers share two cores, so BLAS threads only contend anyway; the
# sandboxed scripts build their environment from nothing and are not affected.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


def session_home(tmp_path_factory) -> Path:
    """The test session's ``LABCOAT_HOME``: one folder that every xdist worker of this session
    shares (the parent of a worker's own temporary folder), so that a suite task is prepared,
    a task's Python environment built and a baseline measured once per session rather than
    once per worker or module. What lives there is written under labcoat's own locks
    (``prepare_task``, ``sandbox.pyenv``) or atomically (stored baselines), as two runs of
    labcoat sharing one home need anyway; a test that wants a home of its own sets one."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return shared / "labcoat-home"


@pytest.fixture(scope="session", autouse=True)
def _labcoat_home(tmp_path_factory):
    """Prepared tasks and baselines go to the session's folder, never the user's cache: set for
    the whole session, so module- and session-scoped fixtures see it too (a test that sets its
    own with ``monkeypatch`` gets this one back after it)."""
    home = session_home(tmp_path_factory)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABCOAT_HOME", str(home))
        yield home


@pytest.fixture(autouse=True)
def _docker_image(request):
    """Every test marked ``docker`` gets the sandbox image, built once if the engine lacks it."""
    if request.node.get_closest_marker("docker") is not None:
        from tests.sandbox.backends import require_docker_image

        require_docker_image()


def write_task(root: Path, *, toml: str | None = None, eval_body: str | None = None,
               read_only: str = "data.txt\n", files: dict[str, str] | None = None) -> Path:
    """A minimal valid task: env/ with a script and a data file, an eval reading result.txt."""
    (root / "env").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "env" / "data.txt").write_text("1 2 3\n")
    (root / "env" / "train.py").write_text(
        "nums = [int(x) for x in open('data.txt').read().split()]\n"
        "open('result.txt', 'w').write(str(sum(nums)))\nprint('sum', sum(nums))\n"
    )
    (root / "scripts" / "research_problem.txt").write_text("Make result.txt as large as you can.")
    (root / "scripts" / "read_only_files.txt").write_text(read_only)
    (root / "scripts" / "eval.py").write_text(eval_body or textwrap.dedent("""
        import os
        def get_score(submission_folder):
            path = os.path.join(submission_folder, "result.txt")
            if not os.path.exists(path):
                raise FileNotFoundError("no result.txt")
            return float(open(path).read())
    """))
    if toml is None:
        toml = 'metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n'
    (root / "task.toml").write_text(toml)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def tiny_task(tmp_path) -> Path:
    return write_task(tmp_path / "tiny", files={"reference/train.py": "open('result.txt','w').write('60')\n"})


@pytest.fixture(scope="session")
def prepared_suite_task(tmp_path_factory):
    """``prepared_suite_task(name)``: suite task ``name`` prepared once per test session (in the
    session's shared home, whichever worker asks first), shared by the parametrised suite checks,
    the task-specific files and the runs the tests start, so a task's data is generated once
    however many modules look at it. Tests must not write into it: they copy ``env/`` to a
    workspace (``tests.task_checks.make_workspace``)."""
    from tests import task_checks as th

    cache = session_home(tmp_path_factory) / "tasks"
    prepared: dict = {}

    def get(name: str):
        if name not in prepared:
            prepared[name] = th.prepared_task(name, cache)
        return prepared[name]

    return get


def pytest_collection_modifyitems(config, items):
    """A ``serial`` test is a ``slow`` one: README's fast set runs on two workers and must never
    hold a test that is timed against the clock."""
    wrong = [item.nodeid for item in items
             if item.get_closest_marker("serial") and not item.get_closest_marker("slow")]
    if wrong:
        raise pytest.UsageError("marked serial but not slow (the fast set runs on two workers): "
                                + ", ".join(wrong))
