"""The seam between the host and a live sandbox: the host never touches a workspace by path.

Scoring keeps a sandbox open across a timed task's repeats and re-lays its workspace between
them; it copies a submission's outputs and lays the task's read-only files over a scratch copy.
A process the submission left behind could swap a folder for a symlink to a host folder while
the host does that. The attacks here make that swap happen at the worst moment, from inside the
host's own call: an audit hook acts as the racer whenever the host touches a name by path (the
moment a path-based check-then-use is open to a race). Then the rule is enforced as a whole:
an audit hook watches real scorings (timed, interactive, data-only) and an Environment's steps,
on every isolating backend, and any file event on a path beneath a sandbox's workspace that
does not come from ``sandbox/fs.py`` fails the test.
"""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from environments.scoring.evaluate import lay_read_only, reset_workspace
from environments.scoring.submission import OUTPUTS, collect_outputs
from environments.task.spec import load_task
from sandbox.fs import WorkspaceError
from tests.conftest import write_task
from tests.sandbox.backends import LOCAL_AND_SLOW_DOCKER, docker_marks

SECRET = "HOST-SECRET-5e1f"

# --- an audit hook that can be switched on and off (audit hooks cannot be removed) ------------

_HANDLERS: list[Callable[[str, tuple], None]] = []
_HOOKED = False
_IN_HOOK = threading.local()


def _dispatch(event: str, args: tuple) -> None:
    if not _HANDLERS or getattr(_IN_HOOK, "on", False):
        return
    _IN_HOOK.on = True  # what a handler does itself (a rename, a symlink) is not heard
    try:
        for handler in list(_HANDLERS):
            try:
                handler(event, args)
            except Exception:  # noqa: BLE001 - an exception here would break the host's call
                pass
    finally:
        _IN_HOOK.on = False


@contextmanager
def audited(handler: Callable[[str, tuple], None]) -> Iterator[None]:
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_dispatch)
        _HOOKED = True
    _HANDLERS.append(handler)
    try:
        yield
    finally:
        _HANDLERS.remove(handler)


PATH_EVENTS = {"open", "os.listdir", "os.scandir", "os.mkdir", "os.chmod", "os.chown",
               "os.remove", "os.rmdir", "os.rename", "os.symlink", "os.link", "os.truncate",
               "os.utime", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
               "shutil.copytree", "shutil.rmtree", "shutil.move", "shutil.chown"}


def _dir_fd(event: str, args: tuple) -> int | None:
    """The ``dir_fd`` argument of an event that has one (None: the path is cwd-relative)."""
    where = {"os.mkdir": 2, "os.chmod": 2, "os.chown": 3, "os.remove": 1, "os.rmdir": 1,
             "os.symlink": 2, "os.utime": 3, "os.rename": 2, "shutil.rmtree": 1}.get(event)
    if where is None or len(args) <= where or not isinstance(args[where], int):
        return None
    return args[where] if args[where] >= 0 else None


def event_paths(event: str, args: tuple) -> list[str]:
    """The absolute paths an event acts on (a descriptor-relative name resolved through
    /proc/self/fd; a bare descriptor, or a name relative to a descriptor the event does not
    report, is no path)."""
    if event not in PATH_EVENTS or not args:
        return []
    raw = [args[0], args[1]] if event in ("os.rename", "os.link", "shutil.copyfile",
                                          "shutil.copytree", "shutil.move") else [args[0]]
    if event == "os.symlink":
        raw = [args[1]]  # the link made, not its target text
    fd = _dir_fd(event, args)
    out = []
    for p in raw:
        if isinstance(p, int) or p is None:
            continue
        try:
            p = os.fsdecode(os.fspath(p))
        except TypeError:
            continue
        if not os.path.isabs(p):
            if fd is not None:
                p = os.path.join(os.readlink(f"/proc/self/fd/{fd}"), p)
            elif event == "open":
                continue  # os.open(name, dir_fd=...) reports no dir_fd: never a host path
            else:
                p = os.path.join(os.getcwd(), p)
        out.append(os.path.normpath(p))
    return out


def beneath(path: str, root: Path, inclusive: bool = True) -> bool:
    root_s = os.path.normpath(str(root))
    return path.startswith(root_s + os.sep) or (inclusive and path == root_s)


# --- the racer: a process left in the sandbox, acting when the host touches a path -----------

SWAPS: list[Path] = []  # every link the racer planted: a racer that never ran proves nothing


def make_link(name: Path, target: Path, parked: Path) -> None:
    """``name`` becomes a symlink to ``target`` (a real folder there is moved to ``parked``)."""
    if name.is_symlink():
        return
    if name.exists():
        os.rename(name, parked)
    os.symlink(target, name)
    SWAPS.append(name)


def make_real(name: Path, parked: Path) -> None:
    """The real folder moved back to ``name`` (undoes :func:`make_link`)."""
    if name.is_symlink() and parked.exists():
        os.unlink(name)
        os.rename(parked, name)


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A root-owned host folder outside every workspace (0700, one 0600 file)."""
    d = tmp_path / "host"
    d.mkdir(mode=0o700)
    (d / "keep.txt").write_text(SECRET)
    os.chmod(d / "keep.txt", 0o600)
    return d


def untouched(host: Path) -> None:
    assert sorted(p.name for p in host.iterdir()) == ["keep.txt"], "the host wrote into a host folder"
    assert stat.S_IMODE((host / "keep.txt").stat().st_mode) == 0o600, "the host chmodded a host file"
    assert (host / "keep.txt").read_text() == SECRET


def small_task(tmp_path: Path, timed: bool = False) -> Path:
    """A task whose env has a folder (``pkg/``) and a read-only file in a folder (``data/ro.txt``)."""
    toml = 'metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = []\n'
    return write_task(tmp_path / "task", toml=toml, read_only="data/ro.txt\n", files={
        "env/pkg/util.py": "VALUE = 42\n", "env/data/ro.txt": "pristine\n"})


class FakeSandbox:
    """What ``reset_workspace`` needs of the sandbox it renews (nothing runs)."""

    python = sys.executable

    def exec(self, argv, *a, **kw):
        return None

    def renew(self):
        return None


# --- attacks -------------------------------------------------------------------------------

def test_a_folder_swapped_for_a_link_while_the_host_relays_a_workspace_is_not_written_through(
        tmp_path, host):
    """Timed scoring re-lays a workspace between repeats. Right after the host emptied it, the
    moment it starts reading the submission, the racer plants ``pkg -> host``: the host must
    neither write the submission's file into the host folder nor chmod anything there."""
    task = load_task(small_task(tmp_path))
    source = tmp_path / "submission"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "util.py").write_text("VALUE = 7\n")
    space = tmp_path / "space"
    (space / "pkg").mkdir(parents=True)
    (space / "pkg" / "util.py").write_text("stale\n")

    def racer(event: str, args: tuple) -> None:
        if any(beneath(p, source) for p in event_paths(event, args)):
            make_link(space / "pkg", host, space / "parked")

    SWAPS.clear()
    with audited(racer):
        try:
            reset_workspace(task, source, space, FakeSandbox())
        except WorkspaceError:
            pass  # refusing to go on is the right answer; writing through the link is not
    assert SWAPS == [space / "pkg"]
    untouched(host)


def test_laying_read_only_files_never_writes_through_a_link_to_a_host_folder(tmp_path, host):
    """The read-only ``data/ro.txt`` is laid over a scratch copy whose ``data`` becomes a link
    to a host folder the moment the host reads the pristine file."""
    task = load_task(small_task(tmp_path))
    folder = tmp_path / "scratch"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "ro.txt").write_text("tampered\n")

    def racer(event: str, args: tuple) -> None:
        if any(beneath(p, task.env_dir) for p in event_paths(event, args)):
            make_link(folder / "data", host, folder / "parked")

    SWAPS.clear()
    with audited(racer):
        try:
            lay_read_only(task, folder)
        except WorkspaceError:
            pass
    assert SWAPS == [folder / "data"]
    untouched(host)


def test_copying_outputs_never_reads_a_host_file_through_a_swapped_folder(tmp_path, host):
    """The classic check-then-use: while the host lists the outputs, ``sub`` is a real folder;
    when it opens a file beneath it by path, ``sub`` is a link to the host folder."""
    (host / "a.json").write_text(SECRET)
    ws = tmp_path / "ws"
    (ws / OUTPUTS / "sub").mkdir(parents=True)
    (ws / OUTPUTS / "sub" / "a.json").write_text("[1, 2]")
    sub, parked = ws / OUTPUTS / "sub", ws / OUTPUTS / "parked"

    def racer(event: str, args: tuple) -> None:
        paths = [p for p in event_paths(event, args) if beneath(p, ws)]
        if not paths:
            return
        if event in ("os.scandir", "os.listdir"):
            make_real(sub, parked)
        else:
            make_link(sub, host, parked)

    dest = tmp_path / "outputs"
    SWAPS.clear()
    with audited(racer):
        try:
            collect_outputs(ws, dest, "challenge")
        except (WorkspaceError, ValueError):
            pass
    assert SWAPS
    copied = [p.read_text() for p in dest.rglob("*") if p.is_file()] if dest.exists() else []
    assert not any(SECRET in text for text in copied), "a host file was copied as an output"


# --- the rule, enforced over whole scorings and an Environment's steps ----------------------

REPO = Path(__file__).resolve().parents[2]
#: the modules that may touch a workspace: the one descriptor-safe file layer (``sandbox/fs.py``,
#: whose walk ``sandbox/ownership.py`` uses to hand the workspace to the sandbox's user and back,
#: and ``sandbox/quota.py`` to move it onto its quota mount), and those two for their own steps
ALLOWED = {REPO / "sandbox" / "fs.py",
           REPO / "sandbox" / "ownership.py", REPO / "sandbox" / "quota.py"}
HERE = Path(__file__).resolve()


def _caller() -> Path | None:
    """The innermost project file on the stack (the standard library's frames are skipped:
    ``Path.write_text`` or ``shutil.copyfile`` called from scoring is scoring's call)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path != HERE and path.is_relative_to(REPO) and "/.venv/" not in str(path):
            return path
        frame = frame.f_back
    return None


class Watch:
    """Every path event of the process, and every sandbox workspace opened while it listens;
    :meth:`violations` are the events beneath one of those workspaces not made by ALLOWED."""

    def __init__(self, monkeypatch) -> None:
        from sandbox.base import Sandbox

        self.events: list[tuple[str, str, str]] = []
        self.roots: set[str] = set()
        init = Sandbox.__init__

        def register(sb, workspace, *a, **kw):
            init(sb, workspace, *a, **kw)
            self.roots.add(os.path.normpath(str(Path(workspace).resolve())))
            self.roots.add(os.path.normpath(os.path.abspath(workspace)))

        monkeypatch.setattr(Sandbox, "__init__", register)

    def __call__(self, event: str, args: tuple) -> None:
        paths = event_paths(event, args)
        if not paths:
            return
        caller = _caller()
        if caller in ALLOWED:
            return
        where = str(caller.relative_to(REPO)) if caller else "?"
        for p in paths:
            self.events.append((event, p, where))

    def violations(self) -> list[tuple[str, str, str]]:
        assert self.roots, "no sandbox was opened: the watch saw nothing to guard"
        bad = []
        for event, path, where in self.events:
            for root in self.roots:
                if beneath(path, Path(root), inclusive=False) or (path == root and event != "os.mkdir"):
                    bad.append((event, path.replace(root, "<workspace>"), where))
        return sorted(set(bad))


BACKENDS = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])

TIMED_PRODUCE = textwrap.dedent("""
    import json
    from methods._submission import load_submission
    def produce(workspace, here, out):
        fast = load_submission(workspace, "fast.py")
        (out / "deep").mkdir()
        (out / "deep" / "value.json").write_text(json.dumps(fast.run((here / "challenge.txt").read_text())))
""")
FAST = "def run(challenge):\n    return challenge.strip()[::-1]\n"
TIMED_EVAL = textwrap.dedent("""
    import json, os
    def score(folder):
        challenge = open(os.path.join(folder, "challenge.txt")).read().strip()
        got = json.loads(open(os.path.join(folder, "deep", "value.json")).read())
        if got != challenge[::-1]:  # this repeat's own challenge: a stale one fails
            raise ValueError(f"wrong value {got}")
        return 1.0
""")


def timed_task(tmp_path: Path) -> Path:
    toml = 'metric = "seconds"\ndirection = "lower"\nsuccess_threshold = 0.1\nsolve = []\ntimed = true\n'
    return write_task(tmp_path / "timed", toml=toml, eval_body=TIMED_EVAL, read_only="data/ro.txt\n",
                      files={"scripts/produce.py": TIMED_PRODUCE,
                             "env/fast.py": FAST,
                             "env/pkg/__init__.py": "", "env/data/ro.txt": "pristine\n"})


@pytest.mark.parametrize("sandbox", LOCAL_AND_SLOW_DOCKER)
def test_timed_scoring_touches_its_workspaces_only_through_sandbox_fs(tmp_path, monkeypatch, sandbox):
    from environments.scoring.evaluate import evaluate

    task = load_task(timed_task(tmp_path))
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "fast.py").write_text(FAST)
    (ws / "pkg" / "__init__.py").write_text("")
    watch = Watch(monkeypatch)
    with audited(watch):
        result = evaluate(task, ws, sandbox)
    assert result.value is not None and result.paired is not None, result.detail
    bad = watch.violations()
    assert not bad, "\n".join(map(str, bad))


@BACKENDS
def test_interactive_and_data_only_scoring_touch_workspaces_only_through_sandbox_fs(
        tmp_path, monkeypatch, sandbox):
    from environments.scoring.evaluate import evaluate
    from tests.environments import test_interactive_submission as oracle

    interactive = load_task(write_task(tmp_path / "oracle-task", toml=oracle.TOML,
                                       eval_body=oracle.EVAL, files={
                                           "scripts/produce.py": oracle.PRODUCE,
                                           "scripts/token.txt": oracle.TOKEN,
                                           "scripts/offset.txt": "41.5",
                                           "env/solver.py": oracle.HONEST}))
    data_only = load_task(write_task(tmp_path / "tiny"))
    ws1, ws2 = tmp_path / "ws1", tmp_path / "ws2"
    (ws1 / "__pycache__").mkdir(parents=True)
    (ws1 / "solver.py").write_text(textwrap.dedent(oracle.HONEST))
    (ws2 / "pkg" / "__pycache__").mkdir(parents=True)
    (ws2 / "pkg" / "__init__.py").write_text("")
    (ws2 / "result.txt").write_text("6.5")
    watch = Watch(monkeypatch)
    with audited(watch):
        first = evaluate(interactive, ws1, sandbox)
        second = evaluate(data_only, ws2, sandbox)
    assert first.value == 1.0, first.detail
    assert second.value == 6.5, second.detail
    bad = watch.violations()
    assert not bad, "\n".join(map(str, bad))


@BACKENDS
def test_a_run_its_steps_and_its_scoring_touch_the_workspace_only_through_sandbox_fs(
        tmp_path, monkeypatch, sandbox):
    from agent.actor import Proposal
    from agent.fork import fork_config, fork_run
    from agent.replay import ReplayActor
    from agent.runner import create_run, drive
    from environments.scoring.score import score_run

    script = "import os\nos.makedirs('out', exist_ok=True)\nopen('out/result.txt','w').write('7')\n" \
             "open('result.txt','w').write('7')\nprint('done')\n"
    actions = [
        ("List Files", {"dir_path": "."}),
        ("Write File", {"file_name": "sub/train2.py", "content": script}),
        ("Append File", {"file_name": "sub/train2.py", "content": "print('again')\n"}),
        ("Copy File", {"source": "sub/train2.py", "destination": "train3.py"}),
        ("Execute Script", {"script_name": "train3.py"}),
        ("Read File", {"file_name": "out/result.txt"}),
        ("Inspect Script Lines", {"script_name": "train3.py", "start_line_number": 1,
                                  "end_line_number": 3}),
        ("Undo Edit Script", {"script_name": "sub/train2.py"}),
        ("Restore Workspace", {"step": 5}),
    ]
    actor = ReplayActor([Proposal(action=a, args=args) for a, args in actions])
    watch = Watch(monkeypatch)
    with audited(watch):
        run, task = create_run(write_task(tmp_path / "tiny"), actor, tmp_path / "runs", sandbox=sandbox)
        drive(run, task, actor)
        score = score_run(run, task, sandbox=sandbox)
        fork, _ = fork_run(run, 5, ReplayActor([]), config=fork_config(run, {})[0])
    watch.roots.add(os.path.normpath(str(fork.workspace)))  # never sandboxed here, guarded all the same
    assert len(run.steps()) == len(actions)
    assert score.value == 7.0, score.detail
    assert (fork.workspace / "out" / "result.txt").read_text() == "7"
    bad = watch.violations()
    assert not bad, "\n".join(map(str, bad))
