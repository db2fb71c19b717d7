"""The steps of a validation: named, with the fields they read and write; one draw of copies.

``uqx.validate`` is the list :data:`uqx.workflow.steps.STEPS` over one ``Run``;
each step declares the fields of ``Run`` it reads and writes, the workflow checks the
declarations as it runs, and they are what the steps do on small validations; the docs
list the same steps and the same declarations; no step hands another a tuple of more than
two unnamed values; the question "consistent up to a factor" reuses the copies of the tests.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from pathlib import Path

import numpy as np
import pytest

import uqx
import uqx.inference.reference as R
import uqx.workflow.references as refs
import uqx.workflow.steps as V
import uqx.workflow.validation as validation
from uqx.workflow.steps import GIVEN_FIELDS, RUN_FIELDS, STEPS, Step, StepError

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "development.md"


def _numbered_steps(text: str) -> list[str]:
    """The step names of a numbered list ``1. `load_step`...`` (docs or docstring)."""
    return re.findall(r"^\s*\d+\.\s+(?::func:)?`(\w+_step)`", text, flags=re.M)


def test_docs_and_docstring_list_the_steps_of_the_code():
    names = [s.name for s in STEPS]
    assert len(names) == len(set(names)) >= 10
    assert _numbered_steps(DOCS.read_text()) == names
    assert _numbered_steps(V.__doc__) == names
    for s in STEPS:  # every step says what it does
        assert s.fn.__doc__ and s.fn.__doc__.strip(), s.name
    assert V.STEP_LABELS[4] == "bootstrap" == V.step_label(STEPS[4]) == STEPS[4].label


def _docs_table() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The docs' table of the steps' reads and writes: step -> (reads, writes)."""
    rows = re.findall(r"^\| `(\w+_step)` \|([^|]*)\|([^|]*)\|$", DOCS.read_text(), flags=re.M)
    return {name: tuple(tuple(re.findall(r"`(\w+)`", cell)) for cell in (reads, writes))
            for name, reads, writes in rows}


def test_docs_table_is_the_declarations():
    assert _docs_table() == {s.name: (s.reads, s.writes) for s in STEPS}
    assert V.steps_table() in DOCS.read_text()  # the docs' table is generated text


def test_every_declared_read_is_given_or_written_before():
    written = set(GIVEN_FIELDS)
    for s in STEPS:
        assert set(s.reads) <= written, (s.name, set(s.reads) - written)
        written |= set(s.writes)
    assert written == set(RUN_FIELDS)  # no field that no step fills
    # the result is assembled once, by the last step, and no step reads it back
    assert [s.name for s in STEPS if "result" in s.writes] == [STEPS[-1].name]
    assert not [s.name for s in STEPS if "result" in s.reads]
    # every other field is one step's product
    writers = [f for s in STEPS for f in s.writes if f not in ("checked", "sets", "owned")]
    assert len(writers) == len(set(writers)), writers


def test_a_declaration_names_fields_of_run():
    with pytest.raises(ValueError, match="no field of Run"):
        Step(V.load_step, reads="checked sest")
    assert Step(V.load_step, reads="sets checked", writes=["result"]).reads == ("checked", "sets")


def _small(M=300, seed=2):
    rng = np.random.default_rng(seed)
    u = np.exp(rng.normal(0, 0.4, M))
    return uqx.from_arrays(u * rng.standard_normal(M), u, name="s")


_FAST = dict(bootstrap=60, copies=60, compute=uqx.Compute(seed=1))


def _replace(name, **declaration):
    """:data:`STEPS` with the declaration of step ``name`` changed."""
    return tuple(dataclasses.replace(s, **declaration) if s.name == name else s
                 for s in STEPS)


def test_a_step_that_reads_a_field_no_earlier_step_wrote_fails(monkeypatch):
    monkeypatch.setattr(V, "STEPS", _replace("notes_step", reads="checked specs cfg sets copies"))
    with pytest.raises(StepError, match="notes_step reads copies, which no earlier step"):
        uqx.validate(_small(), ["zms"], **_FAST)


def test_a_step_that_writes_an_undeclared_field_fails(monkeypatch):
    monkeypatch.setattr(V, "STEPS", _replace("tailedness_step", writes=""))
    with pytest.raises(StepError, match="tailedness_step wrote tails, which it does not"):
        uqx.validate(_small(), ["zms"], **_FAST)

    def sneaky_step(run):
        """Fill a field of a later step."""
        run.decided = {}

    monkeypatch.setattr(V, "STEPS", (Step(sneaky_step, reads="checked"),))
    with pytest.raises(StepError, match="sneaky_step wrote decided"):
        uqx.validate(_small(), ["zms"], **_FAST)


def _record(monkeypatch):
    """Log each step's reads and assignments of the fields of ``Run`` during a validation.

    A field the step has assigned is its own from then on: reading it back is no read.
    """
    log: dict[str, dict[str, set[str]]] = {}
    current: list[str | None] = [None]

    class Recording(V.Run):
        def __getattribute__(self, name):
            step = current[0]
            if step and name in RUN_FIELDS and name not in log[step]["writes"]:
                log[step]["reads"].add(name)
            return super().__getattribute__(name)

        def __setattr__(self, name, value):
            if current[0]:
                log[current[0]]["writes"].add(name)
            super().__setattr__(name, value)

    def watched(step):
        @functools.wraps(step.fn)
        def fn(run):
            log[step.name] = {"reads": set(), "writes": set()}
            current[0] = step.name
            try:
                step.fn(run)
            finally:
                current[0] = None
        return dataclasses.replace(step, fn=fn)

    monkeypatch.setattr(V, "Run", Recording)
    monkeypatch.setattr(V, "STEPS", tuple(watched(s) for s in STEPS))
    return log


#: The declared writes a step leaves out on a route (docs/development.md says why).
_NOT_WRITTEN = {
    "in memory": {"load_step": {"checked", "owned"}},
    "in memory, moments": {"load_step": {"checked", "owned"}},
    "on disk, loaded": {},
    "on disk, streamed": {"load_step": {"checked", "owned"}, "order_step": {"checked", "sets"}},
}


def test_the_declarations_are_what_the_steps_do(monkeypatch):
    """Loaded and streamed, in memory and on disk: each step reads and writes as declared."""
    ds = _small(400)
    routes = {"in memory": (ds, validation.DEFAULT_STATS),
              "in memory, moments": (ds, ["zms", "rce", "nll"]),
              "on disk, loaded": (ds.chunk({"sample": 100}), validation.DEFAULT_STATS),
              "on disk, streamed": (ds.chunk({"sample": 100}), ["zms", "rce", "nll"])}
    read = {s.name: set() for s in STEPS}
    for route, (data, stats) in routes.items():
        log = _record(monkeypatch)
        res = uqx.validate(data, stats, conditional=stats is validation.DEFAULT_STATS, **_FAST)
        assert "question_verdict" in res
        for s in STEPS:
            want = set(s.writes) - _NOT_WRITTEN[route].get(s.name, set())
            assert log[s.name]["writes"] == want, (route, s.name)
            assert log[s.name]["reads"] <= set(s.reads), (route, s.name)
            read[s.name] |= log[s.name]["reads"]
        monkeypatch.undo()  # the next route records on the real Run
    # every declared read happens on one of the routes
    assert read == {s.name: set(s.reads) for s in STEPS}


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
    real_draw, real_prepare = refs.draw_checked, refs.prepare_checked
    monkeypatch.setattr(refs, "draw_checked", lambda *a, **k: draws.append(a[2].label)
                        or real_draw(*a, **k))
    monkeypatch.setattr(refs, "prepare_checked", lambda *a, **k: sorts.append(1)
                        or real_prepare(*a, **k))
    rng = np.random.default_rng(5)
    u = np.exp(rng.normal(0, 0.4, 800))
    E = u * rng.standard_normal(800)
    kw = dict(stats=["zms", "zmse", "ence"], bootstrap=100, copies=200, conditional=False,
              compute=uqx.Compute(seed=3))
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
