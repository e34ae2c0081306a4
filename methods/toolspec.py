"""The metadata of one method tool.

Kept free of torch so that the workbench can list tools, build prompts and validate arguments
without paying for (or being able to crash on) a heavy import. The heavy work lives behind
``run``, an ``"module:function"`` string imported only inside the tool's own process.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what actors see (name, description, argument model) and how to run it.

    ``module`` is what ``python -m`` runs inside the sandbox; ``entry`` is passed as the TOOL
    argument when a package offers several tools (left out when it offers one).
    ``run`` names the function ``(args_model_instance) -> dict`` that does the work.
    """

    name: str
    description: str
    args_model: type[BaseModel]
    module: str
    run: str
    entry: str | None = None

    def argv(self, python: str = "python") -> list[str]:
        """Command line that runs this tool; the JSON arguments go on stdin."""
        cmd = [python, "-m", self.module]
        if self.entry:
            cmd.append(self.entry)
        return cmd
