"""Write the workspace data (true GLM, visible training spikes) and the private LL_ref."""

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from eval import N_VIS, dataset, reference_ll  # noqa: E402  (the seed lives in eval.py only)


def main() -> None:
    from methods.poglm.glm import basis

    ds = dataset()
    data = HERE.parent / "env" / "data"
    data.mkdir(parents=True, exist_ok=True)
    np.savez(data / "p_true.npz", W=ds.params.W.numpy(), b=ds.params.b.numpy(),
             basis=basis().numpy(), n_vis=np.int64(N_VIS))
    np.savez_compressed(data / "train.npz", X=ds.train[..., :N_VIS].numpy())
    private = HERE / "private"
    private.mkdir(exist_ok=True)
    ll = reference_ll(ds)
    np.save(private / "ll_ref.npy", ll)
    # what the submission phase may see (produce.py): the test spikes of the visible neurons
    (HERE / "inputs").mkdir(exist_ok=True)
    np.save(HERE / "inputs" / "x_test.npy", ds.test[..., :N_VIS].numpy())
    print(f"wrote {data}/p_true.npz, train.npz; LL_ref mean {ll.mean():.3f} over {len(ll)} test sequences")


if __name__ == "__main__":
    main()
