"""The run state: named steps, named values between them, one draw of the copies.

``uqx.validate`` is the list :data:`uqx.workflow.validation.STEPS` over one
``Run``; the docs list the same steps; no step hands another a tuple of more than two
unnamed values; the question "consistent up to a factor" reuses the copies of the tests.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

import uqx
import uqx.inference.reference as R
import uqx.workflow.references as refs
from uqx.workflow.validation import STEPS

ROOT = Path(__file__).resolve().parents[1]


def _numbered_steps(text: str) -> list[str]:
    """The step names of a numbered list ``1. `load_step`...`` (docs or docstring)."""
    return re.findall(r"^\s*\d+\.\s+(?::func:)?`(\w+_step)`", text, flags=re.M)


def test_docs_and_docstring_list_the_steps_of_the_code():
    names = [f.__name__ for f in STEPS]
    assert len(names) == len(set(names)) >= 10
    assert _numbered_steps((ROOT / "docs" / "development.md").read_text()) == names
    import uqx.workflow.validation as V

    assert _numbered_steps(V.__doc__) == names
    for f in STEPS:  # every step says what it does
        assert f.__doc__ and f.__doc__.strip(), f.__name__


def _is_numba(fn: ast.FunctionDef) -> bool:
    return any("numba" in ast.unparse(d) for d in fn.decorator_list)


def test_no_step_returns_a_tuple_of_more_than_two_unnamed_values():
    # workflow/ and inference/ hand named values (dataclasses, NamedTuples) between
    # steps; the numba kernels' register state and the hashable cache keys are not steps
    bad = []
    for sub in ("workflow", "inference"):
        for path in sorted((ROOT / "uqx" / sub).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef) or _is_numba(fn) or "key" in fn.name:
                    continue
                for node in ast.walk(fn):
                    if (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
                            and len(node.value.elts) > 2):
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {fn.name}")
    assert not bad, bad


def test_rescaled_question_reuses_the_copies(monkeypatch):
    """uE twice too small: "consistent up to a factor" is asked, on the same copies."""
    draws, sorts = [], []
    real_draw, real_prepare = refs.draw_copies, refs.prepare_sets
    monkeypatch.setattr(refs, "draw_copies", lambda *a, **k: draws.append(a[2].label)
                        or real_draw(*a, **k))
    monkeypatch.setattr(refs, "prepare_sets", lambda *a, **k: sorts.append(1)
                        or real_prepare(*a, **k))
    rng = np.random.default_rng(5)
    u = np.exp(rng.normal(0, 0.4, 800))
    E = u * rng.standard_normal(800)
    kw = dict(stats=["zms", "zmse", "ence"], n_boot=100, n_mc=200, seed=3, conditional=False)
    calibrated = uqx.validate(uqx.from_arrays(E, u, name="ok"), **kw)
    n_draws, n_sorts = len(draws), len(sorts)
    draws.clear()
    sorts.clear()
    scaled = uqx.validate(uqx.from_arrays(E, u / 2, name="half"), **kw)
    assert str(calibrated["question_verdict"].sel(question="average").item()) != "invalid"
    assert str(scaled["question_verdict"].sel(question="average").item()) == "invalid"
    assert str(scaled["rescaled_consistency"].item()) != ""  # the question was asked
    assert (len(draws), len(sorts)) == (n_draws, n_sorts) == (len(draws), 1)


def test_copy_drawer_takes_named_members():
    """simulate_reference is the drawer with a default member; its modes are named."""
    from uqx.engine.resample import seed_sequence
    from uqx.engine.unit_variance import Draw, unit_args

    ds = uqx.from_arrays(np.linspace(-1, 1, 200), np.linspace(0.5, 1.5, 200), name="s")
    a = uqx.simulate_reference(ds, ["zms", "ence"], dist="t", nu=5.0, n_mc=50, seed=2,
                               keep_draws=True)
    b = R.draw_copies(ds, ["zms", "ence"], R.Member("t", 5.0), n_mc=50, seed=2).summary
    np.testing.assert_array_equal(a["draws"].values, b["draws"].values)
    assert R.Member("t", 5.0).stream_label == "T5" and R.Member("data").stream_label == "data"
    per_segment = unit_args(seed_sequence(1, "x"), "t", np.array([5.0, 8.0]))
    assert per_segment.code == Draw.STUDENT_PER_SEGMENT
    assert per_segment.segment_t.shape == (2, 3)
