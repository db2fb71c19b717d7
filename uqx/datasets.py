"""Registry of the literature ML-UQ data sets used by Pernot's papers.

The files are not shipped with uqx: they are read from a data directory (argument
``data_dir`` or environment variable ``UQX_DATA_DIR``) holding the folders ``PAL2022/``,
``BUS2022/``, ``RAS2023/`` and ``HU2022/`` as archived in the Zenodo records
10.5281/zenodo.10666788 and 10.5281/zenodo.10730985. Every registered file has a SHA-256
checksum; :func:`load_dataset` verifies it and applies the family's parsing rule
(METHODS.md §1.2):

========== ==================================================================================
family     rule
========== ==================================================================================
PAL2022    columns ``E``, ``uE`` by name; rows with ``uE <= 1e-6 sd(E)`` dropped (counted in
           ``attrs["n_dropped"]``); the file's ``X`` is the ``uE`` of the matching cal/uncal
           file, *not* an input feature: it is kept as ``uE_other``, never as ``X``. Unit eV.
BUS2022    ``E = E_ - prediction`` (``E`` or ``U0`` instead of ``E_`` in the variants),
           ``uE = sqrt(uncertainty_total)`` (a variance), ``X`` = molecular mass (Da) from
           ``formula``, ``V = prediction``. Unit eV (values as given).
RAS2023    logP: ``E = logP - y_pred``, ``uE = uq``, ``V = y_pred`` (dimensionless; read
           with the comment character disabled, SMILES contain ``#``). vertIP: ``E = -error``
           (the files' ``error`` is prediction - reference, checked on the ``_val`` file
           which has both ``y`` and ``y_preds``), ``uE = uq`` (LS) or
           ``sqrt(uq_ale^2 + uq_epi^2)`` (evidential), ``V = y_preds``; unit eV.
HU2022     ``E`` = residual, ``X`` = feature/latent distance, interval half-widths
           ``U(sample, prob) = qhat_P * X`` for P in (0.68, 0.95), ``uE = U_0.95 / 1.96``
           (the primer's standard-uncertainty proxy). Unit eV (per system).
========== ==================================================================================

All errors follow ``E = reference - prediction`` (``attrs["sign_convention"]``).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from uqx.data import InputError, from_arrays, stack
from uqx.io import _numeric_column, _read_frame

__all__ = [
    "DatasetSpec",
    "REGISTRY",
    "PAPER_SETS",
    "ATOMIC_WEIGHTS",
    "data_dir",
    "get_spec",
    "load_dataset",
    "load_paper_sets",
    "list_datasets",
    "check_datasets",
    "molecular_mass",
]

ENV_VAR = "UQX_DATA_DIR"
ZENODO = "10.5281/zenodo.10666788 and 10.5281/zenodo.10730985"
SIGN_CONVENTION = "E = reference - prediction"

# --------------------------------------------------------------------------- data dir


def data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Locate the literature data directory.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Directory to use; defaults to the environment variable ``UQX_DATA_DIR``.

    Returns
    -------
    pathlib.Path
        The existing directory.

    Raises
    ------
    InputError
        Neither the argument nor ``UQX_DATA_DIR`` names an existing directory; the
        message says which file is expected where and where the data come from.
    """
    return _find_data_dir(data_dir)


def _find_data_dir(data_dir: str | os.PathLike | None) -> Path:
    if data_dir is not None:
        candidate, origin = Path(data_dir).expanduser(), "data_dir argument"
    elif os.environ.get(ENV_VAR):
        candidate, origin = Path(os.environ[ENV_VAR]).expanduser(), f"${ENV_VAR}"
    else:
        candidate, origin = None, None
    if candidate is not None and candidate.is_dir():
        return candidate
    where = (
        f"{origin} = {str(candidate)!r} is not a directory"
        if candidate is not None
        else f"no data directory given and ${ENV_VAR} is not set"
    )
    example = REGISTRY["Diffusion_RF_cal"].file
    raise InputError(
        f"literature data directory not found: {where}. Expected a directory holding "
        f"PAL2022/, BUS2022/, RAS2023/ and HU2022/ (e.g. <data dir>/{example}). The files "
        f"come from the Zenodo records {ZENODO}; download them and set {ENV_VAR}=<data dir> "
        "(or pass data_dir=...)."
    )


# -------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class DatasetSpec:
    """One registered literature data set.

    Attributes
    ----------
    name : str
        Registry name (what :func:`load_dataset` accepts, with the aliases).
    family : str
        Source paper key: ``PAL2022``, ``BUS2022``, ``RAS2023`` or ``HU2022``.
    file : str
        Main file, relative to the data directory.
    reader : str
        Key of the parsing rule (see the module docstring).
    sha256 : str
        Expected SHA-256 of ``file``.
    M : int
        Number of samples after the documented filters.
    unit : str
        Unit of ``E`` and ``uE`` (empty for dimensionless).
    description : str
        One-line description.
    aliases : tuple of str
        Other accepted names (paper names, ``SetN``, file stems).
    options : tuple of (str, object)
        Reader options (e.g. the reference column, the training-set size K).
    extra_files : tuple of (str, str)
        Auxiliary files (relative path, SHA-256) read with ``file``.
    """

    name: str
    family: str
    file: str
    reader: str
    sha256: str
    M: int
    unit: str
    description: str
    aliases: tuple[str, ...] = ()
    options: tuple[tuple[str, object], ...] = ()
    extra_files: tuple[tuple[str, str], ...] = ()

    @property
    def files(self) -> tuple[tuple[str, str], ...]:
        """All files of the data set as (relative path, SHA-256), main file first."""
        return ((self.file, self.sha256), *self.extra_files)

    def option(self, key: str, default=None):
        """Value of a reader option."""
        return dict(self.options).get(key, default)


_SHA256 = {
    "BUS2022/Busk2022_QM9_E.csv":
        "9b2c74e2bfc83c9b29536f38d17abeccecfdf5d13cc67ee5fb4a26d22d7018ea",
    "BUS2022/qm9_U0_test_Orig.csv":
        "08a8512998124f1449afc0aed8958d4650b9795e20979e1f8e1fa390374ee83c",
    "BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv":
        "c050e501b2c03ab5b42d3c4ea148f6accbe7224efc8c6ac18228ae5e910897e0",
    "BUS2022/qm9_qm9_E_uncalibrated_test.csv":
        "e0506cea9dbc7bb40bb3f2c3d0e51f0dc06f7b7c4820e49a2a0c6dc34dc3a2c3",
    "BUS2022/qm9_qm9_E_uncalibrated_validation.csv":
        "680d4a56f27af6cdf5aa314dd7325511439afc845989454b26156ceee5f0b8cd",
    "HU2022/Figure3e_feature/feature_qhat.txt":
        "9c64fce2cf227634aa8e6b1c8f633b6b71127d9b48991e73295c498d346bcab3",
    "HU2022/Figure3e_feature/x_feature_distance.csv":
        "5170292eab004f9cb20bfd77219e7d4481ebc0d8e9c5590c3b8e76653902226a",
    "HU2022/Figure3e_feature/y_residual.csv":
        "1fe4634812a37e0c750a5d14df1093d925303da520f014f442c1960a805d68b8",
    "HU2022/Figure3f_latent/latent_qhat.txt":
        "f826c127c39c43f42db51015e89b9d450d5b412ca9971f59cce24a227ca10e8d",
    "HU2022/Figure3f_latent/x_latent_distance.csv":
        "c7a45353468f54374a4740122e7c16070c48bcd8b3d841ef6b980683b39897af",
    "HU2022/Figure3f_latent/y_residual.csv":
        "1fe4634812a37e0c750a5d14df1093d925303da520f014f442c1960a805d68b8",
    "PAL2022/Diffusion_GPR_Bayesian_Test_cal.csv":
        "3c48f62b8281120c7b41c3f8dcf5b187b992bcc28c8919e3a0fc65a42c7392a6",
    "PAL2022/Diffusion_GPR_Bayesian_Test_uncal.csv":
        "4b5b929d75f957a7b6aa841460d980b65c9b5072b74d3cd36be40774586e4d32",
    "PAL2022/Diffusion_LR_Test_cal.csv":
        "7b96939fc43ea4375c534a853fb4ed60a108e98fe5e4b4cc64dcc34cc2d715d4",
    "PAL2022/Diffusion_LR_Test_uncal.csv":
        "2a69d96265478b91201b53755b4eef4bc81dc9d38dd94c80f2ebbba28d5d69c3",
    "PAL2022/Diffusion_RF_Test_cal.csv":
        "4e509fb619c182fa5388446304b4a646cd722b7fb7bb8f8a6a35e9e8e062f96f",
    "PAL2022/Diffusion_RF_Test_uncal.csv":
        "5660a10fcfe91c0d93312a19937bdbce263d88dca3155cce63d01e4a7560bf8b",
    "PAL2022/Perovskite_GPR_Bayesian_Test_cal.csv":
        "ff9b829142f3df75e2e9185b4eb7221198609d955f792920a264509d6c7feb27",
    "PAL2022/Perovskite_GPR_Bayesian_Test_uncal.csv":
        "e3fd5783d3466e23c5d69087351fa2d3b5ac0d412d3851c5a4a5c38798eba102",
    "PAL2022/Perovskite_LR_Test_cal.csv":
        "b4c265b6f603506ff39b1f53b4fba82c1e3ea705fa53cf4e6599f184352d6c64",
    "PAL2022/Perovskite_LR_Test_uncal.csv":
        "5ceeb0af363ba126a64dd1600c3fee0c39128fb662458e2af6372863a5a671ad",
    "PAL2022/Perovskite_RF_Test_cal.csv":
        "8a03d026179708b00f67b7f9c687c9e4108006ad5e4e52ba977338d97feb16ac",
    "PAL2022/Perovskite_RF_Test_uncal.csv":
        "45141bb458114fd848c6f128f316936bb524b2ac088c56eb384099d607201407",
    "RAS2023/logP_10k_a_LS-GCN_test.csv":
        "a7d189c28e3cecfc9f6482b1ca85577800b933c34ff0732c8158ecb00b5f0009",
    "RAS2023/logP_10k_a_LS-NN_test.csv":
        "3cd1cf9b0cd350e89a2d2107005ae521c899eb1bb0d0694024c94fb5c27e10ab",
    "RAS2023/logP_10k_b_LS-GCN_test.csv":
        "e9f63951fe75b711d991a016f3a0a69c59805a02074f2696b97e4004da580921",
    "RAS2023/logP_10k_b_LS-NN_test.csv":
        "6879a318400ceff4221ac0afce9361018ac617e4050244603b9c140a63d8a9ff",
    "RAS2023/logP_10k_c_LS-GCN_test.csv":
        "b192d887418c0a55e5b73e1c1149efb25403118a0704c967384cf47668266532",
    "RAS2023/logP_10k_c_LS-NN_test.csv":
        "7cb48169d33722634e86fa655e0516a31cda4ccc44c033a938df2ba47867fa53",
    "RAS2023/logP_10k_d_LS-GCN_test.csv":
        "704433ada897173b74e9ba63067eb9d8a18ac115f89d86e6eaa664075dea3f79",
    "RAS2023/logP_10k_d_LS-NN_test.csv":
        "401df7baac8e8b812cbdc3ee15f5c21bd7c17225b32b9070d81a238c68856ee1",
    "RAS2023/logP_10k_e_LS-GCN_test.csv":
        "8709ac09540817ae81f3e2130a3730e52bdd0aca00238b7906b8b83b6a9201ba",
    "RAS2023/logP_10k_e_LS-NN_test.csv":
        "31b6251c93aae6833dee217a0a42baf6afcfb8414bd7da4e7406c5f4010f14e3",
    "RAS2023/logP_150k_LS-GCN_test.csv":
        "a886e2faea70da663057f4f8ee85d3cb44b75f0e8b8bc0a4bd913e80444b6a45",
    "RAS2023/logP_150k_LS-GCN_test_flex.csv":
        "a8624047f6b0b2b7dca9db06776b6060120b1d392592168f896f3a75d2dffb81",
    "RAS2023/logP_RF_UQ_results.csv":
        "92b7dc3504daab8219f901c50df98b821e1e55356f32f2870e31bc79fcaf54b7",
    "RAS2023/vertIP_LS_UQ_seed1.csv":
        "f527aaab654d0d436ec6125fd6697ad923baaf678481093d80a912716f1c0798",
    "RAS2023/vertIP_LS_UQ_seed19.csv":
        "f638c8665ba7c3a12ef4d7983c538cc65a1a832621589a0abf16408d73b1e7c7",
    "RAS2023/vertIP_LS_UQ_seed19_flex.csv":
        "14c51d5b73c8f54ecf5a1fef171305f23c7332168fdc43976dab8a36da7b3876",
    "RAS2023/vertIP_LS_UQ_seed1_flex.csv":
        "2a195f6be25ba2cb6daaec6916944d485f699357bd8cc5344ac3b74f39300373",
    "RAS2023/vertIP_LS_UQ_seed27.csv":
        "c13d3bab6e86090831f879b9ede235185574fa1be314373f45c00ab0450b1393",
    "RAS2023/vertIP_LS_UQ_seed27_flex.csv":
        "cc60834ad74d570f5a47afb2ae3848db68e56286604310d92f81383b91c73ff1",
    "RAS2023/vertIP_LS_UQ_seed42.csv":
        "e58a96d286a11249433444a01e06b482700d8818255c23f2e58ce36a752b2b2d",
    "RAS2023/vertIP_LS_UQ_seed42_flex.csv":
        "a7d0127f66d6b1ee0605efb060fa5f92de45cc1cce5b44e8be4778b596d0809f",
    "RAS2023/vertIP_LS_UQ_seed94.csv":
        "1c669cc334ca3252b485e5509f1f85123254ceb932b03c7253218628e4d585b8",
    "RAS2023/vertIP_LS_UQ_seed94_flex.csv":
        "261439f9123e8047801eae63a7c379668439f0ca33ddfd2ea3a58945669e701f",
    "RAS2023/vertIP_evidential_UQ_seed1.csv":
        "add6a253889af252e53d9c04660d1bc69d296d25ad14e042ee742b127a822712",
    "RAS2023/vertIP_evidential_UQ_seed19.csv":
        "3162e21bba8dce43d0c5ef9ec0fc8d4f9d477c8903cce677d6a0d0b969d68e2b",
    "RAS2023/vertIP_evidential_UQ_seed19_lam01.csv":
        "9948c62467b86e1ba5777db702c5fe7c909d70a8d99588096bb6f0be1ccd53bf",
    "RAS2023/vertIP_evidential_UQ_seed19_lam01_val.csv":
        "bf7ef6b0a91eef0a7d0eb2a6ad96eb5aba46d151e0d9448003e742349ccc9ee1",
    "RAS2023/vertIP_evidential_UQ_seed1_lam01.csv":
        "53b7adb4d61bdc2e7d0a30f2c3740f07ae88f794e392cc496ec775cf167e4a34",
    "RAS2023/vertIP_evidential_UQ_seed27.csv":
        "39fcb3e05f8fd065628b186c0818eeccc53c9097b86f82bccd7223ff50537738",
    "RAS2023/vertIP_evidential_UQ_seed27_lam01.csv":
        "402467b9b251e00b91436dded08df6e620a65e8fede3f06b87ec0391af229ac4",
    "RAS2023/vertIP_evidential_UQ_seed42.csv":
        "a2295c5dbf11ea78ebcafe8267b3555889b63c315d5adbe90b0ada5d86a13f43",
    "RAS2023/vertIP_evidential_UQ_seed42_lam01.csv":
        "ab319415909f9643b8cb1476567cfd4066f36c650755e715faf325548cae7fdb",
    "RAS2023/vertIP_evidential_UQ_seed94.csv":
        "080dba22bb6e2a91c63ec347267bcfeccd0ceb223e4ebf76a7aa5f79648504ad",
    "RAS2023/vertIP_evidential_UQ_seed94_lam01.csv":
        "3cde30457a395ec4609af35d03e6927f648b2909d833c10de64be36e6c4d64ec",
}

#: The nine literature sets of papers 000, 001 and 004: (label, paper name, registry name).
PAPER_SETS: tuple[tuple[str, str, str], ...] = (
    ("Set 1", "Diffusion_RF", "Diffusion_RF_cal"),
    ("Set 2", "Perovskite_RF", "Perovskite_RF_cal"),
    ("Set 3", "Diffusion_LR", "Diffusion_LR_cal"),
    ("Set 4", "Perovskite_LR", "Perovskite_LR_cal"),
    ("Set 5", "Diffusion_GPR_Bayesian", "Diffusion_GPR_Bayesian_cal"),
    ("Set 6", "Perovskite_GPR_Bayesian", "Perovskite_GPR_Bayesian_cal"),
    ("Set 7", "QM9_E", "QM9_E"),
    ("Set 8", "logP_10k_a_LS-GCN", "logP_10k_a_LS-GCN"),
    ("Set 9", "logP_150k_LS-GCN", "logP_150k_LS-GCN"),
)

_PAL_M = {"Diffusion": {"RF": 2040, "LR": 2040, "GPR_Bayesian": 2040},
          "Perovskite": {"RF": 3834, "LR": 3836, "GPR_Bayesian": 3818}}
_RF_K = (100, 500, 1000, 5000, 10000, 20000, 50000, 100000, 150000)
_VERTIP_SEEDS = (1, 19, 27, 42, 94)


def _spec(name, family, file, reader, M, unit, description, aliases=(), options=(),
          extra=()) -> DatasetSpec:
    return DatasetSpec(
        name=name,
        family=family,
        file=file,
        reader=reader,
        sha256=_SHA256[file],
        M=M,
        unit=unit,
        description=description,
        aliases=tuple(aliases),
        options=tuple(options),
        extra_files=tuple((f, _SHA256[f]) for f in extra),
    )


def _build_registry() -> dict[str, DatasetSpec]:
    specs: list[DatasetSpec] = []
    set_alias = {reg: (label.replace(" ", ""), paper) for label, paper, reg in PAPER_SETS}
    # PAL2022: 2 materials x 3 methods x (cal, uncal)
    for method in ("RF", "LR", "GPR_Bayesian"):
        for material in ("Diffusion", "Perovskite"):
            for cal in ("cal", "uncal"):
                name = f"{material}_{method}_{cal}"
                stem = f"{material}_{method}_Test_{cal}"
                aliases = [stem]
                if name in set_alias:  # paper name, SetN, R setList key, file stem
                    aliases = [*set_alias[name][::-1], f"{material}_{method}_Test", *aliases]
                kind = "recalibrated" if cal == "cal" else "uncalibrated"
                specs.append(_spec(
                    name, "PAL2022", f"PAL2022/{stem}.csv", "pal2022",
                    _PAL_M[material][method], "eV",
                    f"Palmer et al. 2022, {material} test set, {method}, {kind} uE",
                    aliases,
                ))
    # BUS2022 (QM9, Busk et al. 2022)
    bus = (
        ("QM9_E", "qm9_qm9_E_calibrated_isotonic_test", "E_", 13885,
         "QM9 atomization energy test set, isotonic-recalibrated uE (paper Set 7)",
         ("Set7", "QM9_E_cal", "QM9_E_Test")),
        ("QM9_E_uncal", "qm9_qm9_E_uncalibrated_test", "E_", 13885,
         "QM9 atomization energy test set, uncalibrated uE", ()),
        ("QM9_U0", "qm9_U0_test_Orig", "U0", 13885,
         "QM9 U0 test set (papers 002 and primer; X = molecular mass, V = prediction)", ()),
        ("QM9_E_uncal_val", "qm9_qm9_E_uncalibrated_validation", "E_", 10000,
         "QM9 atomization energy validation split, uncalibrated uE", ()),
        ("Busk2022_QM9_E", "Busk2022_QM9_E", "E", 13885,
         "copy of the calibrated QM9_E test set with column 'E' for the reference", ()),
    )
    for name, stem, ref, M, desc, aliases in bus:
        extra_alias = (stem,) if stem != name else ()
        specs.append(_spec(
            name, "BUS2022", f"BUS2022/{stem}.csv", "bus2022", M, "eV",
            f"Busk et al. 2022, {desc}", (*aliases, *extra_alias), (("reference", ref),),
        ))
    # RAS2023 logP (Rasmussen et al. 2023)
    logp = [f"logP_10k_{s}_LS-{m}" for s in "abcde" for m in ("GCN", "NN")]
    logp += ["logP_150k_LS-GCN"]
    for name in logp:
        aliases = [f"{name}_test"]
        if name in set_alias:
            aliases.insert(0, set_alias[name][0])
        specs.append(_spec(
            name, "RAS2023", f"RAS2023/{name}_test.csv", "ras2023_logp", 5000, "",
            f"Rasmussen et al. 2023, logP test set, {name.split('_')[-1]} model, "
            f"training split {name.split('_', 1)[1].rsplit('_', 1)[0]}",
            aliases,
        ))
    specs.append(_spec(
        "logP_150k_LS-GCN_flex", "RAS2023", "RAS2023/logP_150k_LS-GCN_test_flex.csv",
        "ras2023_logp", 5000, "",
        "Rasmussen et al. 2023, logP test set, LS-GCN 150k, 'flex' uncertainty variant",
        ["logP_150k_LS-GCN_test_flex"],
    ))
    for K in _RF_K:
        specs.append(_spec(
            f"logP_RF_K{K}", "RAS2023", "RAS2023/logP_RF_UQ_results.csv", "ras2023_rf",
            5000, "", f"Rasmussen et al. 2023, logP test set, random forest trained on "
            f"K = {K} molecules (columns uq_{K}, y_pred_{K})", (), (("K", K),),
        ))
    # RAS2023 vertical ionisation potentials of transition-metal complexes
    for seed in _VERTIP_SEEDS:
        for suffix in ("", "_flex"):
            stem = f"vertIP_LS_UQ_seed{seed}{suffix}"
            specs.append(_spec(
                stem, "RAS2023", f"RAS2023/{stem}.csv", "ras2023_vertip_ls", 265, "eV",
                f"Rasmussen et al. 2023, vertical IP, latent-space (LS) UQ, seed {seed}"
                + (", 'flex' variant" if suffix else ""),
            ))
    for seed in _VERTIP_SEEDS:
        for suffix in ("", "_lam01"):
            stem = f"vertIP_evidential_UQ_seed{seed}{suffix}"
            specs.append(_spec(
                stem, "RAS2023", f"RAS2023/{stem}.csv", "ras2023_vertip_evidential", 265, "eV",
                f"Rasmussen et al. 2023, vertical IP, evidential UQ, seed {seed}"
                + (", lambda = 0.1" if suffix else ""),
            ))
    specs.append(_spec(
        "vertIP_evidential_UQ_seed19_lam01_val", "RAS2023",
        "RAS2023/vertIP_evidential_UQ_seed19_lam01_val.csv", "ras2023_vertip_evidential",
        229, "eV", "Rasmussen et al. 2023, vertical IP, evidential UQ, seed 19, "
        "lambda = 0.1, validation split",
    ))
    # HU2022 (interval-based UQ, QM9 interatomic potential)
    for kind, fig in (("feature", "Figure3e"), ("latent", "Figure3f")):
        folder = f"HU2022/{fig}_{kind}"
        specs.append(_spec(
            f"HU2022_{kind}", "HU2022", f"{folder}/y_residual.csv", "hu2022", 9747, "eV",
            f"Hu et al. 2022, QM9 potential, conformal intervals scaled by the {kind}-space "
            "distance X; uE = U_95/1.96",
            (f"HU2022_{fig}",),
            (("distance", f"{folder}/x_{kind}_distance.csv"),
             ("qhat", f"{folder}/{kind}_qhat.txt")),
            (f"{folder}/x_{kind}_distance.csv", f"{folder}/{kind}_qhat.txt"),
        ))
    return {s.name: s for s in specs}


#: All registered data sets, by registry name.
REGISTRY: dict[str, DatasetSpec] = _build_registry()


def _normalise(name: str) -> str:
    return re.sub(r"\s+", "", str(name)).lower()


def _build_lookup() -> dict[str, str]:
    lookup: dict[str, str] = {}
    for spec in REGISTRY.values():
        for key in (spec.name, *spec.aliases):
            norm = _normalise(key)
            if lookup.get(norm, spec.name) != spec.name:  # pragma: no cover - registry bug
                raise RuntimeError(f"ambiguous dataset name {key!r}")
            lookup[norm] = spec.name
    return lookup


_LOOKUP = _build_lookup()


def get_spec(name: str) -> DatasetSpec:
    """Return the registry entry of a data set name or alias (case-insensitive).

    Raises
    ------
    InputError
        Unknown name; the message lists close matches.
    """
    key = _LOOKUP.get(_normalise(name))
    if key is None:
        candidates = sorted({k for s in REGISTRY.values() for k in (s.name, *s.aliases)})
        close = difflib.get_close_matches(str(name), candidates, n=5, cutoff=0.5)
        if not close:
            by_lower = {c.lower(): c for c in candidates}
            close = [by_lower[c] for c in difflib.get_close_matches(
                str(name).lower(), list(by_lower), n=5, cutoff=0.5)]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise InputError(
            f"unknown dataset {name!r}.{hint} Run `uqx datasets list` (or "
            "uqx.datasets.list_datasets()) for all names."
        )
    return REGISTRY[key]


# ------------------------------------------------------------------------- checksums

_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    digest = _HASH_CACHE.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = _HASH_CACHE[key] = h.hexdigest()
    return digest


def _resolve_files(spec: DatasetSpec, root: Path, verify: bool) -> dict[str, Path]:
    paths = {}
    for rel, expected in spec.files:
        path = root / rel
        if not path.is_file():
            raise InputError(
                f"dataset {spec.name!r}: file {rel} not found in the data directory {root} "
                f"(expected {path}). The files come from the Zenodo records {ZENODO}."
            )
        if verify:
            actual = _sha256(path)
            if actual != expected:
                raise InputError(
                    f"dataset {spec.name!r}: checksum mismatch for {path}: expected sha256 "
                    f"{expected}, got {actual}. The file differs from the archived version; "
                    "restore it from the Zenodo records or pass verify=False."
                )
        paths[rel] = path
    return paths


# --------------------------------------------------------------------- formula mass

#: Standard atomic weights (IUPAC conventional/abridged values), g/mol.
ATOMIC_WEIGHTS = {
    "H": 1.008, "B": 10.81, "C": 12.011, "N": 14.007, "O": 15.999, "F": 18.998403163,
    "Si": 28.085, "P": 30.973761998, "S": 32.06, "Cl": 35.45, "Br": 79.904,
    "I": 126.90447,
}

_FORMULA_TOKEN = re.compile(r"([A-Z][a-z]?)(\d*)")


def molecular_mass(formula: str) -> float:
    """Molecular mass (g/mol) of a Hill-style formula such as ``'C7H10O2'``.

    Parameters
    ----------
    formula : str
        Element symbols each followed by an optional count (no brackets or charges).

    Returns
    -------
    float
        Sum of standard atomic weights (:data:`ATOMIC_WEIGHTS`).

    Raises
    ------
    InputError
        Unparseable formula or element without a tabulated weight.

    Examples
    --------
    >>> round(molecular_mass("CH4"), 3)
    16.043
    """
    text = str(formula).strip()
    pos, mass = 0, 0.0
    if not text:
        raise InputError("molecular_mass: empty formula")
    for match in _FORMULA_TOKEN.finditer(text):
        if match.start() != pos:
            break
        symbol, count = match.group(1), match.group(2)
        if symbol not in ATOMIC_WEIGHTS:
            raise InputError(
                f"molecular_mass: unknown element {symbol!r} in formula {formula!r} "
                f"(known: {', '.join(ATOMIC_WEIGHTS)})"
            )
        mass += ATOMIC_WEIGHTS[symbol] * (int(count) if count else 1)
        pos = match.end()
    if pos != len(text):
        raise InputError(f"molecular_mass: cannot parse formula {formula!r} at {text[pos:]!r}")
    return mass


def _masses(formulas) -> np.ndarray:
    uniq, inverse = np.unique(np.asarray(formulas, dtype=str), return_inverse=True)
    return np.array([molecular_mass(f) for f in uniq])[inverse]


# --------------------------------------------------------------------------- readers


def _read_pal2022(spec: DatasetSpec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    df = _read_frame(path)
    ds = from_arrays(
        _numeric_column(df, "E", path),
        _numeric_column(df, "uE", path),
        X=_numeric_column(df, "X", path),
        name=spec.name,
        units=spec.unit,
        source=str(path),
        min_uE_rel_sd=1e-6,
    )
    ds = ds.rename({"X": "uE_other"})
    ds["uE_other"].attrs = {
        "long_name": "uE of the matching _cal/_uncal file (the file's column 'X'); "
        "not an input feature",
        "units": spec.unit,
    }
    ds.attrs["uE_definition"] = "column uE"
    return ds


def _read_bus2022(spec: DatasetSpec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    ref = spec.option("reference", "E_")
    df = _read_frame(path)
    reference = _numeric_column(df, ref, path)
    prediction = _numeric_column(df, "prediction", path)
    variance = _numeric_column(df, "uncertainty_total", path)
    if "formula" not in df.columns:
        raise InputError(f"{path}: no column 'formula'")
    with np.errstate(invalid="ignore"):
        uE = np.sqrt(variance)
    ds = from_arrays(
        reference - prediction, uE, X=_masses(df["formula"]), V=prediction,
        name=spec.name, units=spec.unit, source=str(path),
    )
    ds["X"].attrs.update(long_name="molecular mass (from the column 'formula')",
                         units="g/mol")
    ds["V"].attrs["units"] = spec.unit
    ds.attrs["sign_convention"] = f"E = {ref} - prediction ({SIGN_CONVENTION})"
    ds.attrs["uE_definition"] = "sqrt(uncertainty_total) (the column is a variance)"
    return ds


def _read_ras2023_logp(spec: DatasetSpec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    K = spec.option("K")
    uq, pred = ("uq", "y_pred") if K is None else (f"uq_{K}", f"y_pred_{K}")
    df = _read_frame(path, comment=None)
    logp = _numeric_column(df, "logP", path)
    y_pred = _numeric_column(df, pred, path)
    ds = from_arrays(
        logp - y_pred, _numeric_column(df, uq, path), V=y_pred,
        name=spec.name, units=spec.unit, source=str(path),
    )
    ds.attrs["sign_convention"] = (
        f"E = logP - {pred} ({SIGN_CONVENTION}); the file's error column has the opposite sign"
    )
    ds.attrs["uE_definition"] = f"column {uq}"
    return ds


def _read_ras2023_vertip(spec: DatasetSpec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    df = _read_frame(path, comment=None)
    error = _numeric_column(df, "error", path)
    if spec.reader == "ras2023_vertip_evidential":
        uE = np.hypot(_numeric_column(df, "uq_ale", path), _numeric_column(df, "uq_epi", path))
        uE_def = "sqrt(uq_ale^2 + uq_epi^2) (aleatoric and epistemic standard deviations)"
    else:
        uE = _numeric_column(df, "uq", path)
        uE_def = "column uq"
    y_preds = _numeric_column(df, "y_preds", path)
    ds = from_arrays(-error, uE, V=y_preds, name=spec.name, units=spec.unit,
                     source=str(path))
    ds["V"].attrs["units"] = spec.unit
    ds.attrs["sign_convention"] = (
        f"E = -error ({SIGN_CONVENTION}): the files' error column is prediction - reference "
        "(checked on vertIP_evidential_UQ_seed19_lam01_val, which has y and y_preds)"
    )
    ds.attrs["uE_definition"] = uE_def
    return ds


_QHAT = re.compile(r"(\d+(?:\.\d+)?)\s*%[^\n]*?qhat\s*=\s*([-+0-9.eE]+)")


def _parse_qhat(path: Path) -> dict[float, float]:
    text = path.read_text()
    found = {round(float(p) / 100, 4): float(q) for p, q in _QHAT.findall(text)}
    if set(found) != {0.68, 0.95}:
        raise InputError(f"{path}: expected qhat values for 68 % and 95 %, found {found}")
    return found


def _read_hu2022(spec: DatasetSpec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    x_path = paths[spec.option("distance")]
    E = _numeric_column(_read_frame(path, header=None), 0, path)
    X = _numeric_column(_read_frame(x_path, header=None), 0, x_path)
    qhat = _parse_qhat(paths[spec.option("qhat")])
    if E.size != X.size:
        raise InputError(f"{spec.name}: {E.size} residuals but {X.size} distances")
    probs = np.array([0.68, 0.95])
    U = X[:, None] * np.array([qhat[p] for p in probs])[None, :]
    ds = from_arrays(E, U[:, 1] / 1.96, X=X, name=spec.name, units=spec.unit,
                     source=str(path))
    ds = ds.assign_coords(prob=("prob", probs, {"long_name": "interval coverage probability"}))
    ds["U"] = (("sample", "prob"), U, {
        "long_name": "half-width of the conformal prediction interval (qhat_P * X)",
        "units": spec.unit,
    })
    ds["qhat"] = ("prob", np.array([qhat[p] for p in probs]),
                  {"long_name": "conformal scale factor", "units": spec.unit})
    ds["X"].attrs.update(long_name=f"{spec.name.split('_')[1]}-space distance",
                         units="arbitrary")
    ds.attrs["sign_convention"] = f"E = residual ({SIGN_CONVENTION})"
    ds.attrs["uE_definition"] = "U_0.95 / 1.96 (standard-uncertainty proxy of the primer)"
    ds.attrs["source_files"] = ", ".join(str(p) for p in paths.values())
    return ds


_READERS: dict[str, Callable[[DatasetSpec, dict[str, Path]], xr.Dataset]] = {
    "pal2022": _read_pal2022,
    "bus2022": _read_bus2022,
    "ras2023_logp": _read_ras2023_logp,
    "ras2023_rf": _read_ras2023_logp,
    "ras2023_vertip_ls": _read_ras2023_vertip,
    "ras2023_vertip_evidential": _read_ras2023_vertip,
    "hu2022": _read_hu2022,
}


# ------------------------------------------------------------------------ public API


def load_dataset(
    name: str, data_dir: str | os.PathLike | None = None, *, verify: bool = True
) -> xr.Dataset:
    """Load a registered literature data set.

    Parameters
    ----------
    name : str
        Registry name or alias (case-insensitive), e.g. ``"Diffusion_RF_cal"``,
        ``"Diffusion_RF"`` or ``"Set1"``; see :func:`list_datasets`.
    data_dir : str or path-like, optional
        Data directory; defaults to ``$UQX_DATA_DIR``.
    verify : bool, default True
        Check the SHA-256 of every file read (cached per path, mtime and size).

    Returns
    -------
    xarray.Dataset
        Canonical input data set (``E``, ``uE`` and, by family, ``X``, ``V``, ``U``,
        ``uE_other``) with attrs ``name`` (registry name), ``family``, ``source_file``
        (relative path), ``units``, ``n_dropped``, ``filters``, ``sign_convention``,
        ``uE_definition`` and ``description``.

    Raises
    ------
    InputError
        Unknown name, missing data directory or file, checksum mismatch, parse errors.

    Examples
    --------
    >>> ds = load_dataset("Set1")  # doctest: +SKIP
    >>> ds.sizes["sample"]  # doctest: +SKIP
    2040
    """
    spec = get_spec(name)
    root = _find_data_dir(data_dir)
    paths = _resolve_files(spec, root, verify)
    ds = _READERS[spec.reader](spec, paths)
    ds.attrs.setdefault("sign_convention", SIGN_CONVENTION)
    ds.attrs.update(
        name=spec.name,
        family=spec.family,
        source_file=spec.file,
        description=spec.description,
        sha256=spec.sha256,
    )
    return ds


def load_paper_sets(
    data_dir: str | os.PathLike | None = None, *, verify: bool = True
) -> xr.Dataset:
    """Load the nine literature sets of papers 000, 001 and 004, stacked on ``set``.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory; defaults to ``$UQX_DATA_DIR``.
    verify : bool, default True
        Verify file checksums.

    Returns
    -------
    xarray.Dataset
        Output of :func:`uqx.data.stack` in the papers' order (METHODS.md §1.3): ``set``
        coordinate = paper names (``Diffusion_RF`` ... ``logP_150k_LS-GCN``), non-index
        coordinate ``label`` = ``"Set 1"`` ... ``"Set 9"``; sizes in ``M(set)``.
    """
    sets = []
    for _label, paper, reg in PAPER_SETS:
        ds = load_dataset(reg, data_dir, verify=verify)
        ds.attrs["name"] = paper
        sets.append(ds)
    out = stack(sets)
    out = out.assign_coords(label=("set", [label for label, _, _ in PAPER_SETS]))
    out.attrs["description"] = "the nine literature sets of papers 000, 001 and 004"
    return out


def list_datasets() -> pd.DataFrame:
    """Table of the registered data sets.

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, ``family``, ``M``, ``file``, ``aliases`` (comma-separated),
        ``unit`` and ``description``, one row per registry entry.
    """
    rows = [
        {
            "name": s.name,
            "family": s.family,
            "M": s.M,
            "file": s.file,
            "aliases": ", ".join(s.aliases),
            "unit": s.unit,
            "description": s.description,
        }
        for s in REGISTRY.values()
    ]
    return pd.DataFrame(rows)


def check_datasets(data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Check presence and checksums of every registered file.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory; defaults to ``$UQX_DATA_DIR``.

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, ``file``, ``present`` (all files of the entry exist) and
        ``checksum_ok`` (all of them match; False when absent).
    """
    root = _find_data_dir(data_dir)
    rows = []
    for spec in REGISTRY.values():
        present, ok = True, True
        for rel, expected in spec.files:
            path = root / rel
            if not path.is_file():
                present = ok = False
                continue
            ok = ok and _sha256(path) == expected
        rows.append({"name": spec.name, "file": spec.file, "present": present,
                     "checksum_ok": ok})
    return pd.DataFrame(rows)
