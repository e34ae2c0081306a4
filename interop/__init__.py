"""labcoat in the ecosystem: its sandbox and tasks for Inspect (:mod:`interop.inspect`), its runs as
ATIF trajectories (:mod:`interop.atif`). Nothing in the workbench imports this package except
``tui.cli`` (``labcoat export``)."""
