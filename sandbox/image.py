"""The Docker sandbox's image: talking to the engine, and building the image two ways.

* :func:`build_dockerfile` builds ``sandbox/images/Dockerfile`` (``python:3.X-slim`` plus CPU
  torch, numpy, scipy, scikit-learn, pydantic, matplotlib, pinned to the host's versions) for
  machines that reach a registry.
* :func:`build_offline` needs no registry at all: it streams a root filesystem made from the
  host's own Python environment (the interpreter, its standard library, the site-packages the
  tasks need and every shared library they link, a shell and a few coreutils) straight into
  ``docker import``. Files keep their host paths, so compiled-in prefixes and rpaths still hold;
  ``/usr/local/bin/python`` points at the interpreter in both images.

Both images get the same tag (:data:`IMAGE`, or ``$LABCOAT_SANDBOX_IMAGE``) and labels saying
how they were built, so :class:`sandbox.docker.DockerSandbox` does not care which one it runs.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import stat
import subprocess
import sys
import sysconfig
import tarfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

IMAGE = os.environ.get("LABCOAT_SANDBOX_IMAGE", "labcoat-sandbox:latest")
SANDBOX_PYTHON = "/usr/local/bin/python"
DOCKERFILE_DIR = Path(__file__).resolve().parent / "images"
LABEL_KIND = "labcoat.image.kind"
LABEL_PYTHON = "labcoat.image.python"
LABEL_PACKAGES = "labcoat.image.packages"

# What the tasks' scripts and the method tools import (their dependencies come along); pandas
# because MLAgentBench's eval.py files import it.
PACKAGES = ("numpy", "scipy", "scikit-learn", "torch", "pydantic", "matplotlib", "pandas")
# Command-line tools a script may reasonably call (``bash`` runs ``.sh`` scripts).
TOOLS = ("sh", "bash", "env", "cat", "ls", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "sed",
         "awk", "grep", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "chmod", "touch", "echo", "printf",
         "true", "false", "sleep", "id", "uname", "nproc", "date", "du", "df", "find", "xargs",
         "tee", "which", "basename", "dirname", "realpath", "readlink", "stat", "seq", "timeout",
         "kill", "ps", "diff", "tar", "gzip", "md5sum", "sha256sum", "pwd", "test", "expr")
# Never shipped: tests, headers, static libraries, IDEs, the tk GUI.
_SKIP_DIRS = {"tests", "test", "idlelib", "tkinter", "turtledemo", "ensurepip",
              "include"}
_SKIP_STDLIB_TOP = {"site-packages", "dist-packages"}
_SKIP_SUFFIX = (".a", ".pyi", ".h", ".hpp", ".cuh")
_SKIP_FILE = re.compile(r"^_tkinter\.|^lib(jitbackend_test|torchbind_test|backend_with_compiler"
                        r"|aoti_custom_ops)\.so$")
_PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"


class ImageError(RuntimeError):
    """The engine is missing, the image cannot be built, or the build failed."""


# ---------------------------------------------------------------- the engine


@lru_cache(maxsize=4)
def _client(timeout: float | None):
    import docker  # imported lazily: the local backend must work without the SDK

    return docker.from_env(timeout=timeout)


def engine_client(timeout: float | None = 10.0):
    """A Docker SDK client for the engine ``$DOCKER_HOST`` (or the default socket) names."""
    try:
        return _client(timeout)
    except ImportError as err:
        raise ImageError("the Docker SDK is not installed (pip install docker)") from err
    except Exception as err:  # docker.errors.DockerException: no socket, bad DOCKER_HOST
        raise ImageError(f"no Docker engine answers: {err}") from err


def engine_info(timeout: float = 10.0) -> dict[str, Any]:
    """Server version and API of the engine, or ``ImageError`` when none answers.

    Where no engine runs the answer is immediate (no socket, connection refused); the timeout
    only bounds an engine that is there but busy (removing a fork bomb's container, say).
    """
    try:
        version = engine_client(timeout).version()
    except ImageError:
        raise
    except Exception as err:
        raise ImageError(f"no Docker engine answers: {err}") from err
    return {"version": version.get("Version", "?"), "api": version.get("ApiVersion", "?"),
            "os": version.get("Os", "?"), "arch": version.get("Arch", "?")}


def image_info(tag: str = IMAGE, timeout: float = 10.0) -> dict[str, Any] | None:
    """The image's id, size and build labels, or None when it is not built yet."""
    import docker

    try:
        img = engine_client(timeout).images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.DockerException as err:
        raise ImageError(f"cannot inspect image {tag}: {err}") from err
    labels = img.labels or {}
    return {
        "tag": tag,
        "id": img.short_id,
        "size_mb": round(img.attrs.get("Size", 0) / 2**20, 1),
        "created": img.attrs.get("Created", "")[:19],
        "kind": labels.get(LABEL_KIND, "unknown"),
        "python": labels.get(LABEL_PYTHON, "?"),
        "packages": json.loads(labels.get(LABEL_PACKAGES, "{}")),
    }


# ---------------------------------------------------------------- offline root filesystem


def dependency_closure(roots: Iterable[str] = PACKAGES) -> dict[str, md.Distribution]:
    """Installed distributions ``roots`` need (missing optional roots are skipped)."""
    found: dict[str, md.Distribution] = {}
    stack = list(roots)
    while stack:
        name = stack.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        found[key] = dist
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            stack.append(re.split(r"[\s;<>=!~\[(]", req.strip(), maxsplit=1)[0])
    return found


@dataclass
class RootfsPlan:
    """Every host path that goes into the image, and where it lands."""

    files: dict[str, str] = field(default_factory=dict)  # image path -> host path
    symlinks: dict[str, str] = field(default_factory=dict)  # image path -> link target
    dirs: set[str] = field(default_factory=set)
    generated: dict[str, bytes] = field(default_factory=dict)  # image path -> content
    python: str = ""
    packages: dict[str, str] = field(default_factory=dict)
    missing_libs: set[str] = field(default_factory=set)

    @property
    def size(self) -> int:
        total = 0
        for host in self.files.values():
            try:
                total += os.lstat(host).st_size
            except OSError:
                pass
        return total + sum(len(b) for b in self.generated.values())

    # -- adding paths

    def add_dir(self, path: str) -> None:
        parts = Path(path).parts
        for i in range(2, len(parts) + 1):
            self.dirs.add(str(Path(*parts[:i])))

    def add_host(self, host: str, image: str | None = None) -> None:
        """Add ``host`` at ``image`` (default: the same path), keeping host symlinks."""
        image = image or host
        if image in self.files or image in self.symlinks:
            return
        if os.path.islink(host):
            target = os.readlink(host)
            self.symlinks[image] = target
            self.add_dir(str(Path(image).parent))
            resolved = os.path.normpath(os.path.join(os.path.dirname(host), target))
            if image == host and os.path.lexists(resolved):
                self.add_host(self._real_parent(resolved))
            return
        if not os.path.isfile(host):
            return
        self.files[image] = host
        self.add_dir(str(Path(image).parent))

    def _real_parent(self, path: str) -> str:
        """``path`` with symlinked parent folders (``/lib`` -> ``usr/lib``) recorded and resolved."""
        parts = Path(path).parts
        current = "/"
        for part in parts[1:-1]:
            nxt = os.path.join(current, part)
            if os.path.islink(nxt):
                self.symlinks.setdefault(nxt, os.readlink(nxt))
                nxt = os.path.realpath(nxt)
            current = nxt
        return os.path.join(current, parts[-1])

    def add_tree(self, host_root: str, image_root: str | None = None,
                 skip_top: set[str] = frozenset()) -> None:
        image_root = image_root or host_root
        for dirpath, dirnames, filenames in os.walk(host_root):
            rel = os.path.relpath(dirpath, host_root)
            if rel == ".":
                dirnames[:] = [d for d in dirnames if d not in skip_top]
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
            target_dir = os.path.normpath(os.path.join(image_root, rel))
            self.add_dir(target_dir)
            for d in list(dirnames):
                if os.path.islink(os.path.join(dirpath, d)):
                    self.symlinks[os.path.join(target_dir, d)] = os.readlink(os.path.join(dirpath, d))
                    dirnames.remove(d)
            for name in filenames:
                if name.endswith(_SKIP_SUFFIX) or _SKIP_FILE.match(name):
                    continue
                self.add_host(os.path.join(dirpath, name), os.path.join(target_dir, name))

    # -- shared libraries

    def elf_files(self) -> list[str]:
        out = []
        for host in self.files.values():
            name = os.path.basename(host)
            if ".so" in name or os.access(host, os.X_OK):
                try:
                    with open(host, "rb") as f:
                        if f.read(4) == b"\x7fELF":
                            out.append(host)
                except OSError:
                    pass
        return out

    def add_linked_libraries(self, progress: Callable[[str], None] = lambda s: None) -> None:
        """Every shared library the ELF files link (as ``ldd`` resolves them on this host)."""
        pending = self.elf_files()
        seen: set[str] = set(pending)
        missing: set[str] = set()
        while pending:
            batch, pending = pending[:64], pending[64:]
            progress(f"resolving shared libraries ({len(seen)} objects)")
            proc = subprocess.run(["ldd", *batch], capture_output=True, text=True, check=False)
            for line in proc.stdout.splitlines():
                line = line.strip()
                if "=> not found" in line:
                    missing.add(line.split()[0])
                    continue
                m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
                if not m:
                    continue
                lib = m.group(1)
                if "/../" in lib or "/./" in lib:  # $ORIGIN/../x rpaths
                    lib = os.path.join(os.path.realpath(os.path.dirname(lib)), os.path.basename(lib))
                image_path = self._real_parent(lib)
                if lib in seen or image_path in self.files or image_path in self.symlinks:
                    continue
                seen.add(lib)  # ldd lists the whole closure: no need to recurse
                self.add_host(image_path)
        # A library one .so cannot find standalone (torch's plugins) is fine if it ships anyway.
        shipped = {os.path.basename(p) for p in [*self.files, *self.symlinks]}
        self.missing_libs = {m for m in missing if m not in shipped}


def rootfs_plan(packages: Iterable[str] = PACKAGES, tools: Iterable[str] = TOOLS,
                progress: Callable[[str], None] = lambda s: None) -> RootfsPlan:
    """What an offline image holds: this host's interpreter, stdlib, packages and libraries."""
    plan = RootfsPlan()
    base = os.path.realpath(sys.base_prefix)
    interpreter = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    plan.python = interpreter
    progress("standard library")
    plan.add_host(plan._real_parent(interpreter))
    libdir = sysconfig.get_config_var("LIBDIR") or os.path.join(base, "lib")
    ldlib = sysconfig.get_config_var("INSTSONAME") or ""
    if ldlib and os.path.exists(os.path.join(libdir, ldlib)):
        plan.add_host(os.path.join(libdir, ldlib))
        for name in os.listdir(libdir):
            if name.startswith(ldlib.split(".so")[0] + ".so"):
                plan.add_host(os.path.join(libdir, name))
    stdlib = sysconfig.get_path("stdlib", vars={"installed_base": base, "base": base})
    plan.add_tree(stdlib, skip_top=_SKIP_STDLIB_TOP | {
        d for d in os.listdir(stdlib) if d.startswith("config-")})
    # Site-packages land in the base interpreter's own site-packages (a venv folds into it).
    site = sysconfig.get_path("purelib", vars={"base": base, "platbase": base})
    plan.add_dir(site)
    for key, dist in sorted(dependency_closure(packages).items()):
        progress(f"site-packages: {key}")
        plan.packages[key] = dist.version
        location = Path(str(dist.locate_file(""))).resolve()
        tops = set()
        for f in dist.files or []:
            parts = Path(str(f)).parts
            if parts and parts[0] != ".." and not parts[0].endswith(".pth"):
                tops.add(parts[0])
        for top in sorted(tops):
            host = location / top
            if host.is_dir():
                plan.add_tree(str(host), os.path.join(site, top))
            elif host.is_file():
                plan.add_host(str(host), os.path.join(site, top))
    for top in ("/bin", "/sbin", "/lib", "/lib64"):  # merged /usr keeps its links
        if os.path.islink(top):
            plan.symlinks[top] = os.readlink(top)
    for tool in tools:
        path = _which(tool)
        if path:
            plan.add_host(plan._real_parent(path))
            plan.add_host(path)
    plan.add_linked_libraries(progress)
    plan.add_host("/etc/ld.so.cache")
    plan.symlinks[SANDBOX_PYTHON] = interpreter
    plan.symlinks[SANDBOX_PYTHON + "3"] = interpreter
    plan.add_dir("/usr/local/bin")
    if "/bin/sh" not in plan.symlinks and "/usr/bin/sh" not in plan.symlinks \
            and "/usr/bin/sh" not in plan.files and "/bin/sh" not in plan.files:
        raise ImageError("no /bin/sh on this host to put in the image")
    plan.generated["/etc/passwd"] = _PASSWD.encode()
    plan.generated["/etc/group"] = _GROUP.encode()
    plan.generated["/etc/hostname"] = b"sandbox\n"
    plan.generated["/etc/labcoat-image.json"] = json.dumps(
        {"kind": "offline", "python": sys.version.split()[0], "interpreter": interpreter,
         "packages": plan.packages}, indent=1).encode()
    for d in ("/tmp", "/workspace", "/opt/labcoat", "/proc", "/sys", "/dev", "/etc", "/root"):
        plan.add_dir(d)
    return plan


def _which(tool: str) -> str | None:
    for d in ("/usr/bin", "/bin", "/usr/local/bin"):
        p = os.path.join(d, tool)
        if os.path.exists(p):
            return p
    return None


def _tarinfo(name: str, kind: bytes, mode: int, size: int = 0, mtime: float = 0,
             linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type = kind
    info.mode = mode
    info.size = size
    info.mtime = int(mtime or time.time())
    info.linkname = linkname
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_rootfs(plan: RootfsPlan, out, on_bytes: Callable[[int], None] = lambda n: None) -> None:
    """Write ``plan`` as an uncompressed tar to the binary file object ``out``."""
    counted = _Counting(out, on_bytes)
    with tarfile.open(fileobj=counted, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        link_dirs = {p for p in plan.symlinks}
        for d in sorted(plan.dirs):
            if d in link_dirs:
                continue
            mode = 0o1777 if d == "/tmp" else 0o755
            tar.addfile(_tarinfo(d, tarfile.DIRTYPE, mode))
        for path, target in sorted(plan.symlinks.items()):
            tar.addfile(_tarinfo(path, tarfile.SYMTYPE, 0o777, linkname=target))
        for path, content in sorted(plan.generated.items()):
            tar.addfile(_tarinfo(path, tarfile.REGTYPE, 0o644, len(content)), _Bytes(content))
        for path, host in sorted(plan.files.items()):
            st = os.stat(host)
            mode = stat.S_IMODE(st.st_mode) & 0o777 | 0o444
            if mode & 0o100:
                mode |= 0o111
            with open(host, "rb") as f:
                tar.addfile(_tarinfo(path, tarfile.REGTYPE, mode, st.st_size, st.st_mtime), f)


class _Counting:
    def __init__(self, out, on_bytes: Callable[[int], None]) -> None:
        self.out, self.on_bytes = out, on_bytes

    def write(self, data: bytes) -> int:
        self.out.write(data)
        self.on_bytes(len(data))
        return len(data)


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        n = len(self.data) - self.pos if n < 0 else n
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk


def _stream_tar(plan: RootfsPlan, on_bytes: Callable[[int], None]) -> tuple[Iterator[bytes], list]:
    """The tar as an iterator of chunks, written by a thread into a pipe."""
    rfd, wfd = os.pipe()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with os.fdopen(wfd, "wb", buffering=1 << 20) as w:
                write_rootfs(plan, w, on_bytes)
        except BaseException as err:  # reported after the import finishes
            errors.append(err)

    threading.Thread(target=writer, daemon=True).start()

    def chunks() -> Iterator[bytes]:
        with os.fdopen(rfd, "rb", buffering=0) as r:
            while chunk := r.read(1 << 20):
                yield chunk

    return chunks(), errors


@dataclass
class BuildReport:
    tag: str
    kind: str
    seconds: float
    size_mb: float
    image_id: str
    packages: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    import_seconds: float = 0.0  # offline: streaming the root filesystem into the engine


def build_offline(tag: str = IMAGE, packages: Iterable[str] = PACKAGES,
                  progress: Callable[[str, int, int], None] = lambda s, done, total: None
                  ) -> BuildReport:
    """``docker import`` a root filesystem made from this host's Python environment.

    ``progress(stage, done_bytes, total_bytes)`` is called while planning and streaming.
    """
    start = time.perf_counter()
    client = engine_client(timeout=None)
    previous = _previous_id(tag)
    plan = rootfs_plan(packages, progress=lambda s: progress(s, 0, 0))
    missing_roots = [p for p in packages if re.sub(r"[-_.]+", "-", p).lower() not in plan.packages]
    total = plan.size
    sent = [0]

    def on_bytes(n: int) -> None:
        sent[0] += n
        progress("importing", sent[0], total)

    stream, errors = _stream_tar(plan, on_bytes)
    import_start = time.perf_counter()
    repo, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
    py = sys.version.split()[0]
    changes = [
        "ENV PATH=/usr/local/bin:/usr/bin:/bin",
        "ENV LANG=C.UTF-8",
        "WORKDIR /workspace",
        "USER 65534:65534",
        f'CMD ["{SANDBOX_PYTHON}"]',
        f"LABEL {LABEL_KIND}=offline",
        f"LABEL {LABEL_PYTHON}={py}",
        f"LABEL {LABEL_PACKAGES}={json.dumps(json.dumps(plan.packages, separators=(',', ':')))}",
    ]
    try:
        result = client.api.import_image(src=stream, repository=repo, tag=version,
                                         changes=changes, stream_src=True)
    except Exception as err:
        raise ImageError(f"docker import failed: {err}") from err
    import_seconds = time.perf_counter() - import_start
    if errors:
        raise ImageError(f"writing the root filesystem failed: {errors[0]}") from errors[0]
    status = _last_status(result)
    if "error" in status:
        raise ImageError(f"docker import failed: {status['error']}")
    _drop_replaced(tag, previous)
    info = image_info(tag) or {}
    warnings = []
    if missing_roots:
        warnings.append("not installed on this host, so not in the image: " + ", ".join(missing_roots))
    if plan.missing_libs:
        warnings.append("libraries ldd could not resolve: " + ", ".join(sorted(plan.missing_libs)))
    return BuildReport(tag=tag, kind="offline", seconds=time.perf_counter() - start,
                       size_mb=info.get("size_mb", round(total / 2**20, 1)),
                       image_id=info.get("id", status.get("status", "")), packages=plan.packages,
                       warnings=warnings, import_seconds=import_seconds)


def _previous_id(tag: str) -> str | None:
    try:
        info = image_info(tag)
    except ImageError:
        return None
    return engine_client().images.get(tag).id if info else None


def _drop_replaced(tag: str, previous: str | None) -> None:
    """Delete the image a rebuild replaced (now untagged), unless a container still uses it."""
    if not previous:
        return
    client = engine_client()
    try:
        if client.images.get(tag).id != previous:
            client.images.remove(previous, noprune=False)
    except Exception:  # in use by a running sandbox, or already gone: leave it
        pass


def _last_status(result: Any) -> dict:
    if isinstance(result, dict):
        return result
    lines = [ln for ln in str(result).splitlines() if ln.strip()]
    for line in reversed(lines):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return {}


def host_versions(packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Build args pinning the Dockerfile's packages to what this host runs."""
    args = {"PYTHON_VERSION": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in packages:
        try:
            version = md.version(name)
        except md.PackageNotFoundError:
            continue
        args[re.sub(r"\W", "_", name).upper() + "_VERSION"] = version.split("+")[0]
    return args


def build_dockerfile(tag: str = IMAGE, buildargs: dict[str, str] | None = None,
                     progress: Callable[[str], None] = lambda line: None) -> BuildReport:
    """Build ``sandbox/images/Dockerfile`` with the SDK (needs a registry for the base image)."""
    start = time.perf_counter()
    client = engine_client(timeout=None)
    args = {**host_versions(), **(buildargs or {})}
    previous = _previous_id(tag)
    try:
        for chunk in client.api.build(path=str(DOCKERFILE_DIR), tag=tag, buildargs=args,
                                      rm=True, forcerm=True, decode=True, pull=False):
            if "error" in chunk:
                raise ImageError(chunk["error"].strip())
            line = chunk.get("stream") or chunk.get("status") or ""
            if chunk.get("progress"):
                line = f"{line} {chunk['progress']}"
            if line.strip():
                progress(line.rstrip())
    except ImageError:
        raise
    except Exception as err:
        raise ImageError(f"docker build failed: {err}") from err
    _drop_replaced(tag, previous)
    info = image_info(tag) or {}
    return BuildReport(tag=tag, kind="dockerfile", seconds=time.perf_counter() - start,
                       size_mb=info.get("size_mb", 0.0), image_id=info.get("id", ""),
                       packages=info.get("packages", {}))
