"""A submission's torch code as data: graphs eval.py runs without the submission's Python.

A task whose metric needs the submission's *function* (a model to attack, a decoder to run, a
map to differentiate) cannot ship arrays alone. Its produce.py turns that code into a
``torch.export`` graph of ATen ops plus plain tensors (:func:`save_exported`); eval.py rebuilds
it with :func:`load_exported_module`, which runs no Python of the submission's. Why not
``torch.export.load``: its archive reader unpickles weights with ``weights_only=False`` and
custom objects with ``pickle.loads``, and an ExportedProgram's ``guards_code`` and symbolic
shapes (``sympy.sympify``) are Python source that loading executes. So the program travels as
its JSON graph (checked field by field before torch parses it) and the tensors as a
``torch.save`` dict read back with ``weights_only=True``.
"""

from __future__ import annotations

import json
import keyword
import re
from pathlib import Path

from pydantic import BaseModel

PROGRAM_SUFFIX = ".program.json"
WEIGHTS_SUFFIX = ".weights.pt"

# Pure, deterministic ATen ops (overload packets). Anything else (I/O such as from_file, random
# ops, in-place or ``out=`` variants, uninitialised memory such as empty, data-dependent scalars
# such as item, custom namespaces, higher-order ops) is refused.
ALLOWED_OPS = frozenset("""
abs acos acosh adaptive_avg_pool1d adaptive_avg_pool2d add addcdiv addcmul addmm addmv alias all
amax amin any arange argmax argmin asin asinh _assert_tensor_metadata atan atan2 atanh
avg_pool1d avg_pool2d baddbmm bitwise_and bitwise_not bitwise_or bitwise_xor block_diag bmm cat
ceil clamp clamp_max clamp_min clone constant_pad_nd conv1d conv2d convolution copy cos cosh
cumprod cumsum detach diag diag_embed diagonal div dot elu embedding eq erf erfc exp exp2 expand
expm1 eye fill flip floor floor_divide fmod full full_like gather ge gelu gt hardsigmoid
hardswish hardtanh hypot index index_select isfinite isinf isnan layer_norm le leaky_relu lerp
lift_fresh_copy linalg_vector_norm linear log log10 log1p log2 log_sigmoid_forward log_softmax
_log_softmax logaddexp logical_and logical_not logical_or logical_xor logit logsumexp lt
masked_fill matmul max max_pool2d_with_indices maximum mean min minimum mm mul mv
_native_batch_norm_legit_no_training native_group_norm native_layer_norm ne neg norm ones
ones_like outer permute pow prod reciprocal relu remainder repeat reshape roll round rsqrt rsub
scalar_tensor select sgn sigmoid sign silu sin sinh slice softmax _softmax softplus split
split_with_sizes sqrt square squeeze stack std sub sum t tanh _to_copy transpose tril triu
unbind _unsafe_view unsqueeze var view where zeros zeros_like
""".split())
GETITEM = "_operator.getitem"  # picks one result of a multi-output op (max.dim, split...)
# Argument kinds of the serialized graph that carry plain values; the rest (symbolic values,
# parsed with sympy; nested graphs; custom objects; operators as values) are refused.
_ARG_KINDS = frozenset({
    "as_none", "as_tensor", "as_tensors", "as_int", "as_ints", "as_float", "as_floats",
    "as_string", "as_strings", "as_scalar_type", "as_memory_format", "as_layout", "as_device",
    "as_bool", "as_bools", "as_optional_tensors", "as_optional_tensor", "as_int_lists",
    "as_float_lists"})
_INPUT_KINDS = frozenset({"user_input", "parameter", "buffer", "tensor_constant"})
_SPEC_TYPES = frozenset({None, "builtins.tuple", "builtins.list", "builtins.dict"})
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class ExportedProgramError(ValueError):
    """The submission's exported program breaks a rule; the message names the first one."""


class GraphLimits(BaseModel):
    """Caps on what a trusted phase agrees to load (the graph is the submission's choice)."""

    max_nodes: int = 5_000
    max_program_bytes: int = 16 << 20
    max_weight_bytes: int = 256 << 20


class TensorSpec(BaseModel):
    """An expected input or output of the graph: exact shape and dtype (``"float32"``...)."""

    shape: tuple[int, ...]
    dtype: str

    @classmethod
    def of(cls, tensor) -> TensorSpec:
        return cls(shape=tuple(tensor.shape), dtype=str(tensor.dtype).removeprefix("torch."))


def save_exported(out: Path | str, name: str, module, example_args: tuple) -> None:
    """Export ``module`` (an nn.Module) on ``example_args`` with static shapes to
    ``out/<name>.program.json`` + ``out/<name>.weights.pt`` (submission phase). The graph is
    functionalised (``run_decompositions({})``: in-place ops become pure ones, dropout in eval
    mode disappears) so the trusted side's pure-op rule does not refuse honest models."""
    import torch
    from torch._export.serde.serialize import serialize

    ep = torch.export.export(module, tuple(example_args)).run_decompositions({})
    art = serialize(ep)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}{PROGRAM_SUFFIX}").write_bytes(art.exported_program)

    def plain(d: dict) -> dict:
        return {k: v.detach().clone() for k, v in d.items()}

    consts = {k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}
    if len(consts) != len(ep.constants):
        raise ExportedProgramError("the model holds non-tensor constants (script objects)")
    torch.save({"state_dict": plain(ep.state_dict), "constants": plain(consts)},
               out / f"{name}{WEIGHTS_SUFFIX}")


def load_exported_module(folder: Path | str, name: str, inputs, outputs: list[TensorSpec],
                         limits: GraphLimits | None = None):
    """The graph :func:`save_exported` wrote, as a callable ``nn.Module`` (trusted phase).

    ``inputs`` is an example of the call's arguments (a tuple, tensors possibly in dicts or
    lists): the graph must take exactly that structure, shapes and dtypes. ``outputs`` lists the
    results it must return. Before torch parses anything, the JSON is checked
    (:func:`check_program`); after, every node again (:func:`check_graph`). A missing file is a
    :class:`FileNotFoundError` (no submission); any broken rule an :class:`ExportedProgramError`.
    Gradients flow through the returned module (its inputs may require grad)."""
    import torch
    from torch._export.serde.serialize import SerializedArtifact, deserialize

    limits = limits or GraphLimits()
    folder = Path(folder)
    program, weights = folder / f"{name}{PROGRAM_SUFFIX}", folder / f"{name}{WEIGHTS_SUFFIX}"
    for path, cap in ((program, limits.max_program_bytes), (weights, limits.max_weight_bytes)):
        if not path.is_file():
            raise FileNotFoundError(f"the submission produced no {path.name}")
        if path.stat().st_size > cap:
            raise ExportedProgramError(f"{path.name} is {path.stat().st_size} bytes "
                                       f"(limit {cap})")
    try:
        doc = json.loads(program.read_bytes())
    except (ValueError, UnicodeDecodeError) as err:
        raise ExportedProgramError(f"{program.name} is not JSON: {err}") from None
    doc = check_program(doc, limits)
    try:
        tensors = torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as err:  # an UnpicklingError for anything but plain tensors
        raise ExportedProgramError(f"{weights.name} holds more than plain tensors: "
                                   f"{str(err).splitlines()[0]}") from None
    state_dict, constants = _check_weights(tensors, doc)
    try:
        ep = deserialize(SerializedArtifact(json.dumps(doc).encode(), state_dict, constants,
                                            (tuple(inputs), {})))
    except Exception as err:
        raise ExportedProgramError(f"{program.name} is not a valid program: {err}") from None
    check_graph(ep)
    _check_signature(ep, inputs, outputs)
    return ep.module(check_guards=False)  # no guard code to run: check_program refused it


def check_program(doc: dict, limits: GraphLimits) -> dict:
    """The serialized program if every field is plain data; raises otherwise. Returns a copy
    with node metadata (stack traces: text that code generation may copy) dropped."""
    if not isinstance(doc, dict) or "graph_module" not in doc:
        raise ExportedProgramError("not a serialized ExportedProgram")
    if doc.get("guards_code"):
        raise ExportedProgramError("the program carries guard code (Python source)")
    if doc.get("range_constraints"):
        raise ExportedProgramError("the program has symbolic shapes (export with static shapes)")
    gm = doc["graph_module"]
    graph = gm.get("graph") or {}
    for key in ("sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"):
        if graph.get(key):
            raise ExportedProgramError(f"the program has {key.removesuffix('_values')} values")
    if gm.get("treespec_namedtuple_fields"):
        raise ExportedProgramError("the program's inputs or outputs use named tuples")
    nodes = graph.get("nodes") or []
    if len(nodes) > limits.max_nodes:
        raise ExportedProgramError(f"the graph has {len(nodes)} nodes (limit {limits.max_nodes})")
    _check_values(doc)
    for node in nodes:
        target = node.get("target")
        if target != GETITEM and _op_packet(target) not in ALLOWED_OPS:
            raise ExportedProgramError(f"the graph calls {target!r}: not an allowed pure ATen op")
        if not _identifier(node.get("name")):
            raise ExportedProgramError(f"bad node name {node.get('name')!r}")
    for tv in (graph.get("tensor_values") or {}).values():
        if (tv.get("device") or {}).get("type") != "cpu":
            raise ExportedProgramError("the graph's tensors must live on the CPU")
    for spec in gm.get("signature", {}).get("input_specs", []):
        if set(spec) - _INPUT_KINDS:
            raise ExportedProgramError(f"input kind {sorted(spec)} is not allowed")
    for spec in gm.get("signature", {}).get("output_specs", []):
        if set(spec) != {"user_output"}:
            raise ExportedProgramError(f"the graph mutates its inputs or state ({sorted(spec)})")
    for spec in gm.get("signature", {}).get("input_specs", []):
        body = next(iter(spec.values()))
        for key in ("parameter_name", "buffer_name", "tensor_constant_name"):
            if key in body and not re.fullmatch(rf"{_NAME}(\.[A-Za-z0-9_]+)*", str(body[key])):
                raise ExportedProgramError(f"bad weight name {body[key]!r}")
    for entry in gm.get("module_call_graph", []):
        signature = entry.get("signature") or {}
        for field in ("in_spec", "out_spec"):
            _check_treespec(signature.get(field))
        for arg in signature.get("forward_arg_names") or []:  # spliced into generated source
            if not _identifier(arg):
                raise ExportedProgramError(f"bad argument name {arg!r}")
    clean = json.loads(json.dumps(doc))
    clean["graph_module"]["metadata"] = {}
    for node in clean["graph_module"]["graph"].get("nodes") or []:
        node["metadata"] = {}
    clean["graph_module"]["module_call_graph"] = [
        e for e in clean["graph_module"].get("module_call_graph", []) if e.get("fqn") == ""]
    return clean


def _identifier(name) -> bool:
    return isinstance(name, str) and re.fullmatch(_NAME, name) is not None \
        and not keyword.iskeyword(name) and not name.startswith("__")


def _op_packet(target) -> str | None:
    """``torch.ops.aten.<packet>.<overload>`` -> packet; anything else -> None."""
    m = re.fullmatch(rf"torch\.ops\.aten\.({_NAME})\.({_NAME})", str(target))
    return m.group(1) if m and "out" not in m.group(2).split("_") else None  # no out= variants


def _check_values(value) -> None:
    """Every argument anywhere in the document is of a plain kind; no sympy expressions."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for key, item in v.items():
                if key == "expr_str" or (key.startswith("as_") and key not in _ARG_KINDS):
                    raise ExportedProgramError(f"the program uses {key!r} (not plain data)")
                stack.append(item)
        elif isinstance(v, list):
            stack.extend(v)


def _check_treespec(text) -> None:
    if text is None:
        return
    try:
        stack = [json.loads(text)[1]]
    except (ValueError, TypeError, IndexError) as err:
        raise ExportedProgramError(f"bad input/output structure: {err}") from None
    while stack:
        spec = stack.pop()
        if not isinstance(spec, dict) or spec.get("type") not in _SPEC_TYPES:
            raise ExportedProgramError("inputs and outputs may only be tensors in tuples, "
                                       "lists and dicts")
        stack.extend(spec.get("children_spec") or [])


def _check_weights(tensors, doc: dict) -> tuple[dict, dict]:
    """The weights file's two dicts, which must name exactly the graph's parameters, buffers
    and constants, each a plain dense CPU tensor."""
    import torch

    if not isinstance(tensors, dict) or set(tensors) != {"state_dict", "constants"}:
        raise ExportedProgramError("the weights file must hold {'state_dict', 'constants'}")
    wanted, params = {"state_dict": set(), "constants": set()}, set()
    for spec in doc["graph_module"]["signature"]["input_specs"]:
        kind, body = next(iter(spec.items()))
        if kind == "parameter":
            params.add(body.get("parameter_name"))
        if kind in ("parameter", "buffer"):
            wanted["state_dict" if body.get("persistent", True) is not False else "constants"
                   ].add(body.get("parameter_name") or body.get("buffer_name"))
        elif kind == "tensor_constant":
            wanted["constants"].add(body["tensor_constant_name"])
    for part, names in wanted.items():
        got = tensors[part]
        if not isinstance(got, dict) or set(got) != names:
            raise ExportedProgramError(f"the weights' {part} does not match the graph's inputs")
        for key, t in got.items():
            if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided:
                raise ExportedProgramError(f"weight {key!r} is not a plain dense tensor")
    state = {k: torch.nn.Parameter(t, requires_grad=False) if k in params else t
             for k, t in tensors["state_dict"].items()}  # the trusted side trains nothing
    return state, tensors["constants"]


def check_graph(ep) -> None:
    """Every node of the loaded graph: placeholders, allowed pure ATen ops, getitem, output.
    The JSON check already held; this re-checks what torch built, and the ops' own schemas."""
    import operator

    import torch

    for node in ep.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        target = node.target
        if node.op == "call_function" and target is operator.getitem:
            continue
        ok = (node.op == "call_function" and isinstance(target, torch._ops.OpOverload)
              and target.namespace == "aten" and target._schema.name.split("::")[-1] in ALLOWED_OPS
              and not target._schema.is_mutable
              and torch.Tag.nondeterministic_seeded not in target.tags)
        if not ok:
            raise ExportedProgramError(f"node {node.name}: {node.op} {target} is not allowed")


def _check_signature(ep, inputs, outputs: list[TensorSpec]) -> None:
    import torch
    from torch.utils._pytree import tree_flatten

    flat, spec = tree_flatten((tuple(inputs), {}))
    if spec != ep.call_spec.in_spec:
        raise ExportedProgramError(f"the graph takes {ep.call_spec.in_spec}, expected {spec}")
    by_name = {n.name: n for n in ep.graph.nodes}
    got_in = [TensorSpec.of(by_name[s.arg.name].meta["val"])
              for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    if got_in != [TensorSpec.of(t) for t in flat if isinstance(t, torch.Tensor)] or \
            len(got_in) != len(flat):
        raise ExportedProgramError(f"the graph's inputs {got_in} are not the expected ones")
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    got_out = [TensorSpec.of(a.meta["val"]) if hasattr(a, "meta") else None
               for a in out_node.args[0]]
    if got_out != list(outputs):
        raise ExportedProgramError(f"the graph returns {got_out}, expected {list(outputs)}")


def batched(module, batch: int):
    """``module`` (a graph exported at leading size ``batch``) applied to any leading size:
    split into chunks of ``batch``, the last zero-padded and its padding cut from the result.
    Static shapes keep symbolic (sympy-parsed) sizes out of the graph; rows are independent
    for the models this serves, so the chunking changes no row's result."""
    import torch

    class Batched(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, x):
            parts = []
            for start in range(0, len(x), batch):
                chunk = x[start:start + batch]
                n = len(chunk)
                if n < batch:
                    chunk = torch.cat([chunk, chunk.new_zeros((batch - n, *chunk.shape[1:]))])
                parts.append(self.inner(chunk)[:n])
            return torch.cat(parts)

        def train(self, mode: bool = True):
            # an exported graph has no train mode (it raises): it was exported in eval mode
            self.training = mode
            return self

    return Batched()
