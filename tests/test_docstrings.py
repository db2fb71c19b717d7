"""Docstrings of uqx carry no control characters (a ``\\frac`` or ``\\bar`` in a non-raw
string, or pasted from one, becomes a form feed or a backspace and breaks the math)."""

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import uqx

#: control characters other than newline (tab included: docstrings indent with spaces)
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
ROOT = Path(uqx.__file__).parent


def _modules():
    yield uqx
    for info in pkgutil.walk_packages(uqx.__path__, "uqx."):
        yield importlib.import_module(info.name)


def _documented(module):
    """The module and every class, function, method and property defined in it."""
    yield module.__name__, module
    seen = set()
    stack = [(module.__name__, module)]
    while stack:
        prefix, owner = stack.pop()
        for name, obj in vars(owner).items():
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            elif isinstance(obj, property):
                obj = obj.fget
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__ or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{prefix}.{name}", obj
            if inspect.isclass(obj):
                stack.append((f"{prefix}.{name}", obj))


def _show(doc, match):
    i = match.start()
    return f"{match.group()!r} in ...{doc[max(0, i - 30) : i + 30]!r}..."


def test_no_control_characters_in_docstrings():
    bad = []
    for module in _modules():
        for name, obj in _documented(module):
            doc = getattr(obj, "__doc__", None)
            if isinstance(doc, str) and (m := CONTROL.search(doc)):
                bad.append(f"{name}: {_show(doc, m)}")
    assert not bad, "control characters in docstrings (use r\"\"\"...\"\"\"):\n" + "\n".join(bad)


def test_docstrings_with_backslashes_are_raw():
    # a non-raw docstring with \nu or \neq loses its backslash to a newline without any
    # control character left to see: every docstring written with a backslash is raw
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(src)):
            if not isinstance(
                node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                continue
            doc = ast.get_docstring(node, clean=False)
            if doc is None:
                continue
            seg = ast.get_source_segment(src, node.body[0].value) or ""
            prefix = seg[: len(seg) - len(seg.lstrip("rRuU"))]
            if "\\" in seg and "r" not in prefix.lower():
                rel = path.relative_to(ROOT.parent)
                bad.append(f"{rel}:{node.body[0].lineno} {getattr(node, 'name', '<module>')}")
    assert not bad, "docstrings with a backslash that are not raw:\n" + "\n".join(bad)
