"""Between a timed task's repeats: empty the sandbox's ``/tmp`` and ``/dev/shm``.

Runs as ``python -I -S -c <this source>`` in the submission's sandbox (after its command ended)
so a repeat cannot answer from what an earlier one left there. Links are removed, never
followed; what cannot be removed is left (the next repeat's own files are what it times).
Stdlib-only.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys

TOPS = ("/tmp", "/dev/shm")


def empty(tops: tuple[str, ...] | list[str] = TOPS) -> None:
    for top in tops:
        for path in glob.glob(top + "/*") + glob.glob(top + "/.*"):
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
            except OSError:
                pass


if __name__ == "__main__":
    empty(sys.argv[1:] or TOPS)
