"""Between a timed task's repeats: empty the sandbox's ``/tmp`` and ``/dev/shm``.

Runs as ``python -I -S -c <this source>`` in the submission's sandbox (after its command ended)
so a repeat cannot answer from what an earlier one left there (and, with :func:`left`, between
two steps scored in one sandbox: ``environments/scoring/score_scratch.py``). Links are removed, never
followed; mount points (the interpreter's folders, bound where they are on the host, which may
be under ``/tmp``) stay; what cannot be removed is left (the next repeat's own files are what it
times), and :func:`left` names it.
Stdlib-only.
"""

from __future__ import annotations

import os
import sys

TOPS = ("/tmp", "/dev/shm")


def empty(tops: tuple[str, ...] | list[str] = TOPS) -> None:
    for top in tops:
        _empty(top)


def _empty(folder: str) -> None:
    """Remove what ``folder`` holds except mount points: the sandbox binds the interpreter's
    read-only folders where they are on the host (a venv made under ``/tmp`` is mounted
    there), and a folder on the way to one stays, holding nothing else. Iterative: a tree of
    any depth left by a repeat cannot exhaust the stack."""
    stack, order = [folder], []
    while stack:
        at = stack.pop()
        order.append(at)
        try:
            names = os.listdir(at)
        except OSError:
            continue
        for name in names:
            path = os.path.join(at, name)
            if os.path.ismount(path):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                stack.append(path)
                continue
            try:
                os.remove(path)
            except OSError:
                pass
    for at in reversed(order[1:]):  # deepest first; one still holding a mount stays
        try:
            os.rmdir(at)
        except OSError:
            pass


def left(tops: tuple[str, ...] | list[str] = TOPS) -> list[str]:
    """What is still under ``tops`` besides mount points and the empty folders on the way to
    them: anything a later command could read (a file, a link, an empty folder's name)."""
    found, stack = [], [t for t in tops if os.path.isdir(t)]
    while stack:
        at = stack.pop()
        try:
            entries = list(os.scandir(at))
        except OSError:
            found.append(at)
            continue
        if not entries and at not in tops:
            found.append(at)
        for e in entries:
            if os.path.ismount(e.path):
                continue
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            else:
                found.append(e.path)
    return found


if __name__ == "__main__":
    empty(sys.argv[1:] or TOPS)
