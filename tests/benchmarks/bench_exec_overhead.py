"""Execute Script overhead per backend, against bare ``python``, and the Docker start-up cost.

For each backend (local with bubblewrap; docker where an engine and the image are ready) the
Execute Script action runs, through ``Environment.step``, a script that does nothing and a
script that imports numpy; the same scripts also run as bare ``python script.py`` on the host.
Runs are interleaved (bare, local, docker, bare, ...) so machine load hits all alike, and the
medians, the per-command overhead (ms over bare) and the ratios are printed from this one run.

Goals: local <= 1.1x bare on the numpy script; docker <= 15 ms per command over bare.
Bare ``python`` is the host's interpreter (all its site-packages and ``.pth`` hooks) given the
environment the sandbox gives a command (same thread counts, same code on PYTHONPATH);
the docker image's copy of it carries only what the tasks need and can start faster, so the
mechanism's own cost is printed too: ``sandbox.exec(["true"])`` against a bare ``true``, and
for docker against a plain ``docker exec`` of ``true`` in the same container: how each command
ran before the supervisor became the container's PID 1 (the before/after, in one run).
Also printed: a run's container start-up (create + start, until the supervisor has connected)
and its removal.

    python tests/benchmarks/bench_exec_overhead.py [--reps 15] [--backends local,docker]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from environments.acting.environment import Environment, code_mounts, sandbox_limits  # noqa: E402
from environments.task.spec import load_task  # noqa: E402
from sandbox import SandboxLimits, open_sandbox  # noqa: E402
from sandbox.base import clean_env, code_pythonpath  # noqa: E402
from tests.conftest import write_task  # noqa: E402

# Keys are the scripts' file names. Never name one after the module it imports: a script
# ``numpy.py`` doing ``import numpy`` imports itself (the script's folder is first on sys.path).
SCRIPTS = {"empty": "", "with_numpy": "import numpy\n"}


def docker_ready() -> str | None:
    """None when docker can run here, else why not."""
    try:
        from sandbox.docker import DockerSandbox
    except ImportError as err:
        return f"Docker SDK missing ({err})"
    iso = DockerSandbox.isolation()
    return None if iso.available else iso.detail


def bare_env(limits: SandboxLimits) -> dict[str, str]:
    """The environment the sandbox gives a command, with the code packages at their host paths.

    Like for like: thread counts (OpenBLAS starts its pool at ``import numpy``) and the
    PYTHONPATH entries (searched by every import) are the sandbox's, so the ratio is the
    sandbox's own cost, not a difference of settings.
    """
    mounts = code_mounts()
    sources = {m.target: str(m.source) for m in mounts}
    return clean_env(None, limits.cpus, code_pythonpath(mounts, lambda t: sources[t]))


def bare(script: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, script.name], cwd=script.parent, check=True,
                   stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def bare_true() -> float:
    t = time.perf_counter()
    subprocess.run(["true"], check=True)
    return time.perf_counter() - t


def exec_true(env: Environment) -> float:
    t = time.perf_counter()
    if not env.sandbox.exec(["true"]).ok:
        raise RuntimeError("`true` failed in the sandbox")
    return time.perf_counter() - t


def docker_exec_true(env: Environment) -> float:
    """One ``docker exec`` round trip (create, start, wait for the exit code): what a command
    cost the docker backend before its commands were forked by the container's PID 1."""
    sb = env.sandbox
    api = sb._client.api
    t = time.perf_counter()
    exec_id = api.exec_create(sb.container_id, ["true"], user=f"{sb.uid}:{sb.gid}")["Id"]
    api.exec_start(exec_id)
    while api.exec_inspect(exec_id).get("Running"):
        time.sleep(0.001)
    return time.perf_counter() - t


def step(env: Environment, name: str) -> float:
    t = time.perf_counter()
    obs = env.step("Execute Script", {"script_name": name, "arguments": ""})
    seconds = time.perf_counter() - t
    if obs.error:
        raise RuntimeError(f"Execute Script {name} failed: {obs.text[:500]}")
    return seconds


def startup_cost(ws: Path, reps: int) -> tuple[list[float], list[float], list[float]]:
    from sandbox.docker import DockerSandbox

    starts, firsts, closes = [], [], []
    for _ in range(reps):
        t = time.perf_counter()
        sb = DockerSandbox(ws, mounts=code_mounts())
        starts.append(time.perf_counter() - t)
        t = time.perf_counter()
        sb.exec(["true"])
        firsts.append(time.perf_counter() - t)
        t = time.perf_counter()
        sb.close()
        closes.append(time.perf_counter() - t)
    return starts, firsts, closes


def ms(x: float) -> str:
    return f"{x * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--backends", default="local,docker")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    if "docker" in backends and (why := docker_ready()):
        print(f"docker: skipped ({why})")
        backends.remove("docker")
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-") as tmp:
        os.environ["LABCOAT_HOME"] = str(Path(tmp) / "home")
        root = write_task(Path(tmp) / "task", files={
            f"env/{name}.py": body for name, body in SCRIPTS.items()})
        task = load_task(root)
        envs, sandboxes = {}, []
        for backend in backends:
            ws = Path(tmp) / f"ws-{backend}"
            ws.mkdir()
            for name, body in SCRIPTS.items():
                (ws / f"{name}.py").write_text(body)
            sb = open_sandbox(backend, ws, sandbox_limits(task), code_mounts())
            sandboxes.append(sb)
            envs[backend] = Environment(task, ws, sb)
        bare_vars = bare_env(sandbox_limits(task))
        bare_dir = Path(tmp) / "bare"
        bare_dir.mkdir()
        for name, body in SCRIPTS.items():
            (bare_dir / f"{name}.py").write_text(body)
        times: dict[tuple[str, str], list[float]] = {}
        try:
            for name in SCRIPTS:  # warm-up: page cache, pyc, first exec
                bare(bare_dir / f"{name}.py", bare_vars)
                for env in envs.values():
                    step(env, f"{name}.py")
            for _ in range(args.reps):
                times.setdefault(("bare", "true"), []).append(bare_true())
                for b, env in envs.items():
                    times.setdefault((b, "true"), []).append(exec_true(env))
                if "docker" in envs:
                    times.setdefault(("docker exec", "true"), []).append(
                        docker_exec_true(envs["docker"]))
                for name in SCRIPTS:
                    times.setdefault(("bare", name), []).append(bare(bare_dir / f"{name}.py", bare_vars))
                    for b, env in envs.items():
                        times.setdefault((b, name), []).append(step(env, f"{name}.py"))
        finally:
            for sb in sandboxes:
                sb.close()
        print(f"Execute Script vs bare `python script.py` (median of {args.reps}, interleaved; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        med = {k: statistics.median(v) for k, v in times.items()}
        for name in SCRIPTS:
            base = med[("bare", name)]
            print(f"  {name:10s} bare python       {ms(base)}")
            for b in envs:
                m = med[(b, name)]
                goal = ""
                if b == "local" and name == "with_numpy":
                    goal = f"  goal <= 1.10x: {'met' if m / base <= 1.10 else 'MISSED'}"
                if b == "docker":
                    goal = f"  goal <= 15 ms over: {'met' if m - base <= 0.015 else 'MISSED'}"
                print(f"  {name:10s} {b:17s} {ms(m)}  overhead {ms(m - base)}  "
                      f"ratio {m / base:5.2f}x{goal}")
        base = med[("bare", "true")]
        print(f"The mechanism alone: sandbox.exec(['true']) vs bare `true` {ms(base)}")
        for b in [*envs, *(["docker exec"] if "docker" in envs else [])]:
            m = med[(b, "true")]
            note = "  (before: an exec per command)" if b == "docker exec" else ""
            print(f"  true       {b:17s} {ms(m)}  overhead {ms(m - base)}{note}")
        if "docker" in envs:
            ws = Path(tmp) / "ws-startup"
            ws.mkdir()
            reps = max(3, args.reps // 3)
            starts, firsts, closes = startup_cost(ws, reps)
            print(f"docker container per run (median of {reps}): start-up "
                  f"{ms(statistics.median(starts))}, first command {ms(statistics.median(firsts))}, "
                  f"removal {ms(statistics.median(closes))}")


if __name__ == "__main__":
    main()
