"""Arrow routing: zero-shot, per-token and per-layer expert selection from LoRA weights alone.

mttl's convention: a layer computes W0 h + h A B with A (in x r) and B (r x out), so the
update Delta W = A B acts on the row vector h from the right.
"""

from __future__ import annotations

import torch


def arrow_prototypes(A: torch.Tensor, B: torch.Tensor, scale_by_sigma: bool = False) -> torch.Tensor:
    """Top left singular vector of A_e B_e per expert, without forming the in x out matrix.

    ``A`` is (E, in, r) and ``B`` (E, r, out) (or one expert, unbatched). With A = QR,
    A B = Q (R B), so the top left singular vector is Q u1 where u1 is R B's. The sign is
    arbitrary (routing uses |h . v|). ``scale_by_sigma`` multiplies by sigma_1^2 (off in mttl).
    """
    single = A.dim() == 2
    if single:
        A, B = A[None], B[None]
    q, r = torch.linalg.qr(A.double())
    u, s, _ = torch.linalg.svd(r @ B.double(), full_matrices=False)
    protos = (q @ u[..., :, :1])[..., 0]  # (E, in)
    if scale_by_sigma:
        protos = protos * (s[..., :1] ** 2)
    protos = protos.to(A.dtype)
    return protos[0] if single else protos


def arrow_logits(h: torch.Tensor, protos: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """|h . v_e| / tau, (n, E); tau <= 0 means sqrt(d_in)."""
    tau = temperature if temperature > 0 else h.shape[-1] ** 0.5
    return (h @ protos.T).abs() / tau


def arrow_route(h: torch.Tensor, protos: torch.Tensor, top_k: int = 2, temperature: float = 1.0) -> torch.Tensor:
    """Weights (n, E): softmax over each token's top_k logits, zero elsewhere."""
    logits = arrow_logits(h, protos, temperature)
    k = min(top_k, logits.shape[1])
    top, idx = logits.topk(k, dim=1)
    weights = torch.zeros_like(logits)
    return weights.scatter(1, idx, torch.softmax(top, dim=1))


def mixture_delta(h: torch.Tensor, weights: torch.Tensor, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """sum_e w_e h A_e B_e per token: (n, out)."""
    low = torch.einsum("ni,eir->ner", h, A)
    return torch.einsum("ne,ner,ero->no", weights, low, B)
