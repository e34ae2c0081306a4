"""``labcoat sandbox ...``: which backends work here, and building the Docker image."""

from __future__ import annotations

import json
import textwrap
import time

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from sandbox import check_all
from tui.cli.common import WIDE_OPT, Col, Group, make_console, print_table
from tui.terminal_text import safe_line, safe_text, visible

app = typer.Typer(cls=Group, help="Inspect and prepare the sandboxes that run actors' code.",
                  no_args_is_help=True)
console = make_console()


def _engine_and_image() -> dict:
    """The Docker engine and the sandbox image, as far as they can be seen from here."""
    try:
        from sandbox.image import IMAGE, ImageError, engine_info, image_info
    except ImportError as err:
        return {"engine": None, "engine_error": f"Docker SDK not installed: {err}", "image": None}
    try:
        engine = engine_info()
    except ImageError as err:
        return {"engine": None, "engine_error": str(err), "image": None, "image_tag": IMAGE}
    try:
        image = image_info(IMAGE)
    except ImageError as err:
        return {"engine": engine, "image": None, "image_tag": IMAGE, "image_error": str(err)}
    return {"engine": engine, "image": image, "image_tag": IMAGE}


@app.command("check")
def check(
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    run_probe: bool = typer.Option(
        True, "--probe/--no-probe",
        help="run one command in each available backend and report what it could do"),
    wide: bool = WIDE_OPT,
) -> None:
    """Report the Docker engine and image, which backends work here and what each isolates,
    and the quota mounts killed runs left (recovered at every labcoat start)."""
    from sandbox.probe import probe
    from sandbox.quota import recovery_line

    reports = check_all()
    docker_state = _engine_and_image()
    probes = {r.backend: probe(r.backend) for r in reports
              if run_probe and r.available and r.backend != "none"}
    if as_json:
        typer.echo(json.dumps({"backends": [r.model_dump() for r in reports], "docker": docker_state,
                               "probes": {k: p.model_dump() for k, p in probes.items()},
                               "auto": _auto(), "quota_recovery": recovery_line()},
                              indent=2, default=str))
        return
    engine = docker_state.get("engine")
    if engine:
        console.print(safe_line("docker engine: ", (str(engine["version"]), "green"),
                                f" (API {engine['api']}, {engine['os']}/{engine['arch']})"))
    else:
        console.print(safe_line("docker engine: ", ("none", "red"),
                                f" ({docker_state.get('engine_error', '')})"))
    image = docker_state.get("image")
    tag = docker_state.get("image_tag", "")
    if image:
        pk = image["packages"]
        versions = ", ".join(f"{k} {pk[k]}" for k in ("numpy", "torch", "scikit-learn", "scipy")
                             if k in pk)
        console.print(safe_line("sandbox image: ", (tag, "green"), f" {image['id']}, {image['kind']} build, "
                                f"{image['size_mb']:.0f} MB, Python {image['python']}, {versions}"))
    elif engine:
        console.print(safe_line("sandbox image: ", (f"{tag} missing", "red"),
                                ": run `labcoat sandbox build --offline` (no registry needed) or "
                                "`labcoat sandbox build`"))
    print_table("sandbox backends", BACKEND_COLUMNS,
                [[r.backend, _mark(r.available), *(_mark(getattr(r, f)) for f in ISOLATES)] for r in reports],
                wide=wide)
    for r in reports:
        console.print(safe_text(f"{r.backend}: {r.detail}"), highlight=False)
        for w in r.warnings:
            console.print(safe_text(f"{r.backend}: {w}", "yellow"))
        if r.backend in probes:
            p = probes[r.backend]
            colour = "green" if p.contained else "red"
            console.print(safe_line((f"{r.backend} probe:", colour), " ", p.summary()), highlight=False)
    console.print(safe_line("--sandbox auto uses: ", (_auto(), "bold")))
    for line in textwrap.wrap(recovery_line(), min(console.width, 100),
                              break_long_words=False, break_on_hyphens=False):
        console.print(safe_text(line), highlight=False)


#: what a backend isolates: its report's field, the column's header and its short form
ISOLATES = {"filesystem": ("files", None), "network": ("network", "net"), "memory": ("memory", "mem"),
            "cpu": ("cpu", None), "pids": ("pids", None), "process_tree_kill": ("tree kill", "kill"),
            "unprivileged_user": ("non-root", "user")}
BACKEND_COLUMNS = [Col("backend", key=True),  # typed back as --sandbox NAME: never cut
                   Col("available", short="avail"),
                   *(Col(name, short=short) for name, short in ISOLATES.values())]


def _auto() -> str:
    from sandbox import SandboxError, resolve_kind

    try:
        return resolve_kind("auto")
    except SandboxError as err:
        return f"nothing ({err})"


@app.command("build")
def build(
    offline: bool = typer.Option(
        False, "--offline",
        help="build with no registry: import a root filesystem made from this host's Python"),
    tag: str = typer.Option(None, "--tag", help="image tag (default: $LABCOAT_SANDBOX_IMAGE "
                                                 "or labcoat-sandbox:latest)"),
) -> None:
    """Build the Docker sandbox image (from sandbox/images/Dockerfile, or --offline)."""
    from sandbox.image import (
        IMAGE,
        ImageError,
        build_dockerfile,
        build_offline,
        engine_info,
    )

    tag = tag or IMAGE
    try:
        engine = engine_info()
    except ImageError as err:
        console.print(safe_text(str(err), "red"))
        raise typer.Exit(1) from err
    console.print(safe_text(f"docker engine {engine['version']} (API {engine['api']}); building {tag} "
                            f"{'offline (no pull)' if offline else 'from sandbox/images/Dockerfile'}"))
    start = time.perf_counter()
    try:
        report = _build_offline(tag, build_offline) if offline else _build_dockerfile(
            tag, build_dockerfile)
    except ImageError as err:
        console.print(safe_line(("build failed:", "red"), f" {err}"))
        if not offline:
            console.print("no registry reachable? `labcoat sandbox build --offline` needs none")
        raise typer.Exit(1) from err
    for w in report.warnings:
        console.print(safe_text(w, "yellow"))
    pk = report.packages
    versions = ", ".join(f"{k} {pk[k]}" for k in ("numpy", "torch", "scikit-learn", "scipy")
                         if k in pk)
    console.print(safe_line((f"built {report.tag}", "green"),
                            f" {report.image_id}: {report.kind}, {report.size_mb:.0f} MB, "
                            f"in {time.perf_counter() - start:.1f} s"
                            + (f" (import {report.import_seconds:.1f} s)" if report.import_seconds else "")
                            + (f" ({versions})" if versions else "")))


def _build_offline(tag, build_offline):
    with Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
                  DownloadColumn(), TransferSpeedColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task("planning the root filesystem", total=None)

        def on_progress(stage: str, done: int, total: int) -> None:
            if total:
                progress.update(task, description="importing into the engine", completed=done,
                                total=total)
            else:
                progress.update(task, description=stage)

        return build_offline(tag, progress=on_progress)


def _build_dockerfile(tag, build_dockerfile):
    with Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("building", total=None)

        def on_line(line: str) -> None:
            progress.console.print(safe_text(line), highlight=False)
            progress.update(task, description=visible(line[:70]))

        return build_dockerfile(tag, progress=on_line)


def _mark(flag: bool) -> Text:
    return Text("yes", "green") if flag else Text("no", "red")


@app.command("envs")
def envs(
    remove: list[str] = typer.Option([], "--remove", metavar="KEY", help="delete this cached "
                                     "environment (and its Docker image); repeatable"),
    prune: bool = typer.Option(False, "--prune", help="delete every cached environment"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output on stdout"),
    wide: bool = WIDE_OPT,
) -> None:
    """The Python environments built for tasks' [python] requirements ($LABCOAT_HOME/pyenvs).

    Each is built once per requirements, backend and interpreter, and reused by every run of
    a task that declares them; a deleted one is built again when a task next needs it."""
    from environments.task.home import labcoat_home
    from sandbox import pyenv
    from tui.cli.common import fail

    cache = labcoat_home() / "pyenvs"
    have = pyenv.list_envs(cache)
    unknown = sorted(set(remove) - {e.key for e in have})
    if unknown:
        fail(f"no cached environment {', '.join(unknown)} (labcoat sandbox envs lists them)")
    for env in have:
        if prune or env.key in remove:
            if env.image:
                _remove_image(env.image)
            pyenv.remove_env(cache, env.key)
            console.print(safe_text(f"removed {env.key} ({env.backend}: {' '.join(env.requirements)})"))
    if prune or remove:
        return
    if as_json:
        typer.echo(json.dumps([e.model_dump() for e in have], indent=2))
        return
    if not have:
        console.print(safe_text(f"no cached Python environments ({cache})"))
        return
    rows = [[e.key, e.backend, " ".join(e.requirements), e.image or e.python,
             time.strftime("%Y-%m-%d %H:%M", time.localtime(e.built_at))] for e in have]
    print_table(f"cached Python environments ({cache})",
                [Col("key", key=True), Col("backend"), Col("requirements"),
                 Col("interpreter or image", extra=True), Col("built", extra=True)], rows, wide=wide)


def _remove_image(tag: str) -> None:
    """A derived image of a removed environment; an engine that is gone is no reason to stop."""
    try:
        from sandbox.image import engine_client

        engine_client().images.remove(tag, force=True)
    except Exception as err:
        console.print(safe_text(f"note: image {tag} not removed: {err}"))
