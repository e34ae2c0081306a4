"""Tool declarations for the LoRA library (pydantic only; no torch import here)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from methods.toolspec import ToolSpec


class SyntheticLibrary(BaseModel):
    """The CPU-scale library: a frozen 32-64-8 MLP, task families, rank-r LoRAs."""

    model_config = ConfigDict(extra="forbid")

    families: int = Field(4, ge=2, le=12, description="task families (true clusters)")
    tasks_per_family: int = Field(6, ge=1, le=20, description="training tasks per family")
    rank: int = Field(4, ge=1, le=16, description="LoRA rank")
    private_steps: int = Field(150, ge=1, le=5000, description="Adam steps per private (per-task) LoRA")
    cluster_steps: int = Field(400, ge=1, le=10000, description="Adam steps per cluster expert")
    shared_init: bool = Field(True, description="all experts start from the same A (MBC needs it)")
    heldout_samples: int = Field(500, ge=10, le=20000, description="samples per held-out task")
    seed: int = Field(0, description="seed of the base model, families and tasks")


class MBCArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    vectors: str | None = Field(None, description="npz with `V` (tasks x parameters): flattened LoRA parameters; omit to use `synthetic`")
    synthetic: SyntheticLibrary | None = Field(None, description="build private LoRAs on the synthetic tasks (default when `vectors` is absent)")
    n_clusters: int | None = Field(None, ge=1, description="number of clusters (synthetic default: families; required with `vectors`)")
    sparsity: float = Field(0.8, ge=0, lt=1, description="zero entries at or below this quantile of |v| per row")
    svd_components: int = Field(64, ge=1, description="TruncatedSVD components (capped at tasks - 1)")
    n_init: int = Field(10, ge=1, description="KMeans restarts")
    seed: int = Field(42, description="KMeans/SVD random state")

    @model_validator(mode="after")
    def _k(self) -> "MBCArgs":
        if self.vectors is not None and self.n_clusters is None:
            raise ValueError("n_clusters is required with `vectors`")
        return self


class ArrowArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    synthetic: SyntheticLibrary | None = Field(None, description="run MBC, train cluster experts and evaluate on held-out tasks (default when `experts` is absent)")
    experts: str | None = Field(None, description="npz with `A_{e}_{l}` (in x r) and `B_{e}_{l}` (r x out) per expert e and layer l")
    h: str | None = Field(None, description="npz with `h` (n x in): the layer inputs to route")
    layer: int = Field(0, ge=0, description="which layer's experts route `h`")
    top_k: int = Field(2, ge=1, description="experts kept per token")
    temperature: float = Field(1.0, description="tau in |h.v|/tau; <= 0 means sqrt(in)")
    scale_by_sigma: bool = Field(False, description="scale prototypes by sigma_1^2 (off in mttl)")
    modes: list[Literal["base", "uniform", "arrow", "oracle"]] = Field(
        default_factory=lambda: ["base", "uniform", "arrow", "oracle"], description="synthetic: which comparisons to run")

    @model_validator(mode="after")
    def _explicit(self) -> "ArrowArgs":
        if (self.experts is None) != (self.h is None):
            raise ValueError("`experts` and `h` go together")
        return self


TOOLS = [
    ToolSpec(
        name="mbc_cluster",
        description=(
            "Model-based clustering of tasks by their LoRA parameters (sparsify to the top 20%, "
            "TruncatedSVD, cosine similarity, KMeans on the similarity rows); reports labels, the "
            "similarity matrix and, on the synthetic library, the adjusted Rand index."
        ),
        args_model=MBCArgs,
        module="methods.lora_library",
        run="methods.lora_library.run:run_mbc",
        entry="mbc_cluster",
    ),
    ToolSpec(
        name="arrow_route",
        description=(
            "Arrow routing: per-token, per-layer expert weights from each LoRA's top singular "
            "vector (|h.v|/tau, top-k softmax), with no data or router training; on the synthetic "
            "library it reports held-out MSE for base/uniform/Arrow/oracle and routing accuracy."
        ),
        args_model=ArrowArgs,
        module="methods.lora_library",
        run="methods.lora_library.run:run_arrow",
        entry="arrow_route",
    ),
]
