"""Tool declaration for MTGCN: ``mtgcn_classify``. Imports only pydantic and the tool spec."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from methods.toolspec import ToolSpec


class CSBMArgs(BaseModel):
    """A contextual stochastic block model graph, drawn when no graph file is given."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(1000, ge=8, description="number of nodes (a multiple of classes)")
    classes: int = Field(4, ge=2, description="number of classes (equal sizes)")
    d: int = Field(32, ge=1, description="feature dimension")
    avg_degree: float = Field(10.0, gt=0, description="expected node degree")
    homophily: float = Field(0.3, ge=0, le=1, description="fraction of a node's edges that join its own class")
    mu_norm: float = Field(1.0, ge=0, description="norm of each class mean (feature signal)")
    noise_var: float | None = Field(None, gt=0, description="feature noise variance per dimension (default 4/d)")
    seed: int = Field(0, description="seed of the graph draw")


class ClassifyArgs(BaseModel):
    """Arguments of ``mtgcn_classify``."""

    model_config = ConfigDict(extra="forbid")

    graph_npz: str | None = Field(
        None,
        description="npz with edges (2,E), X (n,d), y (n,; -1 = unknown) and bool masks train/val/test; "
        "null draws a CSBM graph from `csbm`",
    )
    csbm: CSBMArgs = Field(default_factory=CSBMArgs, description="CSBM settings, used when graph_npz is null")
    variant: Literal["mtgcn", "single_track", "gcn", "mlp"] = Field(
        "mtgcn", description="mtgcn, single_track (same residual propagation, one track), gcn (L layers, no residual), mlp"
    )
    layers: int = Field(16, ge=1, description="propagation layers L")
    a: float = Field(0.9, gt=-1, lt=1, description="propagation weight a in T <- a Â²T + (1-a) X0 (authors' code: -0.5)")
    heads: int = Field(2, ge=1, description="attention heads of the track builder")
    hidden: int = Field(64, ge=1, description="hidden width")
    affiliation: str = Field(
        "learned",
        description="learned (track builder), oracle (one-hot true class) or noisy:p (oracle with a fraction p "
        "moved to a random wrong class); oracle and noisy need every node's label",
    )
    stages: int = Field(1, ge=1, le=4, description="self-training stages")
    easy_per_class: int = Field(50, ge=1, description="pseudo-labelled easy nodes per class (first stage)")
    lw: float = Field(1.0, ge=0, description="weight of the CE on pseudo-labelled nodes")
    phi1: float = Field(0.5, ge=0, description="weight of the CE supervising the affiliation on easy nodes")
    epochs: int = Field(150, ge=1, description="training epochs per model")
    lr: float = Field(0.01, gt=0, description="Adam learning rate")
    weight_decay: float = Field(5e-4, ge=0, description="Adam weight decay")
    dropout: float = Field(0.5, ge=0, lt=1, description="dropout rate")
    schedule: Literal["joint", "alternate"] = Field(
        "joint", description="joint Adam, or alternate track-builder and processor epochs (authors)"
    )
    head_tracks: Literal["mean", "per_head"] = Field(
        "mean", description="mean: one set of tracks on the head-averaged affiliation; per_head: one set per "
        "head merged by a learned layer (authors; H times the propagation cost)"
    )
    affiliation_loss: Literal["ce", "double_softmax"] = Field(
        "ce", description="ce: cross-entropy on the affiliation; double_softmax: the authors' cross_entropy "
        "applied to probabilities (softmax twice)"
    )
    seed: int = Field(0, description="seed of the model initialisation and training")

    @field_validator("affiliation")
    @classmethod
    def _affiliation(cls, v: str) -> str:
        if v in ("learned", "oracle"):
            return v
        if v.startswith("noisy:"):
            try:
                p = float(v.split(":", 1)[1])
            except ValueError:
                p = -1.0
            if 0.0 <= p <= 1.0:
                return v
        raise ValueError("must be 'learned', 'oracle' or 'noisy:p' with p in [0, 1]")


TOOLS = [
    ToolSpec(
        name="mtgcn_classify",
        description="Node classification with the multi-track GCN (MTGCN) or a comparison model "
        "(single-track, deep GCN, MLP) on a CSBM graph or a given graph; reports test/val accuracy "
        "and a per-layer oversmoothing probe. Writes no predictions.",
        args_model=ClassifyArgs,
        module="methods.mtgcn",
        run="methods.mtgcn.run:classify_tool",
    )
]
