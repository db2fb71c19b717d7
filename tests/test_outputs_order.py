"""Outputs: files written before anything is printed, printing on any stdout encoding.

A stdout that cannot encode uqx's symbols (``PYTHONIOENCODING=ascii``, a Latin-1
terminal) used to stop the command with ``UnicodeEncodeError`` before ``-o`` was written.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pandas as pd
import pytest

from uqx.cli.app import main

CLI_FAST = ["--n-boot", "100", "--n-mc", "200", "--seed", "1", "-q"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("order")
    rng = np.random.default_rng(3)
    u = rng.uniform(0.5, 2.0, 300)
    pd.DataFrame({"E": 2 * u * rng.standard_normal(300), "uE": u}).to_csv(d / "d.csv",
                                                                           index=False)
    return d / "d.csv"


def _stdout(monkeypatch, encoding):
    stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    return stream


def _text(stream):
    stream.flush()
    return stream.buffer.getvalue().decode(stream.encoding)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_validate_prints_on_a_stdout_that_cannot_encode_the_symbols(tmp_path, monkeypatch,
                                                                    data, encoding):
    stream = _stdout(monkeypatch, encoding)
    out = tmp_path / "r.nc"
    status = main(["validate", str(data), "-o", str(out), *CLI_FAST])
    text = _text(stream)
    assert status == 0 and out.exists()
    assert "results written to" in text and "average" in text
    assert "f = sqrt(ZMS)" in text  # "f = √ZMS" in ASCII words


def test_stats_prints_on_an_ascii_stdout(tmp_path, monkeypatch, data):
    """The set's name (the file's stem) is in the table: "γ" becomes "gamma"."""
    named = tmp_path / "run_γ.csv"
    named.write_bytes(data.read_bytes())
    stream = _stdout(monkeypatch, "ascii")
    assert main(["stats", str(named), "-q"]) == 0
    text = _text(stream)
    assert "zms" in text.lower() and "run_gamma" in text


def test_the_result_is_written_before_anything_is_printed(tmp_path, monkeypatch, data):
    """A stdout whose every write fails still leaves the -o file."""

    class Broken(io.StringIO):
        def write(self, text):
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(sys, "stdout", Broken())
    out = tmp_path / "r.csv"
    assert main(["validate", str(data), "-o", str(out), *CLI_FAST]) == 2
    assert out.exists() and "zms" in out.read_text()


def test_encodable_uses_ascii_words_for_the_symbols():
    from uqx.cli.commands._console import encodable

    assert encodable("u ∝ uE^γ, f ≤ 1.2", "ascii") == "u prop. to uE^gamma, f <= 1.2"
    assert encodable("ν²", "latin-1") == "nu²"
    assert encodable("plain", "utf-8") == "plain"


def test_output_and_plots_on_the_same_path_are_refused_before_computing(tmp_path, capsys,
                                                                        data):
    out = tmp_path / "X.nc"
    status = main(["validate", str(data), "-o", str(out), "--plots", str(out), *CLI_FAST])
    err = capsys.readouterr().err
    assert status == 2 and "same path" in err
    assert not out.exists()
