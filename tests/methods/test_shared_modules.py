"""The shared private modules of methods/ (``_data``, ``_lazy``) and the package layout they
make uniform: one adapter module (``run.py``), one ``__init__`` style, no cross-package imports."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from methods._data import (
    digits,
    digits_permuted_split,
    digits_stratified_split,
    load_npz,
)
from methods._lazy import lazy_exports
from methods.registry import METHODS_DIR, all_tools

PACKAGES = sorted(p.name for p in METHODS_DIR.iterdir() if (p / "tools.py").exists())


# ----------------------------------------------------------------------------- _data.load_npz


def test_load_npz_returns_the_asked_arrays(tmp_path):
    np.savez(tmp_path / "a.npz", X=np.ones((2, 3)), y=np.arange(2), extra=np.zeros(1))
    got = load_npz(tmp_path / "a.npz", "data", required=("X", "y"), optional=("w", "extra"))
    assert sorted(got) == ["X", "extra", "y"] and got["X"].shape == (2, 3)
    assert sorted(load_npz(tmp_path / "a.npz", "data")) == ["X", "extra", "y"]


@pytest.mark.parametrize("make, error, words", [
    (lambda p: None, FileNotFoundError, "no such file"),
    (lambda p: p.write_text("not a zip"), ValueError, "not a readable npz"),
    (lambda p: np.save(p, np.zeros(3)), ValueError, "not a readable npz"),
    (lambda p: np.savez(p, X=np.zeros(2)), ValueError, "lacks the array(s) ['y']"),
    (lambda p: np.savez(p, X=np.zeros(2), y=np.array([{"a": 1}], dtype=object)), ValueError,
     "not a readable npz"),
])
def test_load_npz_names_the_argument_in_every_failure(tmp_path, make, error, words):
    path = tmp_path / "f.npz"
    make(path)
    if path.suffix == ".npz" and not path.exists() and (tmp_path / "f.npz.npy").exists():
        (tmp_path / "f.npz.npy").rename(path)  # np.save appends .npy
    with pytest.raises(error, match=r"^vectors: ") as err:
        load_npz(path, "vectors", required=("X", "y"))
    assert words in str(err.value)


def test_load_npz_never_unpickles(tmp_path):
    """An object array in an actor's npz would run code when unpickled: it must be refused."""
    np.savez(tmp_path / "p.npz", X=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="not a readable npz"):
        load_npz(tmp_path / "p.npz", "data", required=("X",))


# ----------------------------------------------------------------------------- _data digits


def test_digits_are_exact_and_the_splits_partition_them():
    X, y = digits()
    assert X.shape == (1797, 64) and X.dtype == np.float32 and y.dtype == np.int64
    assert np.array_equal(X * 16, np.round(X * 16)) and X.min() == 0 and X.max() == 1
    for parts in (digits_permuted_split(1200, 0), digits_stratified_split(0.3, 0)):
        X_tr, y_tr, X_te, _ = parts
        assert len(X_tr) + len(X_te) == 1797 and len(y_tr) == len(X_tr)
        assert sorted(map(bytes, np.concatenate([X_tr, X_te]))) == sorted(map(bytes, X))
    assert len(digits_stratified_split(0.3, 0)[0]) == 1257
    a, b = digits_permuted_split(1000, 1), digits_permuted_split(1000, 2)
    assert not np.array_equal(a[1], b[1])


# ----------------------------------------------------------------------------- _lazy


def test_lazy_exports_resolve_on_use_and_refuse_unknown_names():
    getattr_, names = lazy_exports("methods", {"_data": ["digits", "load_npz"]})
    assert names == ["digits", "load_npz"] and getattr_("load_npz") is load_npz
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr_("nope")
    with pytest.raises(ValueError, match="two submodules"):
        lazy_exports("methods", {"_data": ["digits"], "_lazy": ["digits"]})


def test_lazy_exports_refuse_a_name_that_a_submodule_shadows():
    """Once ``methods.d3s.distill`` (the module) is imported, the package attribute ``distill``
    is that module, whatever ``__getattr__`` says: such a name cannot be re-exported."""
    import methods.d3s  # noqa: F401 - the package must be loaded to list its submodules

    with pytest.raises(ValueError, match=r"\['distill'\] would be shadowed"):
        lazy_exports("methods.d3s", {"distill": ["distill"]})


# ----------------------------------------------------------------------------- the layout


def test_every_tool_runs_from_its_own_packages_run_module():
    for spec in all_tools().values():
        module, _, func = spec.run.partition(":")
        assert module == f"{spec.module}.run", spec.name
        assert (METHODS_DIR / spec.module.split(".")[1] / "run.py").exists()
        tree = ast.parse((METHODS_DIR / spec.module.split(".")[1] / "run.py").read_text())
        assert func in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, spec.name


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_only_themselves_and_the_shared_private_modules(package):
    for path in (METHODS_DIR / package).glob("*.py"):
        for name in _imports(path):
            if not name.startswith("methods.") and name != "methods":
                continue
            parts = name.split(".")
            ok = len(parts) > 1 and (parts[1] == package or parts[1].startswith("_")
                                     or parts[1] == "toolspec")
            assert ok, f"{path.relative_to(METHODS_DIR)} imports {name}"


@pytest.mark.parametrize("package", PACKAGES)
def test_one_init_style(package):
    """An ``__init__`` is a docstring, optionally followed by ``lazy_exports``: nothing else."""
    tree = ast.parse((METHODS_DIR / package / "__init__.py").read_text())
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    assert ast.get_docstring(tree), package
    kinds = [type(n).__name__ for n in body]
    assert kinds in ([], ["ImportFrom", "Assign"]), (package, kinds)
    if body:
        assert body[0].module == "methods._lazy"
        assert json.dumps([t.id for t in body[1].targets[0].elts]) == '["__getattr__", "__all__"]'
