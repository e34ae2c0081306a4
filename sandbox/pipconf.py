"""The person's pip configuration, carried into the sandbox that builds a task's environment.

A person who installs packages through a company mirror, a folder of wheels or a private
certificate says so once, in ``pip.conf`` (or ``PIP_INDEX_URL`` and the like), and every
``pip install`` of theirs follows it. The build of a task's Python environment
(:mod:`sandbox.pyenv`) runs pip in a sandbox with ``PIP_CONFIG_FILE=/dev/null``, so that
nothing of the host's files is read in there; this module reads the configuration on the host,
as pip itself does (its own loader: the global, user and site files, ``PIP_CONFIG_FILE`` and
the ``PIP_*`` variables, ``install`` over ``global``), and hands the build what it needs:

* ``index-url`` and ``extra-index-url`` as options; a ``file://`` index is mounted read-only
  with the folder above it (a PEP 503 index's pages link to ``../../files/...``);
* ``find-links``: a folder (or ``file://`` folder) mounted read-only, a URL as given;
* ``cert``: the certificate file copied into a read-only folder of the build;
* ``trusted-host`` as options; ``no-index`` kept.

What is not carried, and why: ``client-cert`` (a private key: the build runs code from the
index), ``constraint`` (a task's pins are the task's), proxies (the sandbox's network is the
backend's). A URL's credentials (``https://user:token@host``) reach pip's command line in the
build sandbox only; everything written or shown names the URL as :func:`redact` gives it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from sandbox.base import Mount

__all__ = ["BuildSources", "PipConfig", "build_sources", "person_pip_config", "redact", "scrub",
           "unreachable"]

SOURCES_TARGET = "/opt/labcoat-pip-sources"
"""Where a build sees the configuration's local indexes and folders (``<target>/<i>``)."""
CERT_TARGET = "/opt/labcoat-pip-cert"
_CREDENTIALS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/\s:@]+)(:[^/\s@]*)?@")
KEYS = ("index-url", "extra-index-url", "find-links", "cert", "trusted-host", "no-index")
_UNREACHABLE = re.compile(
    r"(Could not fetch URL [^\s:]+|Failed to establish a new connection|NewConnectionError|"
    r"Name or service not known|Temporary failure in name resolution|Network is unreachable|"
    r"No route to host|Connection refused|CERTIFICATE_VERIFY_FAILED|SSLError|ConnectTimeout|"
    r"Read timed out|ProxyError)")


@dataclass(frozen=True)
class PipConfig:
    """What of the person's pip configuration a build follows."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    cert: str | None = None
    trusted_hosts: tuple[str, ...] = ()
    no_index: bool = False
    files: tuple[str, ...] = field(default=(), compare=False)

    @property
    def indexes(self) -> tuple[str, ...]:
        return ((self.index_url,) if self.index_url else ()) + self.extra_index_urls

    def describe(self) -> str:
        """The sources, credentials hidden (for ``env.json`` and messages)."""
        parts = []
        if self.index_url:
            parts.append(f"the index {redact(self.index_url)}")
        parts += [f"the extra index {redact(u)}" for u in self.extra_index_urls]
        parts += [f"the find-links {redact(u)}" for u in self.find_links]
        if not parts:
            return ""
        return ", ".join(parts) + " (your pip configuration)"


def _config_items() -> dict[str, str]:
    """pip's configuration as ``section.key -> value`` (``:env:`` for ``PIP_*``), read by pip's
    own loader; empty where pip cannot read it (a broken file is pip's to report)."""
    from pip._internal.configuration import Configuration, ConfigurationError

    try:
        conf = Configuration(isolated=False)
        conf.load()
        return dict(conf.items())
    except (ConfigurationError, OSError):
        return {}


def person_pip_config() -> PipConfig:
    """The pip configuration ``pip install`` would follow here, with this process's
    variables (an ``index-url`` of ``PIP_INDEX_URL`` over one of ``pip.conf``)."""
    items = _config_items()

    def value(key: str) -> str | None:
        for section in (":env:", "install", "global"):  # pip's order: the later one wins
            found = items.get(f"{section}.{key}")
            if found is not None:
                return found
        return None

    def values(key: str) -> tuple[str, ...]:
        return tuple((value(key) or "").split())

    no_index = (value("no-index") or "").strip().lower() in ("1", "true", "yes", "on")
    return PipConfig(index_url=value("index-url") or None, extra_index_urls=values("extra-index-url"),
                     find_links=values("find-links"), cert=value("cert") or None,
                     trusted_hosts=values("trusted-host"), no_index=no_index)


def redact(url: str) -> str:
    """``url`` with its password or token hidden (``https://user:***@host/...``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a URL that does not parse>"
    if parts.password is None and parts.username is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    userinfo = f"{user}:***" if parts.password is not None else "***"
    return urlunsplit((parts.scheme, f"{userinfo}@{host}{port}", parts.path, parts.query, parts.fragment))


def scrub(text: str) -> str:
    """``text`` (pip's output) with the credentials of every URL in it hidden."""
    return _CREDENTIALS.sub(lambda m: f"{m[1]}{m[2]}:***@" if m[3] else f"{m[1]}***@", text)


def unreachable(output: str) -> str | None:
    """What in pip's ``output`` says an index or link could not be reached, if anything."""
    found = _UNREACHABLE.search(output)
    return found.group(1) if found else None


def _local(url: str) -> Path | None:
    """The folder a ``file://`` URL or a plain path names, when it is one on this machine."""
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            return None
        path = Path(unquote(parts.path))
    else:
        path = Path(url).expanduser()
    return path if path.is_absolute() and path.exists() else None


@dataclass
class BuildSources:
    """The configuration made real for one build: mounts and pip's options."""

    mounts: list[Mount] = field(default_factory=list)
    targets: list[tuple[str, str]] = field(default_factory=list)  # (option, mount target + rest)
    options: list[str] = field(default_factory=list)  # options and URLs as pip takes them

    def args(self, path_for: Callable[[str], str]) -> list[str]:
        """pip's options, with mounted paths as the build sandbox sees them (``path_for``)."""
        out = [f"file://{path_for(a[len('file://'):])}" if a.startswith(f"file://{SOURCES_TARGET}")
               else a for a in self.options]
        for option, target in self.targets:
            out += [option, path_for(target)]
        return out


def build_sources(conf: PipConfig, scratch: Path, *, offline: bool) -> BuildSources:
    """What a build needs of ``conf``: ``scratch`` (a folder of the build) receives the
    certificate; ``offline`` keeps local folders only (no index, as ``--no-index``)."""
    made = BuildSources()
    count = 0

    def mount(folder: Path) -> str:
        nonlocal count
        target = f"{SOURCES_TARGET}/{count}"
        count += 1
        made.mounts.append(Mount(source=folder, target=target))
        return target

    if not offline and not conf.no_index:
        for option, url in [("--index-url", conf.index_url)] * bool(conf.index_url) + \
                [("--extra-index-url", u) for u in conf.extra_index_urls]:
            local = _local(url)
            if local is None:
                made.options += [option, url]
            elif local.is_dir():
                root = local.parent if local.parent != local.parent.parent else local
                rest = local.name if root != local else ""
                made.options += [option, f"file://{mount(root)}/{rest}".rstrip("/")]
        for host in conf.trusted_hosts:
            made.options += ["--trusted-host", host]
    for link in conf.find_links:
        local = _local(link)
        if local is None:
            if not offline and "://" in link:
                made.options += ["--find-links", link]
            continue
        folder = local if local.is_dir() else local.parent
        rest = "" if local.is_dir() else f"/{local.name}"
        made.targets.append(("--find-links", mount(folder) + rest))
    if conf.cert and Path(conf.cert).is_file() and not offline:
        certs = scratch / "cert"
        certs.mkdir(exist_ok=True)
        shutil.copyfile(conf.cert, certs / "cert.pem")
        made.mounts.append(Mount(source=certs, target=CERT_TARGET))
        made.targets.append(("--cert", f"{CERT_TARGET}/cert.pem"))
    return made
