"""The Python a sandbox's commands run with: an interpreter, packages a task pins, a device.

labcoat's own install decides the versions its sandboxes see (numpy 2, scikit-learn 1.9), while
a task may have been written for others (MLAgentBench's, for numpy 1 and ``squared=False``). A
task declares what it needs (``task.toml``'s ``[python]``, ``environments/task/spec.py``); this
module makes it real, the same way for every backend:

* **Built once, cached.** An environment is keyed by a hash of the requirements, the backend
  and the interpreter it is layered on (:func:`env_key`) and kept in ``<cache>/<key>/``
  (``$LABCOAT_HOME/pyenvs``): ``venv/`` and ``env.json``. A build goes to ``.build-<key>-*``
  and is renamed into place under a lock file, so no run ever sees a half-built environment
  and two runs build it once.
* **Built in a sandbox.** ``pip install`` runs package build code that came from the internet,
  so it runs in a sandbox of the same backend whose workspace is the build folder (the only
  place it writes), with the network only when it installs from the index. pip itself is the
  host's, mounted read-only (:data:`PIP_TARGET`): the Docker image has none.
* **Layered.** The venv's ``site-packages`` comes first, then, through a ``.pth`` file, exactly
  the site folders the interpreter had (torch stays importable unless a requirement pins it
  otherwise). A venv made from labcoat's own venv would otherwise see the base interpreter's
  packages (``--system-site-packages``) rather than the ones the sandbox had.
* **Sources.** Online: the package index and the wheel folders (``$LABCOAT_HOME/wheels``,
  ``$LABCOAT_FIND_LINKS``), and what the person's pip configuration names (``pip.conf``'s
  ``index-url``, ``extra-index-url``, ``find-links``, ``cert``, ``trusted-host``: a local
  folder or ``file://`` index mounted read-only, :mod:`sandbox.pipconf`). Offline
  (``LABCOAT_OFFLINE=1``): ``pip install --no-index`` from the wheel folders only. What cannot
  be satisfied is refused by name and source, an index that cannot be reached by its URL, its
  credentials hidden (:class:`PyEnvError`).

The local backend mounts the venv read-only at :data:`ENV_TARGET`; Docker bakes it into a
derived image ``labcoat-sandbox-req:<key>`` (``FROM`` the sandbox image, ``COPY`` only: no code
of the task's runs in the image build). Requirement lines are plain PEP 508 specifiers:
options, URLs and paths (``-e``, ``--index-url``, ``git+``, ``file:``, ``name @ url``) would
let a task folder point pip anywhere (:func:`requirement_line`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from sandbox.base import Mount, PythonEnv, Sandbox, SandboxError, SandboxLimits
from sandbox.pipconf import (
    PipConfig,
    build_sources,
    person_pip_config,
    redact,
    scrub,
    unreachable,
)

ENV_TARGET = "/opt/labcoat-pyenv"
"""Where a built environment's venv is, inside the sandbox (read-only)."""
PIP_TARGET = "/opt/labcoat-pip"
"""Where the host's ``pip`` package is mounted for a build (``PYTHONPATH``)."""
WHEELS_TARGET = "/opt/labcoat-wheels"
"""Where the wheel folders are mounted for a build (``/opt/labcoat-wheels/<i>``)."""
IMAGE_REPO = "labcoat-sandbox-req"
BUILD_TIMEOUT = 1800.0
BUILD_MEMORY_MB = 4096
BUILD_DISK_MB = 16384  # torch and its CUDA wheels are several GB
ENV_FILE = "env.json"
OFFLINE_ENV = "LABCOAT_OFFLINE"
FIND_LINKS_ENV = "LABCOAT_FIND_LINKS"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Made in the builder: a venv without pip whose site-packages ends with the interpreter's own
# site folders (processed as site dirs, so their .pth files work as they did).
MAKE_VENV = """
import glob, os, site, sys, venv
target = sys.argv[1]
venv.EnvBuilder(with_pip=False, symlinks=True).create(target)
[purelib] = glob.glob(os.path.join(target, "lib", "python*", "site-packages"))
with open(os.path.join(purelib, "_labcoat_base.pth"), "w") as f:
    for d in site.getsitepackages():
        f.write(f"import site; site.addsitedir({d!r})\\n")
"""
_MISSING = re.compile(r"No matching distribution found for (.+)")
_TAIL = 1500  # characters of pip's output a refusal quotes when it is not a missing package


class PyEnvError(SandboxError):
    """A task's Python environment cannot be had: says which requirement, from where."""


class BuiltEnv(BaseModel):
    """``env.json`` of a cached environment: what it holds and for which interpreter."""

    key: str
    backend: str
    python: str
    identity: str
    requirements: list[str]
    sources: str
    built_at: float
    image: str | None = None


# ---------------------------------------------------------------- what a task may declare


def requirement_line(text: str) -> str:
    """One requirement a task declares, normalised; ``ValueError`` for anything else.

    Only a PEP 508 specifier with a name from an index (``numpy<2``, ``scikit-learn==1.2.2``,
    ``ogb; python_version < "3.12"``): no pip options (``-e``, ``--index-url``, ``-r``), no
    URL or path (``git+https://``, ``file:``, ``./pkg``, ``name @ url``), each of which would
    let a task folder make pip fetch or run what it likes from where it likes.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    line = text.strip()
    if not line:
        raise ValueError("an empty requirement")
    if line.startswith("-"):
        raise ValueError(f"{line!r}: pip options are not requirements (only PEP 508 "
                         "specifiers such as numpy<2)")
    try:
        req = Requirement(line)
    except InvalidRequirement as err:
        raise ValueError(f"{line!r} is not a PEP 508 requirement (a URL or a path is not "
                         f"one): {err}") from err
    if req.url is not None:
        raise ValueError(f"{line!r}: a requirement names a package of the index, not a URL")
    return str(req)


def requirement_lines(text: str, where: str) -> list[str]:
    """The requirements of a ``requirements.txt`` (comments and blank lines skipped);
    ``ValueError`` naming ``where:line`` for an option, a URL or a path."""
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        try:
            out.append(requirement_line(line))
        except ValueError as err:
            raise ValueError(f"{where}:{n}: {err}") from err
    return out


# ---------------------------------------------------------------- device


def gpu_nodes() -> list[str]:
    """The NVIDIA device nodes of this machine (``/dev/nvidia0``, ``/dev/nvidiactl``, …)."""
    dev = Path("/dev")
    try:
        return sorted(str(p) for p in dev.iterdir() if p.name.startswith("nvidia"))
    except OSError:
        return []


def gpu_indices() -> list[int]:
    return sorted(int(n[len("/dev/nvidia"):]) for n in gpu_nodes()
                  if n[len("/dev/nvidia"):].isdigit())


def check_device(device: str | None) -> None:
    """``PyEnvError`` when ``device`` asks for a GPU this machine does not have."""
    if device is None or device == "cpu":
        return
    found = gpu_indices()
    if not found:
        raise PyEnvError(f"--device {device}: no NVIDIA GPU on this machine (no /dev/nvidia0); "
                         "use --device cpu")
    index = device.partition(":")[2]
    if index and int(index) not in found:
        raise PyEnvError(f"--device {device}: this machine has GPU(s) "
                         f"{', '.join(map(str, found))} only")


def device_env(device: str | None, *, docker: bool = False) -> dict[str, str]:
    """What a command's environment says about the device: ``cpu`` hides every GPU
    (``CUDA_VISIBLE_DEVICES=""``); ``cuda:N`` shows only N (Docker numbers the one it
    passes 0)."""
    if device is None:
        return {}
    if device == "cpu":
        return {"CUDA_VISIBLE_DEVICES": ""}
    index = device.partition(":")[2]
    if not index:
        return {}
    return {"CUDA_VISIBLE_DEVICES": "0" if docker else index}


def with_device(env: Mapping[str, str] | None, device: str | None, *,
                docker: bool = False) -> dict[str, str]:
    """``env`` of one command with the device's variables under it (a command's own win)."""
    return {**device_env(device, docker=docker), **(env or {})}


# ---------------------------------------------------------------- the host's interpreters


def host_python_roots(python: str) -> list[str]:
    """The folders a host interpreter (``--python PATH``) needs, to mount read-only: its own
    prefix and, for a venv, the base it was made from. Read from the files, never run on the
    host; the system's ``/usr`` is in every sandbox already."""
    path = Path(python)
    if not path.is_absolute():
        raise PyEnvError(f"--python {python}: give an absolute path")
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise PyEnvError(f"--python {python}: no executable file there")
    roots = {path.parent.parent, path.resolve().parent.parent}
    cfg = path.parent.parent / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                roots.add(Path(value.strip()).parent)
    return sorted(str(r) for r in roots if r != Path("/") and not str(r).startswith("/usr"))


def identity_of(python: str) -> str:
    """What keys an environment layered on a host interpreter: where it really is, and its
    size and time (an upgraded interpreter is another one)."""
    real = Path(python).resolve()
    st = real.stat()
    return f"{real}:{st.st_size}:{int(st.st_mtime)}"


# ---------------------------------------------------------------- the cache


def env_key(env: PythonEnv, backend: str, identity: str) -> str:
    """The environment's name: its requirements (in any order), backend and interpreter."""
    doc = json.dumps({"requirements": sorted(env.requirements), "backend": backend,
                      "python": identity}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


def find_links(home: Path) -> tuple[Path, ...]:
    """The wheel folders: ``$LABCOAT_HOME/wheels`` and ``$LABCOAT_FIND_LINKS`` (``:``-separated),
    those that exist."""
    dirs = [home / "wheels", *(Path(p).expanduser() for p in
                               os.environ.get(FIND_LINKS_ENV, "").split(os.pathsep) if p)]
    out: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in out:
            out.append(d.resolve())
    return tuple(out)


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "") not in ("", "0")


def cached(cache: Path, key: str) -> BuiltEnv | None:
    """The environment ``key`` when it is built whole (its ``env.json`` is written last)."""
    try:
        return BuiltEnv.model_validate_json((cache / key / ENV_FILE).read_text())
    except (OSError, ValueError):
        return None


def list_envs(cache: Path) -> list[BuiltEnv]:
    if not cache.is_dir():
        return []
    found = (cached(cache, p.name) for p in sorted(cache.iterdir()) if _NAME.fullmatch(p.name)
             and not p.name.startswith("."))
    return [e for e in found if e is not None]


def remove_env(cache: Path, key: str) -> None:
    """Delete a cached environment (under its lock: no build of it is half-way)."""
    with _locked(cache, key):
        shutil.rmtree(cache / key, ignore_errors=True)


@contextmanager
def _locked(cache: Path, key: str):
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


OpenBuilder = Callable[[Path, SandboxLimits, Sequence[Mount]], Sandbox]


def ensure(env: PythonEnv, *, backend: str, python: str, identity: str,
           open_builder: OpenBuilder, finish: Callable[[Path, str], str | None] | None = None,
           still_there: Callable[[BuiltEnv], bool] = lambda _: True) -> BuiltEnv:
    """The environment for ``env.requirements`` over ``python``, built if it is not cached.

    ``open_builder(workspace, limits, mounts)`` opens a sandbox of the backend (the base
    interpreter, no requirements) in which the venv is made and pip runs; ``finish(folder,
    key)`` may turn the built folder into something else (Docker: an image, whose tag it
    returns); ``still_there`` says whether what it made is still there (an image removed).
    """
    if env.cache is None:
        raise PyEnvError("a task's Python requirements need a cache folder ($LABCOAT_HOME)")
    requirements = [requirement_line(r) for r in env.requirements]  # again, before pip
    key = env_key(env, backend, identity)
    have = cached(env.cache, key)
    if have is not None and still_there(have):
        return have
    with _locked(env.cache, key):
        have = cached(env.cache, key)
        if have is not None and still_there(have):
            return have
        for stale in env.cache.glob(f".build-{key}-*"):  # a build that was killed
            shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(env.cache / key, ignore_errors=True)
        build = env.cache / f".build-{key}-{uuid.uuid4().hex[:8]}"
        build.mkdir(mode=0o755)
        try:
            sources = _build(build, env, requirements, open_builder)
            image = finish(build, key) if finish else None
            record = BuiltEnv(key=key, backend=backend, python=python, identity=identity,
                              requirements=requirements, sources=sources, built_at=time.time(),
                              image=image)
            (build / ENV_FILE).write_text(record.model_dump_json(indent=1))
            os.rename(build, env.cache / key)
        except BaseException:
            shutil.rmtree(build, ignore_errors=True)
            raise
    return record


def _sources(env: PythonEnv, conf: PipConfig | None = None) -> str:
    """Where a build installs from, in words (credentials in a URL hidden)."""
    conf = conf or PipConfig()
    wheels = f"the wheel folders {', '.join(map(str, env.find_links))}" if env.find_links \
        else "no wheel folder ($LABCOAT_HOME/wheels or $LABCOAT_FIND_LINKS)"
    links = [f"the find-links {redact(u)}" for u in conf.find_links if "://" not in u or u.startswith("file:")]
    if env.offline:
        return ", ".join([wheels, *links]) + f" (offline: {OFFLINE_ENV}=1)"
    if conf.no_index:
        return ", ".join([wheels, *links]) + " (no-index: your pip configuration)"
    said = conf.describe()
    return f"{said} and {wheels}" if said else f"the package index and {wheels}"


def _build(folder: Path, env: PythonEnv, requirements: list[str], open_builder: OpenBuilder) -> str:
    """Make ``folder/venv`` in a sandbox: its workspace ``folder/work`` (scratch, removed after)
    and the venv mounted writable at :data:`ENV_TARGET`, where it will be used, so its scripts
    name the right interpreter. Returns the sources it installed from."""
    import pip

    (folder / "venv").mkdir()
    (folder / "work").mkdir()
    mounts = [Mount(source=folder / "venv", target=ENV_TARGET, read_only=False),
              Mount(source=Path(pip.__file__).parent, target=f"{PIP_TARGET}/pip")]
    mounts += [Mount(source=d, target=f"{WHEELS_TARGET}/{i}") for i, d in enumerate(env.find_links)]
    conf = person_pip_config()  # the person's indexes, find-links and certificate, as pip reads them
    extra = build_sources(conf, folder, offline=env.offline)
    mounts += extra.mounts
    limits = SandboxLimits(timeout=BUILD_TIMEOUT, memory_mb=BUILD_MEMORY_MB, cpus=2, pids=512,
                           output_bytes=200_000, file_mb=BUILD_DISK_MB, disk_mb=BUILD_DISK_MB,
                           max_files=500_000, network=not env.offline,
                           python_env=PythonEnv(python=env.python))
    sources = _sources(env, conf)
    with open_builder(folder / "work", limits, mounts) as sb:
        venv = sb.path_for(ENV_TARGET)
        made = sb.exec([sb.python, "-I", "-c", MAKE_VENV, venv])
        if not made.ok:
            raise PyEnvError(f"cannot make a venv with {sb.python}: {made.stderr[-_TAIL:]}")
        args = [f"{venv}/bin/python", "-m", "pip", "install", "--no-cache-dir",
                "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
                "--no-warn-script-location", "--retries", "1", "--timeout", "15"]
        if env.offline or conf.no_index:
            args.append("--no-index")
        for i in range(len(env.find_links)):
            args += ["--find-links", sb.path_for(f"{WHEELS_TARGET}/{i}")]
        args += extra.args(sb.path_for)
        # pip in the sandbox reads no configuration file: what it follows is on its command line
        done = sb.exec([*args, "--", *requirements],
                       env={"PYTHONPATH": sb.path_for(PIP_TARGET), "PIP_CONFIG_FILE": os.devnull})
    shutil.rmtree(folder / "work", ignore_errors=True)
    shutil.rmtree(folder / "cert", ignore_errors=True)
    if not done.ok:
        raise _refusal(done, sources)
    return sources


def _refusal(done, sources: str) -> PyEnvError:
    """Why pip could not install, naming the requirement or the source it could not reach."""
    output = done.stdout + done.stderr
    reach = unreachable(output)
    if reach:
        return PyEnvError(f"pip could not reach the package source ({scrub(reach)}): the task's "
                          f"Python requirements were not installed from {sources}; check that "
                          "the index or folder is reachable from the build sandbox")
    missing = _MISSING.findall(output)
    if missing:
        return PyEnvError(f"the task's Python requirement {missing[0].strip()!r} cannot be "
                          f"satisfied from {sources}")
    why = "timed out" if done.timed_out else f"exit {done.exit_code}"
    return PyEnvError(f"installing the task's Python requirements failed ({why}) from "
                      f"{sources}: {scrub((done.stderr or done.stdout)[-_TAIL:])}")


# ---------------------------------------------------------------- Docker: a derived image


def image_tag(key: str) -> str:
    return f"{IMAGE_REPO}:{key}"


def derived_image(client, base: str, folder: Path, key: str) -> str:
    """Bake ``folder/venv`` into ``labcoat-sandbox-req:<key>``, ``FROM`` ``base``: ``COPY``
    only, with no network, so nothing of the task's runs in the image build. The venv's
    folder is dropped once the image holds it (the image is the cache)."""
    tag = image_tag(key)
    (folder / "Dockerfile").write_text(f"FROM {base}\nCOPY venv {ENV_TARGET}\n")
    (folder / ".dockerignore").write_text("*\n!venv\n")
    try:
        client.images.build(path=str(folder), tag=tag, rm=True, forcerm=True,
                            network_mode="none", labels={"labcoat.pyenv": key,
                                                         "labcoat.pyenv.base": base})
    except Exception as err:  # docker.errors.BuildError, APIError
        raise PyEnvError(f"cannot build the image {tag} from {base}: {err}") from err
    shutil.rmtree(folder / "venv", ignore_errors=True)
    return tag


def image_present(client, tag: str | None) -> bool:
    if tag is None:
        return False
    try:
        client.images.get(tag)
    except Exception:
        return False
    return True
