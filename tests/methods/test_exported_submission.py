"""methods._submission's exported programs: the submission's torch code as data.

Each attack is first shown to work against torch's own loading path (``deserialize`` on the
submission's bytes, ``torch.load`` without ``weights_only``), then shown refused by
``load_exported_module``, the loader every trusted phase uses.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from methods._exported import (
    PROGRAM_SUFFIX,
    WEIGHTS_SUFFIX,
    ExportedProgramError,
    GraphLimits,
    TensorSpec,
    batched,
    load_exported_module,
    save_exported,
)

X = torch.rand(4, 8)
OUT = [TensorSpec(shape=(4, 3), dtype="float32")]


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Dropout(0.5),
                                 nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


def _saved(tmp_path: Path, module: nn.Module, x=X) -> Path:
    save_exported(tmp_path, "m", module.eval(), (x,))
    return tmp_path


def _naive_load(folder: Path):
    """What a trusted phase would do with torch's own parts and no checks."""
    from torch._export.serde.serialize import SerializedArtifact, deserialize

    weights = torch.load(folder / f"m{WEIGHTS_SUFFIX}", weights_only=False)
    state = {k: nn.Parameter(v) for k, v in weights["state_dict"].items()}
    return deserialize(SerializedArtifact((folder / f"m{PROGRAM_SUFFIX}").read_bytes(), state,
                                          weights["constants"], ((X,), {}))).module()


def _edit_program(folder: Path, edit) -> None:
    path = folder / f"m{PROGRAM_SUFFIX}"
    doc = json.loads(path.read_bytes())
    edit(doc)
    path.write_text(json.dumps(doc))


# --- honest programs ---------------------------------------------------------------------------

def test_a_model_round_trips_with_gradients(tmp_path):
    model = Mlp().eval()
    graph = load_exported_module(_saved(tmp_path, model), "m", (X,), OUT)
    x1, x2 = X.clone().requires_grad_(), X.clone().requires_grad_()
    torch.testing.assert_close(graph(x1), model(x2), rtol=0, atol=0)
    graph(x1).square().sum().backward()
    model(x2).square().sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=0, atol=0)
    assert sum(p.numel() for p in graph.parameters()) == 8 * 16 + 16 + 16 * 3 + 3


def test_batched_applies_a_fixed_batch_graph_to_any_size(tmp_path):
    model = Mlp().eval()
    graph = batched(load_exported_module(_saved(tmp_path, model), "m", (X,), OUT), 4).eval()
    x = torch.rand(11, 8)
    torch.testing.assert_close(graph(x), model(x))
    assert graph(x[:1]).shape == (1, 3)


def test_missing_and_malformed_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="m.program.json"):
        load_exported_module(tmp_path, "m", (X,), OUT)
    _saved(tmp_path, Mlp())
    (tmp_path / f"m{PROGRAM_SUFFIX}").write_text("{not json")
    with pytest.raises(ExportedProgramError, match="not JSON"):
        load_exported_module(tmp_path, "m", (X,), OUT)


# --- attacks -----------------------------------------------------------------------------------

class Noisy(nn.Module):
    def forward(self, x):
        return x[:, :3] + torch.rand_like(x[:, :3])


def test_a_random_op_is_refused(tmp_path):
    folder = _saved(tmp_path, Noisy())
    naive = _naive_load(folder)
    assert not torch.equal(naive(X), naive(X))  # the attack: scores that change per call
    with pytest.raises(ExportedProgramError, match="rand_like"):
        load_exported_module(folder, "m", (X,), OUT)


def test_an_io_op_is_refused(tmp_path):
    folder = _saved(tmp_path, Mlp())

    def to_from_file(doc):
        node = next(n for n in doc["graph_module"]["graph"]["nodes"] if "relu" in n["target"])
        node["target"] = "torch.ops.aten.from_file.default"
    _edit_program(folder, to_from_file)
    with pytest.raises(ExportedProgramError, match="from_file"):
        load_exported_module(folder, "m", (X,), OUT)


calls: list[int] = []


@torch.library.custom_op("labcoat_test::side_effect", mutates_args=())
def side_effect(x: torch.Tensor) -> torch.Tensor:
    calls.append(1)  # stands for any Python: writing a result, opening a socket
    return x.clone()


@side_effect.register_fake
def _(x):
    return torch.empty_like(x)


class Custom(nn.Module):
    def forward(self, x):
        return torch.ops.labcoat_test.side_effect(x[:, :3])


def test_a_custom_op_is_refused(tmp_path):
    folder = _saved(tmp_path, Custom())
    calls.clear()
    _naive_load(folder)(X)
    assert calls  # the attack: the op's Python ran in the loading process
    calls.clear()
    with pytest.raises(ExportedProgramError, match="labcoat_test"):
        load_exported_module(folder, "m", (X,), OUT)
    assert not calls


class Payload:
    def __reduce__(self):
        return (Path.touch, (Path(MARKER),))


MARKER = "/tmp/labcoat-exported-payload-ran"


def test_a_pickled_payload_in_the_weights_is_refused(tmp_path):
    folder = _saved(tmp_path, Mlp())
    weights = folder / f"m{WEIGHTS_SUFFIX}"
    tensors = torch.load(weights, weights_only=True)
    tensors["constants"]["evil"] = Payload()
    torch.save(tensors, weights)
    Path(MARKER).unlink(missing_ok=True)
    torch.load(weights, weights_only=False)
    assert Path(MARKER).exists()  # the attack: unpickling runs the payload
    Path(MARKER).unlink()
    with pytest.raises(ExportedProgramError, match="plain tensors"):
        load_exported_module(folder, "m", (X,), OUT)
    assert not Path(MARKER).exists()


def test_extra_or_missing_weights_are_refused(tmp_path):
    folder = _saved(tmp_path, Mlp())
    weights = folder / f"m{WEIGHTS_SUFFIX}"
    tensors = torch.load(weights, weights_only=True)
    tensors["state_dict"]["extra"] = torch.zeros(1)
    torch.save(tensors, weights)
    with pytest.raises(ExportedProgramError, match="does not match"):
        load_exported_module(folder, "m", (X,), OUT)


def test_python_source_in_the_program_is_refused(tmp_path):
    """guards_code is exec'd by ExportedProgram.module(); symbolic sizes go through sympify."""
    folder = _saved(tmp_path, Mlp())
    payload = f"__import__('pathlib').Path('{MARKER}').touch() is None"
    _edit_program(folder, lambda d: d.update(guards_code=[payload]))
    Path(MARKER).unlink(missing_ok=True)
    _naive_load(folder)(X)
    assert Path(MARKER).exists()  # the attack: the guard ran the submission's text on a call
    Path(MARKER).unlink()
    with pytest.raises(ExportedProgramError, match="guard code"):
        load_exported_module(folder, "m", (X,), OUT)

    folder = tmp_path / "dyn"
    ep = torch.export.export(Mlp().eval(), (X,), dynamic_shapes=({0: torch.export.Dim("n")},))
    from torch._export.serde.serialize import serialize
    folder.mkdir()
    save_exported(folder, "m", Mlp().eval(), (X,))
    (folder / f"m{PROGRAM_SUFFIX}").write_bytes(serialize(ep).exported_program)
    with pytest.raises(ExportedProgramError, match="symbolic"):
        load_exported_module(folder, "m", (X,), OUT)

    def expr(doc):
        doc["guards_code"] = []
        doc["graph_module"]["graph"]["tensor_values"]["x"]["sizes"][0] = {"as_expr": {
            "expr_str": f"__import__('pathlib').Path('{MARKER}').touch()", "hint": {"as_int": 4}}}
    _edit_program(tmp_path, expr)
    Path(MARKER).unlink(missing_ok=True)
    with contextlib.suppress(Exception):  # torch fails later; the payload has run by then
        _naive_load(tmp_path)
    assert Path(MARKER).exists()  # the attack: sympy evaluated the submission's text
    Path(MARKER).unlink()
    with pytest.raises(ExportedProgramError, match="as_expr"):
        load_exported_module(tmp_path, "m", (X,), OUT)
    assert not Path(MARKER).exists()


def test_source_spliced_into_the_generated_forward_is_refused(tmp_path):
    """ExportedProgram.module() writes ``def forward(self, <forward_arg_names>)`` as Python
    source and compiles it: the submission's text reaches the compiler (shown by the
    SyntaxError; a payload valid in both places it is spliced into was not found, the rule
    refuses the class anyway)."""
    folder = _saved(tmp_path, Mlp())

    def inject(doc):
        root = doc["graph_module"]["module_call_graph"][0]["signature"]
        root["forward_arg_names"] = [f"x=__import__('pathlib').Path('{MARKER}').touch()"]
    _edit_program(folder, inject)
    with pytest.raises(SyntaxError):
        _naive_load(folder)
    with pytest.raises(ExportedProgramError, match="argument name"):
        load_exported_module(folder, "m", (X,), OUT)
    assert not Path(MARKER).exists()


class Mutating(nn.Module):
    def forward(self, x):
        x.add_(1.0)
        return x[:, :3] * 2


def test_a_graph_that_mutates_its_input_is_refused(tmp_path):
    folder = _saved(tmp_path, Mutating(), X.clone())
    with pytest.raises(ExportedProgramError, match="mutates"):
        load_exported_module(folder, "m", (X,), OUT)


def test_a_huge_graph_is_refused(tmp_path):
    folder = _saved(tmp_path, Mlp())
    with pytest.raises(ExportedProgramError, match="nodes"):
        load_exported_module(folder, "m", (X,), OUT, GraphLimits(max_nodes=2))
    with pytest.raises(ExportedProgramError, match="bytes"):
        load_exported_module(folder, "m", (X,), OUT, GraphLimits(max_program_bytes=100))


def test_wrong_shapes_are_refused(tmp_path):
    folder = _saved(tmp_path, Mlp())
    with pytest.raises(ExportedProgramError, match="inputs"):
        load_exported_module(folder, "m", (torch.rand(5, 8),), OUT)
    with pytest.raises(ExportedProgramError, match="inputs"):
        load_exported_module(folder, "m", (X.double(),), OUT)
    with pytest.raises(ExportedProgramError, match="returns"):
        load_exported_module(folder, "m", (X,), [TensorSpec(shape=(4, 2), dtype="float32")])
    with pytest.raises(ExportedProgramError, match="takes"):
        load_exported_module(folder, "m", (X, X), OUT)
