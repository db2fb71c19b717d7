"""Imports sit at the top of their module; a function imports only to defer a heavy
dependency, as docs/development.md ("Lazy imports") allows.

Read from the source (the AST of every module of ``uqx/``), nothing imported: a module
loads at its import what its module-level imports name, and theirs in turn (the import
closure below). A function-level import is allowed only where it defers something its
module does not load already:

* the front ends (the command line, ``uqx/__init__.py`` and the ``.uqx`` accessor) stay
  light, so that ``uqx --help``, ``import uqx`` and the accessor's registration load no
  numerical stack: they import the library inside the functions that use it, and only
  the modules whose import brings some of that stack (:data:`NUMERICAL`);
* the library defers only the dependencies of :data:`DEFERRED` themselves (not a module of
  uqx that brings one), which some paths need and the others never load.
"""

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "uqx"

#: The numerical stack: third-party packages a front end must not load at its import.
NUMERICAL = ("numpy", "scipy", "pandas", "xarray", "dask", "distributed", "numba",
             "matplotlib", "netCDF4", "pyarrow", "pooch", "requests")

#: Front ends (file or folder, relative to the repository) -> the packages of
#: :data:`NUMERICAL` their import may load (the accessor is registered once xarray is
#: imported, which brings numpy and pandas).
FRONT_ENDS = {
    "uqx/cli/": (),
    "uqx/__init__.py": (),
    "uqx/accessor.py": ("xarray", "numpy", "pandas"),
}

#: Dependencies the library defers -> the paths that need them (docs/development.md).
DEFERRED = {
    "dask": "chunked (dask-backed) inputs and the progress bar of dask computations",
    "distributed": "studies on a dask.distributed cluster",
    "pyarrow": "Parquet inputs (optional: the 'parquet' extra)",
    "tqdm": "the step display of a validation (about 35 ms, kept off 'uqx --help')",
}

#: Function-level imports still to be moved, as {file: {(function, module)}} (a stale entry
#: fails below).
TEMPORARY: dict = {}


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _targets(node, module: str) -> list[str]:
    """Modules an import statement loads (``from P import m``: the submodule when it is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative: from the package of ``module``
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        up = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(up + ([base] if base else []))
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
    return subs if len(subs) == len(node.names) else [base, *subs]


def _is_type_checking(node) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(test)


@cache
def _imports(module: str):
    """``(top, deferred)``: the modules imported at import time, and ``(function, module,
    line)`` of every import inside a function."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top, deferred = set(), []

    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(child, child.name)
            elif _is_type_checking(child):
                continue
            elif isinstance(child, ast.Import | ast.ImportFrom):
                for target in _targets(child, module):
                    if function is None:
                        top.add(target)
                    else:
                        deferred.append((function, target, child.lineno))
            else:
                walk(child, function)

    walk(tree, None)
    return top, deferred


def _with_parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


@cache
def closure(name: str) -> frozenset:
    """Every module that importing ``name`` loads, as far as the source of uqx tells.

    A module of uqx brings its packages' ``__init__`` and its module-level imports, in
    turn; a third-party module brings itself and its parent packages (its own imports
    are not followed).
    """
    seen, todo = set(), list(_with_parents(name))
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        if m in MODULES:
            for target in _imports(m)[0]:
                todo.extend(_with_parents(target) - seen)
    return frozenset(seen)


def _top_package(name: str) -> str:
    return name.split(".")[0]


def _front_end(rel: str):
    return next((k for k in FRONT_ENDS if rel == k or rel.startswith(k)), None)


def _faults() -> list[str]:
    faults = []
    for module, path in MODULES.items():
        rel = path.relative_to(ROOT).as_posix()
        front = _front_end(rel)
        own = closure(module)
        allowed = TEMPORARY.get(rel, set())
        for function, target, line in _imports(module)[1]:
            if (function, target) in allowed:
                continue
            brings = {_top_package(m) for m in closure(target) - own}
            if front is not None:
                if brings & (set(NUMERICAL) - set(FRONT_ENDS[front])):
                    continue
                why = ("a front end imports inside a function only what brings the "
                       "numerical stack; import this at the top")
            else:
                if _top_package(target) in DEFERRED and brings & set(DEFERRED):
                    continue
                why = "import this at the top (only the dependencies of DEFERRED wait)"
            faults.append(f"{rel}:{line} {function}() imports {target}: {why}")
    return faults


def test_function_level_imports_only_defer_heavy_dependencies():
    faults = _faults()
    assert not faults, "\n".join(faults)


@pytest.mark.parametrize("front", FRONT_ENDS)
def test_front_ends_load_no_numerical_stack(front):
    light = [m for m, p in MODULES.items()
             if p.relative_to(ROOT).as_posix().startswith(front)]
    heavy = {m: sorted({_top_package(x) for x in closure(m)} & set(NUMERICAL)
                       - set(FRONT_ENDS[front])) for m in light}
    assert not any(heavy.values()), {m: h for m, h in heavy.items() if h}


def test_temporary_allowance_is_not_stale():
    for rel, pairs in TEMPORARY.items():
        found = {(f, t) for f, t, _ in _imports(_name(ROOT / rel))[1]}
        assert pairs <= found, f"{rel}: moved to the top, delete from TEMPORARY: {pairs - found}"


def test_the_closure_reads_the_graph():
    """The closure sees a module-level import chain and misses a deferred one."""
    assert "numba" in closure("uqx.engine.binning")
    assert "uqx.engine.defaults" in closure("uqx.cli.app")
    assert "dask" not in closure("uqx.inference.describe")  # deferred: chunked data only
    assert not {_top_package(m) for m in closure("uqx.plot")} & set(NUMERICAL)

