"""Follow the copies step through the code: the modules it stays in and its climbs.

Issue 46 counts how often the copies step of one validation changes module ("stays") and
how often it goes back up the layers of the package ("climbs"), followed through the code.
This script does that reading mechanically, from the source: starting at
``uqx.workflow.steps.copies_step`` it walks each function's calls in the order they are
written, resolves every call whose name is a uqx function (imported or defined in its module),
enters it the first time it is met (a function already read is entered again but not re-read),
and records the module of every function entered and of the caller it returns to. A stay is a
maximal run of one module in that sequence; a climb is a move to a module of a higher layer
(cli > report > plot > text > workflow > sweeps > inference > dataio > engine > the package's
root modules). Calls through attributes of objects (methods) are not followed: the count is a
lower bound of what runs.

Run: ``.venv/bin/python benchmarks/trace_copies_step.py [--list]
[--start uqx.workflow.steps:copies_step]``
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import textwrap

LAYERS = ("uqx.cli", "uqx.report", "uqx.plot", "uqx.text", "uqx.workflow", "uqx.sweeps",
          "uqx.inference", "uqx.dataio", "uqx.engine", "uqx")


def layer(module: str) -> int:
    """Rank of a module's layer (0: the top)."""
    return next(k for k, top in enumerate(LAYERS) if module == top or module.startswith(top + "."))


def _resolve(module, node):
    """The uqx function a call's ``func`` names, or None."""
    if isinstance(node, ast.Name):
        obj = getattr(module, node.id, None)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = getattr(module, node.value.id, None)
        obj = getattr(owner, node.attr, None) if inspect.ismodule(owner) else None
    else:
        return None
    if inspect.isfunction(obj) and obj.__module__.startswith("uqx"):
        return obj
    wrapped = getattr(obj, "py_func", None)  # a numba kernel: its Python function
    if inspect.isfunction(wrapped) and wrapped.__module__.startswith("uqx"):
        return wrapped
    return None


def _calls(func):
    """The uqx functions ``func`` calls, in the order they are written (nested calls first)."""
    module = importlib.import_module(func.__module__)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError):
        return []
    out = []

    class Visitor(ast.NodeVisitor):
        def visit_Call(self, node):
            self.generic_visit(node)  # the arguments are evaluated first
            target = _resolve(module, node.func)
            if target is not None and target is not func:
                out.append(target)

        def visit_FunctionDef(self, node):  # nested definitions run only when called
            if node is tree.body[0]:
                self.generic_visit(node)

    Visitor().visit(tree)
    return out


def follow(start):
    """The sequence of modules the code passes through from ``start`` (see the module doc)."""
    seen, sequence = set(), []

    def enter(func):
        sequence.append(func.__module__)
        if func in seen:
            return
        seen.add(func)
        for callee in _calls(func):
            enter(callee)
            sequence.append(func.__module__)  # back in the caller

    enter(start)
    runs = [m for k, m in enumerate(sequence) if k == 0 or sequence[k - 1] != m]
    return runs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--start", default="uqx.workflow.steps:copies_step")
    p.add_argument("--list", action="store_true", help="print the stays in order")
    a = p.parse_args(argv)
    mod, name = a.start.split(":")
    runs = follow(getattr(importlib.import_module(mod), name))
    climbs = sum(layer(b) < layer(x) for x, b in zip(runs, runs[1:], strict=False))
    print(f"{a.start}: {len(runs)} stays in {len(set(runs))} modules, {climbs} climbs "
          "back up the layers")
    if a.list:
        for m in runs:
            print("  ", m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
