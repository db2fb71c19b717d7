"""Literature dataset registry: names, parsing rules, checksums (methods: conventions)."""

import dataclasses
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uqx.dataio import datasets as D
from uqx.dataio.model import InputError
from uqx.dataio.schema import LITERATURE

# methods: the papers: M, MV = mean(uE^2), MSE = mean(E^2) of the nine sets
PAPER = [
    ("Diffusion_RF", 2040, 0.1403477, 0.1351886),
    ("Perovskite_RF", 3834, 0.1320008, 0.1424075),
    ("Diffusion_LR", 2040, 0.2279016, 0.2313257),
    ("Perovskite_LR", 3836, 0.4538589, 0.4056950),
    ("Diffusion_GPR_Bayesian", 2040, 0.09057911, 0.0735895),
    ("Perovskite_GPR_Bayesian", 3818, 0.1170098, 0.09639515),
    ("QM9_E", 13885, 0.0007300685, 0.001167273),
    ("logP_10k_a_LS-GCN", 5000, 0.08539604, 0.07773616),
    ("logP_150k_LS-GCN", 5000, 0.02464157, 0.02529264),
]


# ------------------------------------------------------------- no data needed


def test_registry_covers_all_families():
    names = set(D.REGISTRY)
    pal = {f"{m}_{k}_{c}" for m in ("Diffusion", "Perovskite")
           for k in ("RF", "LR", "GPR_Bayesian") for c in ("cal", "uncal")}
    assert pal <= names and len(pal) == 12
    assert {"QM9_E", "QM9_E_uncal", "QM9_U0", "QM9_E_uncal_val", "Busk2022_QM9_E"} <= names
    assert {"HU2022_feature", "HU2022_latent", "logP_150k_LS-GCN", "logP_RF_K100",
            "vertIP_LS_UQ_seed1", "vertIP_evidential_UQ_seed94_lam01"} <= names
    assert {s.family for s in D.REGISTRY.values()} == {"PAL2022", "BUS2022", "RAS2023", "HU2022"}
    for spec in D.REGISTRY.values():
        assert len(spec.sha256) == 64 and spec.M > 0
        assert spec.reader in D.READERS


def test_aliases_resolve():
    assert D.get_spec("Diffusion_RF").name == "Diffusion_RF_cal"
    assert D.get_spec("Diffusion_RF_Test_cal").name == "Diffusion_RF_cal"
    assert D.get_spec("set 6").name == "Perovskite_GPR_Bayesian_cal"
    assert D.get_spec("qm9_e").name == "QM9_E"
    for label, paper, reg in D.PAPER_SETS:
        assert D.get_spec(label).name == reg
        assert D.get_spec(label.replace(" ", "")).name == reg
        assert D.get_spec(paper).name == reg
    assert D.get_spec("Set7").file == "BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv"


def test_unknown_name_suggests_close_matches():
    with pytest.raises(InputError, match=r"unknown dataset 'Difusion_RF'.*Diffusion_RF") as exc:
        D.get_spec("Difusion_RF")
    assert "uqx datasets list" in str(exc.value)
    with pytest.raises(InputError, match="uqx datasets list"):
        D.load_dataset("no-such-thing", "/nonexistent")


def test_missing_data_dir_message(monkeypatch, tmp_path):
    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    # default folders without any family folder (as a fresh checkout's data/) do not count
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "README.md").write_text("x")
    monkeypatch.setattr(D, "default_data_dirs", lambda: [tmp_path / "data", tmp_path / "no"])
    with pytest.raises(InputError) as exc:
        D.data_dir()
    msg = str(exc.value)
    assert "UQX_DATA_DIR" in msg and "PAL2022/Diffusion_RF_Test_cal.csv" in msg
    assert "10.5281/zenodo.10666788" in msg and "10.5281/zenodo.10730985" in msg
    monkeypatch.setenv("UQX_DATA_DIR", str(tmp_path / "absent"))
    with pytest.raises(InputError, match="absent"):
        D.load_dataset("Set1")
    assert D.data_dir(tmp_path) == tmp_path  # argument wins over the environment


def test_default_data_dirs(monkeypatch, tmp_path):
    repo = Path(__file__).resolve().parents[1]
    assert D.default_data_dirs()[0] == repo / "data"  # editable install / source tree
    monkeypatch.chdir(tmp_path)
    assert D.default_data_dirs()[1] == tmp_path / "data"
    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    first, second = tmp_path / "a", tmp_path / "b"
    (second / "PAL2022").mkdir(parents=True)
    monkeypatch.setattr(D, "default_data_dirs", lambda: [first, second])
    assert D.data_dir() == second
    (first / "HU2022").mkdir(parents=True)
    assert D.data_dir() == first
    monkeypatch.setenv("UQX_DATA_DIR", str(second))  # the environment wins over defaults
    assert D.data_dir() == second
    with pytest.raises(InputError, match="Diffusion_RF_Test_cal.csv not found"):
        D.load_dataset("Set1")


def test_registry_is_package_data():
    text = resources.files("uqx.dataio").joinpath(D.REGISTRY_FILE).read_text("utf-8")
    doc = json.loads(text)
    assert [e["name"] for e in doc["datasets"]] == list(D.REGISTRY)
    assert len(doc["paper_sets"]) == 9 and D.PAPER_SETS[0] == ("Set 1", "Diffusion_RF",
                                                                "Diffusion_RF_cal")
    spec = D.REGISTRY["HU2022_feature"]
    assert spec.option("qhat") == "HU2022/Figure3e_feature/feature_qhat.txt"
    assert len(spec.files) == 3 and all(len(h) == 64 for _, h in spec.files)
    assert D.REGISTRY["logP_RF_K500"].option("K") == 500
    assert D.REGISTRY["QM9_U0"].option("reference") == "U0"
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert D.REGISTRY_FILE in pyproject  # shipped as package data


def test_missing_file_in_data_dir(tmp_path):
    with pytest.raises(InputError, match=r"Diffusion_RF_Test_cal.csv not found.*zenodo"):
        D.load_dataset("Set1", tmp_path)


@pytest.mark.parametrize(
    "formula, mass",
    [("C1H4", 16.043), ("CH4", 16.043), ("C6H6", 78.114), ("H2O", 18.015),
     ("C7H10O2", 126.155), ("C2F3H4N", 99.057), ("N2", 28.014)],
)
def test_molecular_mass(formula, mass):
    assert D.molecular_mass(formula) == pytest.approx(mass, abs=1.5e-3)


@pytest.mark.parametrize("bad", ["", "C6h6", "c6H6", "C6H6+", "Xx2", "C2(OH)"])
def test_molecular_mass_rejects(bad):
    with pytest.raises(InputError, match="molecular_mass"):
        D.molecular_mass(bad)


def test_list_datasets():
    table = D.list_datasets()
    assert list(table.columns[:5]) == ["name", "family", "M", "file", "aliases"]
    assert len(table) == len(D.REGISTRY)
    row = table.set_index("name").loc["Diffusion_RF_cal"]
    assert row["M"] == 2040 and "Set1" in row["aliases"]


# ------------------------------------------------------------- literature data


@pytest.fixture(scope="module")
def paper_sets(data_dir):
    return D.load_paper_sets(data_dir)


@pytest.mark.data
def test_paper_sets_sizes_and_order(paper_sets):
    assert list(paper_sets["set"].values) == [p[0] for p in PAPER]
    assert paper_sets["M"].values.tolist() == [p[1] for p in PAPER]
    assert paper_sets["label"].values.tolist() == [f"Set {i}" for i in range(1, 10)]
    assert paper_sets["n_dropped"].values.tolist() == [0, 2, 0, 0, 0, 18, 0, 0, 0]


@pytest.mark.data
@pytest.mark.parametrize("i", range(9))
def test_paper_sets_mv_mse(paper_sets, i):
    name, M, mv, mse = PAPER[i]
    one = paper_sets.sel(set=name).isel(sample=slice(0, M))
    assert np.isfinite(one["E"].values).all() and (one["uE"].values > 0).all()
    np.testing.assert_allclose(np.mean(one["uE"].values ** 2), mv, rtol=1e-6)
    np.testing.assert_allclose(np.mean(one["E"].values ** 2), mse, rtol=1e-6)


@pytest.mark.data
def test_registered_sizes(data_dir):
    for spec in D.REGISTRY.values():
        ds = D.load_dataset(spec.name, data_dir)
        assert ds.sizes["sample"] == spec.M, spec.name
        assert ds.attrs["name"] == spec.name and ds.attrs["family"] == spec.family
        assert ds.attrs["source_file"] == spec.file
        assert "reference - prediction" in ds.attrs["sign_convention"]


@pytest.mark.data
@pytest.mark.parametrize(
    "name, dropped", [("Perovskite_RF_cal", 2), ("Perovskite_RF_uncal", 2),
                      ("Perovskite_GPR_Bayesian_cal", 18), ("Perovskite_GPR_Bayesian_uncal", 18),
                      ("Perovskite_LR_cal", 0), ("Diffusion_RF_uncal", 0)],
)
def test_pal2022_filter_counts(data_dir, name, dropped):
    ds = D.load_dataset(name, data_dir)
    assert ds.attrs["n_dropped"] == dropped
    assert "1e-06" in ds.attrs["filters"]


@pytest.mark.data
def test_pal2022_x_is_not_a_feature(data_dir):
    cal = D.load_dataset("Diffusion_RF_cal", data_dir)
    uncal = D.load_dataset("Diffusion_RF_uncal", data_dir)
    assert "X" not in cal and "X" not in uncal
    assert not LITERATURE["pal2022"].mismatches(cal)
    np.testing.assert_array_equal(cal["uE_other"].values, uncal["uE"].values)
    np.testing.assert_array_equal(cal["E"].values, uncal["E"].values)


@pytest.mark.data
def test_aliases_load_same_data(data_dir):
    a = D.load_dataset("Set1", data_dir)
    b = D.load_dataset("Diffusion_RF", data_dir)
    np.testing.assert_array_equal(a["uE"].values, b["uE"].values)
    assert a.attrs["name"] == b.attrs["name"] == "Diffusion_RF_cal"


@pytest.mark.data
def test_bus2022_rules(data_dir):
    ds = D.load_dataset("QM9_E", data_dir)
    raw = pd.read_csv(data_dir / "BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv")
    np.testing.assert_array_equal(ds["E"].values, raw["E_"] - raw["prediction"])
    np.testing.assert_array_equal(ds["uE"].values, np.sqrt(raw["uncertainty_total"]))
    np.testing.assert_array_equal(ds["V"].values, raw["prediction"])
    assert ds["X"].values[0] == pytest.approx(D.molecular_mass(raw["formula"][0]))
    assert np.unique(ds["uE"].values).size == 135  # isotonic recalibration
    busk = D.load_dataset("Busk2022_QM9_E", data_dir)
    np.testing.assert_array_equal(busk["E"].values, ds["E"].values)
    u0 = D.load_dataset("QM9_U0", data_dir)
    assert u0.sizes["sample"] == 13885 and "X" in u0 and "V" in u0
    assert u0["X"].attrs["units"] == "g/mol"
    assert not LITERATURE["bus2022"].mismatches(u0)


@pytest.mark.data
def test_ras2023_signs(data_dir):
    logp = D.load_dataset("logP_10k_a_LS-GCN", data_dir)
    raw = pd.read_csv(data_dir / "RAS2023/logP_10k_a_LS-GCN_test.csv", comment=None)
    np.testing.assert_array_equal(logp["E"].values, raw["logP"] - raw["y_pred"])
    np.testing.assert_allclose(logp["E"].values, -raw["error"], atol=3e-7)
    val = D.load_dataset("vertIP_evidential_UQ_seed19_lam01_val", data_dir)
    raw = pd.read_csv(data_dir / "RAS2023/vertIP_evidential_UQ_seed19_lam01_val.csv")
    np.testing.assert_allclose(val["E"].values, raw["y"] - raw["y_preds"], atol=1e-5)
    np.testing.assert_allclose(val["uE"].values, np.hypot(raw["uq_ale"], raw["uq_epi"]))
    rf = D.load_dataset("logP_RF_K5000", data_dir)
    raw = pd.read_csv(data_dir / "RAS2023/logP_RF_UQ_results.csv", comment=None)
    np.testing.assert_array_equal(rf["uE"].values, raw["uq_5000"])


@pytest.mark.data
def test_hu2022(data_dir):
    qhat = {"feature": (0.030882039366943052, 0.07894857763808902),
            "latent": (0.01212766581809073, 0.027450564267796015)}
    for kind, (q68, q95) in qhat.items():
        ds = D.load_dataset(f"HU2022_{kind}", data_dir)
        assert ds.sizes["sample"] == 9747
        assert ds["prob"].values.tolist() == [0.68, 0.95]
        assert ds["qhat"].values.tolist() == [q68, q95]
        assert not LITERATURE["hu2022"].mismatches(ds)
        assert ds["X"].attrs["long_name"] == f"{kind}-space distance"
        np.testing.assert_allclose(ds["U"].sel(prob=0.68).values, q68 * ds["X"].values)
        np.testing.assert_allclose(ds["U"].sel(prob=0.95).values, q95 * ds["X"].values)
        np.testing.assert_allclose(ds["uE"].values, q95 * ds["X"].values / 1.96)
        assert "1.96" in ds.attrs["uE_definition"]


@pytest.mark.data
def test_checksum_mismatch(data_dir, monkeypatch):
    spec = D.REGISTRY["Diffusion_RF_cal"]
    monkeypatch.setitem(D.REGISTRY, spec.name, dataclasses.replace(spec, sha256="0" * 64))
    with pytest.raises(InputError) as exc:
        D.load_dataset("Set1", data_dir)
    msg = str(exc.value)
    assert "Diffusion_RF_Test_cal.csv" in msg and "0" * 64 in msg and spec.sha256 in msg
    assert D.load_dataset("Set1", data_dir, verify=False).sizes["sample"] == 2040


@pytest.mark.data
def test_checksum_cache(data_dir, monkeypatch):
    D.load_dataset("Set3", data_dir)

    def no_hash(*args, **kwargs):
        raise AssertionError("checksum recomputed")

    monkeypatch.setattr(D.hashlib, "sha256", no_hash)
    assert D.load_dataset("Set3", data_dir).sizes["sample"] == 2040


@pytest.mark.data
def test_check_datasets(data_dir, tmp_path):
    table = D.check_datasets(data_dir)
    assert list(table.columns) == ["name", "file", "present", "checksum_ok"]
    assert table["present"].all() and table["checksum_ok"].all()
    empty = D.check_datasets(tmp_path)
    assert not empty["present"].any() and not empty["checksum_ok"].any()


def test_a_data_dir_that_is_not_a_path_is_named():
    """A list of set names passed where the folder goes: a clear error, not pathlib's."""
    with pytest.raises(InputError, match="data_dir must be a path.*list"):
        D.load_paper_sets(["QM9_E"])
