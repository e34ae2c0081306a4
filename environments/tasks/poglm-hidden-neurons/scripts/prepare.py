"""Write the workspace data (true GLM, visible training spikes) and, per private split (search,
select, test), the held-out visible spikes (inputs/) and their private LL_ref."""

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from eval import (  # noqa: E402  (the seed lives in eval.py only)
    N_VIS,
    SPLIT_SEEDS,
    dataset,
    ll_ref_file,
    reference_ll,
    reference_posterior,
    visible,
)


def main() -> None:
    from methods.poglm.glm import basis

    ds = dataset()
    data = HERE.parent / "env" / "data"
    data.mkdir(parents=True, exist_ok=True)
    np.savez(data / "p_true.npz", W=ds.params.W.numpy(), b=ds.params.b.numpy(),
             basis=basis().numpy(), n_vis=np.int64(N_VIS))
    np.savez_compressed(data / "train.npz", X=ds.train[..., :N_VIS].numpy())
    (HERE / "private").mkdir(exist_ok=True)
    (HERE / "inputs").mkdir(exist_ok=True)
    q = reference_posterior(ds)
    for split in SPLIT_SEEDS:
        ll = reference_ll(ds, split, q)
        np.save(ll_ref_file(split), ll)
        # what the submission phase may see (produce.py): the held-out visible spikes
        np.save(HERE / "inputs" / f"x_{split}.npy", visible(ds, split).numpy())
        print(f"{split}: LL_ref mean {ll.mean():.3f} over {len(ll)} held-out sequences")
    print(f"wrote {data}/p_true.npz, train.npz")


if __name__ == "__main__":
    main()
