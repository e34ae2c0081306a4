"""labcoat's sandbox as an Inspect sandbox provider (interop/inspect/sandbox.py), through a real
``inspect_ai.eval`` offline (Inspect's ``mockllm/model``) on a small task whose solver uses
``sandbox()``: commands run as a non-root host uid with no network, files persist within a sample
and not across samples, Inspect's contract (timeouts, users, output limits, text and binary
files in and outside the workspace) holds, and after the eval nothing of labcoat's is left
(workspace folders, mounts, cgroups, containers). On bubblewrap and on Docker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the Inspect extra is not installed: pip install -e '.[inspect]'")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.solver import Generate, TaskState, solver  # noqa: E402
from inspect_ai.util import (  # noqa: E402
    OutputLimitExceededError,
    SandboxEnvironmentSpec,
    SandboxUserUnsupportedError,
    sandbox,
)

from interop.inspect.sandbox import LabcoatSandboxConfig  # noqa: E402
from sandbox.local import bwrap_path  # noqa: E402
from tests.sandbox.backends import docker_marks, require_docker_image  # noqa: E402

BINARY = bytes(range(256)) * 4 + b"\r\n\x00"
SEEN: dict[str, dict] = {}


@solver
def probe():
    """Everything the test asserts, asked of ``sandbox()`` and kept in SEEN by sample id."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sb = sandbox()
        seen: dict = {}
        # nothing another sample wrote is here
        try:
            await sb.read_file("marker.txt")
            seen["marker_before"] = "present"
        except FileNotFoundError:
            seen["marker_before"] = "absent"
        await sb.write_file("marker.txt", f"sample {state.sample_id}\r\n")
        seen["marker_cat"] = (await sb.exec(["cat", "marker.txt"])).stdout
        made = await sb.exec(["sh", "-c", "mkdir -p sub && printf 'from %s' \"$WHO\" > sub/made.txt",],
                             env={"WHO": "inside"})
        seen["made_ok"] = made.success
        seen["made"] = await sb.read_file("sub/made.txt")
        seen["made_abs"] = await sb.read_file(f"{(await sb.exec(['pwd'])).stdout.strip()}/sub/made.txt")
        seen["cwd"] = (await sb.exec(["pwd"], cwd="sub")).stdout.strip()
        await sb.write_file("deep/er/blob.bin", BINARY)
        seen["binary"] = await sb.read_file("deep/er/blob.bin", text=False)
        seen["binary_size"] = (await sb.exec(["wc", "-c", "deep/er/blob.bin"])).stdout.split()[0]
        # outside the workspace: copied by a command inside the sandbox
        await sb.write_file("/tmp/out/side.bin", BINARY)
        seen["outside"] = await sb.read_file("/tmp/out/side.bin", text=False)
        seen["outside_ls"] = (await sb.exec(["ls", "/tmp/out"])).stdout.split()
        for name, call in (("missing", sb.read_file("nope.txt")),
                           ("missing_outside", sb.read_file("/tmp/nope.txt")),
                           ("dir", sb.read_file("sub"))):
            try:
                await call
                seen[name] = "read"
            except (FileNotFoundError, IsADirectoryError) as err:
                seen[name] = type(err).__name__
        seen["uid"] = int((await sb.exec(["id", "-u"])).stdout)
        seen["interfaces"] = sorted(line.split(":")[0].strip() for line in
                                    (await sb.exec(["cat", "/proc/net/dev"])).stdout.splitlines()[2:])
        seen["fails"] = (await sb.exec(["sh", "-c", "echo err >&2; exit 3"])).returncode
        seen["stdin"] = (await sb.exec(["cat"], input="fed in")).stdout
        seen["secret"] = (await sb.exec(["sh", "-c", "echo ${API_KEY:-unset}"],
                                        env={"API_KEY": "sk-123"})).stdout.strip()
        try:
            await sb.exec(["sleep", "20"], timeout=1)
            seen["timeout"] = "finished"
        except TimeoutError:
            seen["timeout"] = "TimeoutError"
        try:
            await sb.exec(["id"], user="root")
            seen["root"] = "ran"
        except SandboxUserUnsupportedError:
            seen["root"] = "refused"
        try:  # INSPECT_SANDBOX_MAX_EXEC_OUTPUT_SIZE is 4096 in this eval
            await sb.exec(["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"])
            seen["output_limit"] = "no error"
        except OutputLimitExceededError as err:
            seen["output_limit"] = err.limit_str
        seen["files"] = sorted((await sb.exec(["ls", "-A"])).stdout.split())
        SEEN[str(state.sample_id)] = seen
        return state
    return solve


def _leftovers(workspaces: Path) -> list[str]:
    """What of labcoat's this process still holds: workspace folders, mounts, cgroups, containers."""
    pid = os.getpid()
    left = [f"folder {p}" for p in workspaces.iterdir()]
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if str(workspaces) in line or f"labcoat-quota-{pid}-" in line:
            left.append(f"mount {line}")
    for top in (Path("/sys/fs/cgroup"),):
        for depth in ("", "*/", "*/*/", "*/*/*/"):
            left += [f"cgroup {p}" for p in top.glob(f"{depth}labcoat-{pid}-*")]
    try:
        from sandbox.docker import LABEL_PID
        from sandbox.image import engine_client

        client = engine_client()
        left += [f"container {c.name}" for c in
                 client.containers.list(all=True, filters={"label": f"{LABEL_PID}={pid}"})]
    except Exception:  # no engine here: no containers
        pass
    return left


BACKENDS = [pytest.param("labcoat-local", id="local"),
            pytest.param("labcoat-docker", id="docker", marks=[*docker_marks, pytest.mark.slow])]
# the docker kind is the same adapter over another labcoat backend (the fast set: local)


@pytest.mark.parametrize("kind", BACKENDS)
def test_an_inspect_eval_runs_each_sample_in_its_own_labcoat_sandbox(kind, tmp_path, monkeypatch):
    if kind == "labcoat-local" and bwrap_path() is None:
        pytest.fail("bubblewrap must work on this machine (.ci/run installs it)")
    if kind == "labcoat-docker":
        require_docker_image()
    monkeypatch.setenv("INSPECT_SANDBOX_MAX_EXEC_OUTPUT_SIZE", "4096")
    SEEN.clear()
    workspaces = tmp_path / "workspaces"
    task = Task(dataset=[Sample(input="one", id="one"), Sample(input="two", id="two")],
                solver=probe(),
                sandbox=SandboxEnvironmentSpec(kind, LabcoatSandboxConfig(workspaces=workspaces)))
    [log] = inspect_eval(task, model="mockllm/model", log_dir=str(tmp_path / "logs"),
                         display="none", max_samples=1)
    assert log.status == "success", log.error
    assert sorted(SEEN) == ["one", "two"]
    for sample, seen in SEEN.items():
        assert seen["marker_before"] == "absent"  # nothing crosses samples
        assert seen["marker_cat"] == f"sample {sample}\r\n"  # written text kept byte for byte
        assert seen["made_ok"] and seen["made"] == "from inside"
        assert seen["made_abs"] == "from inside"
        assert seen["cwd"].endswith("/sub")
        assert seen["binary"] == BINARY and seen["binary_size"] == str(len(BINARY))
        assert seen["outside"] == BINARY and seen["outside_ls"] == ["side.bin"]
        assert (seen["missing"], seen["missing_outside"], seen["dir"]) == (
            "FileNotFoundError", "FileNotFoundError", "IsADirectoryError")
        assert seen["uid"] != 0
        if os.geteuid() == 0:  # a uid leased for the sandbox, never root's
            assert seen["uid"] != os.getuid()
        assert seen["interfaces"] == ["lo"]  # no network
        assert seen["fails"] == 3 and seen["stdin"] == "fed in"
        assert seen["secret"] == "unset"  # labcoat drops names that look like credentials
        assert seen["timeout"] == "TimeoutError"
        assert seen["root"] == "refused"
        assert seen["output_limit"] == "4 KiB"
        assert not any(f.startswith(".labcoat-inspect-xfer-") for f in seen["files"])
    assert _leftovers(workspaces) == []


def test_the_labcoat_type_is_found_through_the_entry_point_and_its_config_deserialised():
    """A fresh interpreter that imports nothing of labcoat finds the three types (Inspect loads
    the ``inspect_ai`` entry point), and a logged spec's dict config comes back as labcoat's."""
    code = ("from inspect_ai.util import SandboxEnvironmentSpec\n"
            "from inspect_ai.util._sandbox.registry import registry_find_sandboxenv as find\n"
            "print([find(t).__name__ for t in ('labcoat', 'labcoat-local', 'labcoat-docker')])\n"
            "s = SandboxEnvironmentSpec.model_validate({'type': 'labcoat', 'config': "
            "{'backend': 'local', 'limits': {'memory_mb': 512}}})\n"
            "print(type(s.config).__name__, s.config.backend, s.config.limits.memory_mb)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "['LabcoatSandboxEnvironment', 'LabcoatLocalSandboxEnvironment', 'LabcoatDockerSandboxEnvironment']",
        "LabcoatSandboxConfig local 512"]


def test_a_config_with_the_network_is_refused():
    with pytest.raises(ValueError, match="never has the network"):
        LabcoatSandboxConfig.model_validate({"limits": {"network": True}})


def test_cli_cleanup_removes_the_workspace_folders_of_dead_processes_only(tmp_path, monkeypatch):
    """``inspect sandbox cleanup labcoat``: a killed eval's folders go, a live one's stay."""
    import tempfile

    import anyio

    from interop.inspect.sandbox import LabcoatSandboxEnvironment

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"labcoat-inspect-{gone.pid}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "f.txt").write_text("left")
    live = tmp_path / f"labcoat-inspect-{os.getpid()}-def"
    live.mkdir()
    other = tmp_path / "unrelated"
    other.mkdir()
    anyio.run(LabcoatSandboxEnvironment.cli_cleanup, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "unrelated"])
