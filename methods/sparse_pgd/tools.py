"""Tool declarations for sparse-PGD: ``sparse_attack`` and ``sparse_adv_train``.

Imports only pydantic and the tool spec, never torch: the workbench reads this to list tools.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from methods.toolspec import ToolSpec


class ModelArgs(BaseModel):
    """Which classifier to attack or train; any nn.Module on (N, c, h, w) inputs in [0, 1]."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        "methods.sparse_pgd.models:DigitsMLP",
        description="the classifier as 'pkg.module:Name', an importable nn.Module class or "
        "zero-argument factory; the workspace is importable, e.g. 'model:Net'",
    )
    checkpoint: str | None = Field(
        None, description="path of a state_dict to load (torch.load with weights_only=True)"
    )
    model_kwargs: dict = Field(default_factory=dict, description="keyword arguments for the model")
    seed: int = Field(0, description="random seed; each sample draws from its own (seed, index) stream")


class AttackArgs(ModelArgs):
    """Arguments of ``sparse_attack``."""

    data: str = Field(
        "digits_test",
        description="'digits_test' (the built-in 540-image test split) or a path to an npz with "
        "X (N,c,h,w) in [0,1] and y (N,)",
    )
    l0_budget: int = Field(..., ge=1, description="l0 budget in pixels (a pixel counts once over its channels)")
    method: Literal["spgd", "spgd_proj", "spgd_ens", "rs", "saa"] = Field(
        "saa",
        description="spgd (unprojected gradient), spgd_proj (projected), spgd_ens (a sample "
        "survives only if it survives both), rs (black-box Sparse-RS), saa (the cascade "
        "spgd -> spgd_proj -> rs, the reliable evaluation)",
    )
    steps: int = Field(100, ge=1, description="sPGD iterations per variant (paper: 10000)")
    rs_queries: int = Field(1000, ge=1, description="Sparse-RS queries (paper: 10000)")
    linf_bound: float = Field(1.0, gt=0, le=1, description="l_inf bound on the changed pixels (1.0 = any value)")
    alpha: float = Field(0.25, gt=0, description="magnitude step, relative to linf_bound")
    beta: float = Field(0.25, gt=0, description="mask step, scaled by sqrt(h*w)")
    patience: int = Field(3, ge=1, description="iterations with an unchanged support before the mask restarts")
    loss: Literal["ce", "adaptive"] = Field(
        "ce", description="ce, or adaptive (margin loss below a 0.5 margin, CE above)"
    )
    batch_size: int = Field(512, ge=1, description="samples attacked at once")
    out: str = Field("sparse_attack.npz", description="npz written with x_adv and success")


class AdvTrainArgs(ModelArgs):
    """Arguments of ``sparse_adv_train``."""

    data: str = Field(
        "digits_train", description="'digits_train' (1257 images) or an npz with X (N,c,h,w) in [0,1] and y"
    )
    test_data: str = Field(
        "digits_test", description="where clean and robust accuracy are reported: 'digits_test' or an npz"
    )
    recipe: Literal["sat", "strades"] = Field(
        "sat", description="sat: CE on sPGD examples; strades: CE(clean) + beta_trades * KL(clean || adv) [unverified]"
    )
    train_l0_budget: int = Field(5, ge=1, description="l0 budget of the training attack (paper: 6x the evaluation budget)")
    attack_steps: int = Field(10, ge=1, description="sPGD iterations per training batch")
    train_mode: Literal["rand", "proj", "unproj"] = Field(
        "rand", description="which sPGD gradient each batch uses; rand draws one per batch"
    )
    beta_trades: float = Field(6.0, ge=0, description="sTRADES KL weight (TRADES default; unverified)")
    epochs: int = Field(30, ge=1, description="training epochs")
    lr: float = Field(1e-3, gt=0, description="Adam learning rate")
    batch_size: int = Field(64, ge=1, description="training batch size")
    eval_l0_budget: int = Field(3, ge=1, description="budget of the sPGD-ensemble evaluation after training")
    out: str = Field("sparse_adv_model.pt", description="where the trained state_dict is written")


TOOLS = [
    ToolSpec(
        name="sparse_attack",
        description="Evaluate a classifier's robustness to changes of k pixels (l0) with sparse-PGD, "
        "Sparse-RS or the sAA cascade; reports robust accuracy and writes the adversarial images.",
        args_model=AttackArgs,
        module="methods.sparse_pgd",
        run="methods.sparse_pgd.run:attack_tool",
        entry="attack",
    ),
    ToolSpec(
        name="sparse_adv_train",
        description="Adversarially train a classifier against sparse-PGD (sAT or sTRADES) and "
        "report clean and l0-robust accuracy; writes the trained state_dict.",
        args_model=AdvTrainArgs,
        module="methods.sparse_pgd",
        run="methods.sparse_pgd.run:train_tool",
        entry="train",
    ),
]
