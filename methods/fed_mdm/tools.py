"""Tool declarations for federated MDM (pydantic only: the workbench reads this without numpy)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from methods.toolspec import ToolSpec


class SyntheticArgs(BaseModel):
    """The built-in synthetic truth: K = 3, C = 10, phi = (0.4, 0.4, 0.2), sizes uniform."""

    model_config = ConfigDict(extra="forbid")

    n_train: int = Field(600, ge=2, le=100_000, description="training clients drawn first")
    n_test: int = Field(600, ge=1, le=100_000, description="held-out clients drawn after them")
    n_min: int = Field(20, ge=1, description="smallest client size")
    n_max: int = Field(80, ge=2, description="client sizes are uniform on n_min..n_max-1")
    seed: int = Field(0, description="generator seed")

    @model_validator(mode="after")
    def _sizes(self) -> "SyntheticArgs":
        if self.n_max <= self.n_min:
            raise ValueError("n_max must exceed n_min")
        return self


class FitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    counts: str | None = Field(None, description="npz file holding `counts` (clients x classes ints); omit to use `synthetic`")
    synthetic: SyntheticArgs | None = Field(None, description="built-in synthetic clients (used when `counts` is absent)")
    n_components: int = Field(3, ge=1, le=50, description="number of mixture components")
    steps: int = Field(200, ge=1, le=20_000, description="EM iterations (one Minka step each)")
    init: Literal["argmax", "median"] = Field("argmax", description="moment-matching initial precision: authors' (argmax class) or median over classes")
    init_seed: int = Field(0, description="seed of the random initial assignment")
    size_bins: list[float] | None = Field(None, min_length=2, description="client-size bin edges; models P(size bin | component); null drops the size term")
    alpha_floor: float = Field(1e-6, gt=0, description="lower bound on every alpha")
    zero_rule: Literal["floor", "reallocate"] = Field("floor", description="zero sums at the server: 'floor' (alpha floored at alpha_floor) or 'reallocate' (the authors' server: zero sums get 1% of their row's mass)")
    heldout: str | None = Field(None, description="npz with `counts` of held-out clients (synthetic: its test clients)")
    dp_sigma: float = Field(0.0, ge=0, description="EXPERIMENTAL: Gaussian noise std on the aggregated sums (uncalibrated, no privacy claim)")
    out: str = Field("mdm_fit.json", description="where to write this report (partition_mdm reads it as `fit_report`)")


class PartitionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data: str = Field("digits", description="'digits' (sklearn's 1797 digits labels) or an npz with `labels`")
    fit_report: str | None = Field(None, description="path to a fit_mdm report (JSON); else give phi and alphas")
    phi: list[float] | None = Field(None, description="mixture weights (K)")
    alphas: list[list[float]] | None = Field(None, description="Dirichlet parameters (K x C)")
    sizes: list[int] | None = Field(None, description="client sizes to resample; default: the model's size histogram if it has one, else uniform 20..79")
    size_hist: list[list[float]] | None = Field(None, description="P(size bin | k), K x B (needs size_bins)")
    size_bins: list[float] | None = Field(None, description="bin edges for size_hist")
    seed: int = Field(0, description="seed of the first partition")
    repeats: int = Field(1, ge=1, le=100, description="independent partitions (seeds seed..seed+repeats-1), pooled")
    spread_after_fails: int = Field(20, ge=1, description="every this many x n draws, flatten q a little")
    spread_pct: float = Field(0.02, gt=0, description="mass added to every class when flattening q")
    compare_to: str | None = Field(None, description="npz with `counts` of real clients: report the energy distance to them")
    out_prefix: str = Field("partition", description="prefix of the npz files written")

    @model_validator(mode="after")
    def _source(self) -> "PartitionArgs":
        if self.fit_report is None and (self.phi is None or self.alphas is None):
            raise ValueError("give `fit_report` (a fit_mdm report) or both `phi` and `alphas`")
        if (self.size_hist is None) != (self.size_bins is None):
            raise ValueError("size_hist and size_bins go together")
        return self


TOOLS = [
    ToolSpec(
        name="fit_mdm",
        description=(
            "Fit a mixture of Dirichlet-multinomials to per-client label counts by federated EM "
            "(clients' summed sufficient statistics, one Minka step per iteration); reports phi, "
            "alphas, the train/held-out log-likelihood per client and writes the fit as JSON."
        ),
        args_model=FitArgs,
        module="methods.fed_mdm",
        run="methods.fed_mdm.run:run_fit",
        entry="fit_mdm",
    ),
    ToolSpec(
        name="partition_mdm",
        description=(
            "Partition a labelled central dataset into simulated federated clients with an MDM "
            "(sample a component, label proportions and a size, then pop indices per class); "
            "writes the clients as npz and can report the energy distance to real clients."
        ),
        args_model=PartitionArgs,
        module="methods.fed_mdm",
        run="methods.fed_mdm.run:run_partition",
        entry="partition_mdm",
    ),
]
