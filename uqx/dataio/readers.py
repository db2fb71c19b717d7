"""Readers of the literature data sets: each family's files onto the input record.

One function per parsing rule of the registry's ``reader`` key (:data:`READERS`); the
rules themselves (columns, sign convention E = reference - prediction, filters, units)
are listed in :mod:`uqx.dataio.datasets`. BUS2022 takes X as the molecular mass of each
formula (:func:`molecular_mass`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

from uqx.dataio.frames import numeric_column, read_frame
from uqx.dataio.model import InputError, from_arrays
from uqx.dataio.schema import LITERATURE

__all__ = ["READERS", "ATOMIC_WEIGHTS", "SIGN_CONVENTION", "molecular_mass"]

#: Sign of every error the readers return.
SIGN_CONVENTION = "E = reference - prediction"


# --------------------------------------------------------------------- formula mass

#: Standard atomic weights (IUPAC conventional/abridged values), g/mol.
ATOMIC_WEIGHTS = {
    "H": 1.008,
    "B": 10.81,
    "C": 12.011,
    "N": 14.007,
    "O": 15.999,
    "F": 18.998403163,
    "Si": 28.085,
    "P": 30.973761998,
    "S": 32.06,
    "Cl": 35.45,
    "Br": 79.904,
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


def _read_pal2022(spec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    df = read_frame(path)
    ds = from_arrays(
        numeric_column(df, "E", path),
        numeric_column(df, "uE", path),
        X=numeric_column(df, "X", path),
        name=spec.name,
        units=spec.unit,
        source=str(path),
        min_uE_rel_sd=1e-6,
    )
    ds = ds.rename({"X": "uE_other"})
    ds["uE_other"].attrs = LITERATURE["pal2022"].attrs("uE_other", units=spec.unit)
    ds.attrs["uE_definition"] = "column uE"
    return ds


def _read_bus2022(spec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    ref = spec.option("reference", "E_")
    df = read_frame(path)
    reference = numeric_column(df, ref, path)
    prediction = numeric_column(df, "prediction", path)
    variance = numeric_column(df, "uncertainty_total", path)
    if "formula" not in df.columns:
        raise InputError(f"{path}: no column 'formula'")
    with np.errstate(invalid="ignore"):
        uE = np.sqrt(variance)
    ds = from_arrays(
        reference - prediction,
        uE,
        X=_masses(df["formula"]),
        V=prediction,
        name=spec.name,
        units=spec.unit,
        source=str(path),
    )
    ds["X"].attrs.update(LITERATURE["bus2022"].attrs("X"))
    ds["V"].attrs["units"] = spec.unit
    ds.attrs["sign_convention"] = f"E = {ref} - prediction ({SIGN_CONVENTION})"
    ds.attrs["uE_definition"] = "sqrt(uncertainty_total) (the column is a variance)"
    return ds


def _read_ras2023_logp(spec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    K = spec.option("K")
    uq, pred = ("uq", "y_pred") if K is None else (f"uq_{K}", f"y_pred_{K}")
    df = read_frame(path, comment=None)
    logp = numeric_column(df, "logP", path)
    y_pred = numeric_column(df, pred, path)
    ds = from_arrays(
        logp - y_pred,
        numeric_column(df, uq, path),
        V=y_pred,
        name=spec.name,
        units=spec.unit,
        source=str(path),
    )
    ds.attrs["sign_convention"] = (
        f"E = logP - {pred} ({SIGN_CONVENTION}); the file's error column has the opposite sign"
    )
    ds.attrs["uE_definition"] = f"column {uq}"
    return ds


def _read_ras2023_vertip(spec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    df = read_frame(path, comment=None)
    error = numeric_column(df, "error", path)
    if spec.reader == "ras2023_vertip_evidential":
        uE = np.hypot(numeric_column(df, "uq_ale", path), numeric_column(df, "uq_epi", path))
        uE_def = "sqrt(uq_ale^2 + uq_epi^2) (aleatoric and epistemic standard deviations)"
    else:
        uE = numeric_column(df, "uq", path)
        uE_def = "column uq"
    y_preds = numeric_column(df, "y_preds", path)
    ds = from_arrays(-error, uE, V=y_preds, name=spec.name, units=spec.unit, source=str(path))
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


def _read_hu2022(spec, paths: dict[str, Path]) -> xr.Dataset:
    path = paths[spec.file]
    x_path = paths[spec.option("distance")]
    E = numeric_column(read_frame(path, header=None), 0, path)
    X = numeric_column(read_frame(x_path, header=None), 0, x_path)
    qhat = _parse_qhat(paths[spec.option("qhat")])
    if E.size != X.size:
        raise InputError(f"{spec.name}: {E.size} residuals but {X.size} distances")
    probs = np.array([0.68, 0.95])
    U = X[:, None] * np.array([qhat[p] for p in probs])[None, :]
    ds = from_arrays(E, U[:, 1] / 1.96, X=X, name=spec.name, units=spec.unit, source=str(path))
    hu = LITERATURE["hu2022"]
    ds = ds.assign_coords(prob=hu.variable("prob", probs))
    ds["U"] = hu.variable("U", U, units=spec.unit)
    ds["qhat"] = hu.variable("qhat", np.array([qhat[p] for p in probs]), units=spec.unit)
    ds["X"].attrs.update(hu.attrs("X", space=spec.name.split("_")[1]))
    ds.attrs["sign_convention"] = f"E = residual ({SIGN_CONVENTION})"
    ds.attrs["uE_definition"] = "U_0.95 / 1.96 (standard-uncertainty proxy of the primer)"
    ds.attrs["source_files"] = ", ".join(str(p) for p in paths.values())
    return ds


#: Parsing rule of each ``reader`` key of the registry file.
#: Each takes the registry record (:class:`uqx.dataio.datasets.DatasetSpec`, a layer above
#: this one) and the verified paths of its files.
READERS: dict[str, Callable[..., xr.Dataset]] = {
    "pal2022": _read_pal2022,
    "bus2022": _read_bus2022,
    "hu2022": _read_hu2022,
    "ras2023_logp": _read_ras2023_logp,
    "ras2023_rf": _read_ras2023_logp,
    "ras2023_vertip_ls": _read_ras2023_vertip,
    "ras2023_vertip_evidential": _read_ras2023_vertip,
}
