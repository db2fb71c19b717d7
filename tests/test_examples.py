"""data/examples: regenerated bit for bit by ``python -m uqx.dataio.synth``
(uqx.dataio.synth.write_examples)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import uqx
from uqx.dataio.synth import EXAMPLES_M, primer_case, write_examples

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


def test_examples_regenerate_bit_for_bit(tmp_path):
    written = write_examples(tmp_path)
    names = sorted(p.name for p in written)
    assert names == sorted(p.name for p in EXAMPLES.glob("*.csv"))
    assert len(names) == 12
    for path in written:
        assert path.read_bytes() == (EXAMPLES / path.name).read_bytes(), path.name


def test_examples_content():
    ds = uqx.read_csv(EXAMPLES / "primer_C.csv", X="X", V="V")
    assert ds.sizes["sample"] == EXAMPLES_M
    ref = primer_case("C", M=EXAMPLES_M)
    for key in ("E", "uE", "X", "V"):  # %.7g: 7 significant digits
        np.testing.assert_allclose(ds[key].values, ref[key].values, rtol=6e-7)
    header = (EXAMPLES / "demo_calibrated.csv").read_text().splitlines()[0]
    assert header == "E,uE,X"


@pytest.mark.parametrize("argv", [[], ["-h"], ["a", "b"]])
def test_main_usage(argv):
    from uqx.dataio.synth import main

    assert main(argv) == 2


def test_module_entry_point(tmp_path):
    out = subprocess.run([sys.executable, "-m", "uqx.dataio.synth", str(tmp_path / "ex")],
                         capture_output=True, text=True, check=True)
    assert "primer_A.csv" in out.stdout
    assert (tmp_path / "ex" / "demo_heavy_tailed.csv").read_bytes() == (
        EXAMPLES / "demo_heavy_tailed.csv").read_bytes()
