"""Registry of the literature ML-UQ data sets used by Pernot's papers.

The registry table (name, family, file, reader, M, unit, description, aliases, reader
options, SHA-256) is the package data file ``uqx/dataio/registry.json``. The files are not
shipped: they are read from a data directory (:func:`data_dir`: argument ``data_dir``,
else ``UQX_DATA_DIR``, else the repository's ``data/`` or ``./data``) holding
``PAL2022/``, ``BUS2022/``, ``RAS2023/``, ``HU2022/`` as archived in the Zenodo records
10.5281/zenodo.10666788 and 10.5281/zenodo.10730985 (``data/README.md``).
:func:`load_dataset` checks the SHA-256 of every file and applies the family's parsing
rule (methods: notation and conventions); all errors follow ``E = reference - prediction``:

* PAL2022: columns ``E``, ``uE`` by name; rows with ``uE <= 1e-6 sd(E)`` dropped (counted
  in ``attrs["n_dropped"]``); the file's ``X`` is the ``uE`` of the matching cal/uncal
  file, *not* an input feature: kept as ``uE_other``, never as ``X``. Unit eV.
* BUS2022: ``E = E_ - prediction`` (``E`` or ``U0`` instead of ``E_`` in variants),
  ``uE = sqrt(uncertainty_total)`` (a variance), ``X`` = molecular mass (Da) from
  ``formula``, ``V = prediction``. Unit eV.
* RAS2023: logP ``E = logP - y_pred``, ``uE = uq``, ``V = y_pred`` (dimensionless; no
  comment character, SMILES contain ``#``); vertIP ``E = -error`` (the files' ``error``
  is prediction - reference, checked on the ``_val`` file with ``y`` and ``y_preds``),
  ``uE = uq`` (LS) or ``sqrt(uq_ale^2 + uq_epi^2)`` (evidential), ``V = y_preds``; eV.
* HU2022: ``E`` = residual, ``X`` = feature/latent distance, interval half-widths
  ``U(sample, prob) = qhat_P * X`` for P in (0.68, 0.95), ``uE = U_0.95 / 1.96`` (the
  primer's standard-uncertainty proxy). Unit eV (per system).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
import xarray as xr

from uqx.dataio.model import InputError, stack
from uqx.dataio.readers import (  # noqa: F401  (re-exported)
    ATOMIC_WEIGHTS,
    READERS,
    SIGN_CONVENTION,
    molecular_mass,
)

__all__ = [
    "DatasetSpec",
    "REGISTRY",
    "PAPER_SETS",
    "ATOMIC_WEIGHTS",
    "data_dir",
    "default_data_dirs",
    "get_spec",
    "load_dataset",
    "load_paper_sets",
    "list_datasets",
    "check_datasets",
    "molecular_mass",
]

ENV_VAR = "UQX_DATA_DIR"
ZENODO = "10.5281/zenodo.10666788 and 10.5281/zenodo.10730985"
FAMILIES = ("PAL2022", "BUS2022", "RAS2023", "HU2022")

# --------------------------------------------------------------------------- data dir


def data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Locate the literature data directory.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Directory to use. Defaults to ``$UQX_DATA_DIR``, then to the first of
        :func:`default_data_dirs` (the repository's ``data/``, then ``./data``) that
        holds one of the family folders ``PAL2022/``, ``BUS2022/``, ``RAS2023/``,
        ``HU2022/``.

    Returns
    -------
    pathlib.Path
        The existing directory.

    Raises
    ------
    InputError
        Nothing found; the message says which file is expected where and where the
        data come from.
    """
    return _find_data_dir(data_dir)


def default_data_dirs() -> list[Path]:
    """List the default data directories, in order of preference.

    ``data/`` next to the package (a source checkout or an editable install), then
    ``data/`` in the current directory, each folder once (the same folder when run from
    the checkout).
    """
    found = []
    for path in (Path(__file__).resolve().parents[2] / "data", Path.cwd() / "data"):
        if not any(_same_dir(path, p) for p in found):
            found.append(path)
    return found


def _same_dir(a: Path, b: Path) -> bool:
    """Whether two folder paths name the same folder (links resolved; missing ones too)."""
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def _find_data_dir(data_dir: str | os.PathLike | None) -> Path:
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise InputError(f"data_dir must be a path (str or path-like), not "
                         f"{type(data_dir).__name__} {data_dir!r}: it names the folder "
                         "that holds the literature sets")
    if data_dir is not None or os.environ.get(ENV_VAR):
        arg = data_dir is not None
        candidate = Path(data_dir if arg else os.environ[ENV_VAR]).expanduser()
        if candidate.is_dir():
            return candidate
        where = f"{'data_dir argument' if arg else '$' + ENV_VAR} = {str(candidate)!r} is "
        where += "not a directory"
    else:
        defaults = default_data_dirs()
        for path in defaults:  # a default folder counts once it holds a family folder
            if any((path / family).is_dir() for family in FAMILIES):
                return path
        where = (
            f"no data directory given, ${ENV_VAR} is not set and no default folder "
            f"({', '.join(str(p) for p in defaults)}) holds the data"
        )
    example = REGISTRY["Diffusion_RF_cal"].file
    raise InputError(
        f"literature data directory not found: {where}. Expected a directory holding "
        f"{', '.join(f + '/' for f in FAMILIES)} (e.g. <data dir>/{example}). The files "
        f"come from the Zenodo records {ZENODO}: `uqx datasets fetch --all` downloads "
        f"them (uqx.dataio.fetch.fetch_datasets), or set {ENV_VAR}=<data dir> (or pass "
        "data_dir=...)."
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


#: Registry file shipped with the package (``uqx/dataio/registry.json``: one object per data set).
REGISTRY_FILE = "registry.json"
_SPEC_FIELDS = ("name", "family", "file", "reader", "sha256", "M", "unit", "description")


def _load_registry() -> tuple[dict[str, DatasetSpec], tuple[tuple[str, str, str], ...]]:
    """Read the registry table and the paper-set list from :data:`REGISTRY_FILE`."""
    doc = json.loads(resources.files("uqx.dataio").joinpath(REGISTRY_FILE).read_text("utf-8"))
    specs = [
        DatasetSpec(
            **{k: e[k] for k in _SPEC_FIELDS},
            aliases=tuple(e.get("aliases", ())),
            options=tuple(e.get("options", {}).items()),
            extra_files=tuple((f["file"], f["sha256"]) for f in e.get("extra_files", ())),
        )
        for e in doc["datasets"]
    ]
    registry = {s.name: s for s in specs}
    if len(registry) != len(specs):  # pragma: no cover - registry file bug
        raise RuntimeError(f"{REGISTRY_FILE}: duplicate dataset names")
    return registry, tuple((p["label"], p["paper"], p["name"]) for p in doc["paper_sets"])


_TABLES = _load_registry()
#: All registered data sets, by registry name (read from :data:`REGISTRY_FILE`).
REGISTRY: dict[str, DatasetSpec] = _TABLES[0]
#: The nine literature sets of papers 000, 001 and 004: (label, paper name, registry name).
PAPER_SETS: tuple[tuple[str, str, str], ...] = _TABLES[1]


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
            close = [
                by_lower[c]
                for c in difflib.get_close_matches(
                    str(name).lower(), list(by_lower), n=5, cutoff=0.5
                )
            ]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise InputError(
            f"unknown dataset {name!r}.{hint} Run `uqx datasets list` (or "
            "uqx.dataio.datasets.list_datasets()) for all names."
        )
    return REGISTRY[key]


# ------------------------------------------------------------------------- checksums

_HASH_CACHE: dict[tuple[str, int, int], str] = {}
#: Bytes read at a time by :func:`sha256_stream`.
_HASH_BLOCK = 1 << 20


def sha256_stream(fin, fout=None) -> str:
    """SHA-256 (hex) of a binary stream read to its end, 1 MiB at a time: the one file hasher.

    Parameters
    ----------
    fin : binary file-like
        Read until EOF.
    fout : binary file-like, optional
        Every block read is also written there (a copy checked on the way, as
        :mod:`uqx.dataio.fetch` extracts an archive member).

    Returns
    -------
    str
        The hex digest.
    """
    h = hashlib.sha256()
    for block in iter(lambda: fin.read(_HASH_BLOCK), b""):
        h.update(block)
        if fout is not None:
            fout.write(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file, cached by (resolved path, mtime, size) for the session."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    digest = _HASH_CACHE.get(key)
    if digest is None:
        with open(path, "rb") as fh:
            digest = _HASH_CACHE[key] = sha256_stream(fh)
    return digest


def _resolve_files(spec: DatasetSpec, root: Path, verify: bool) -> dict[str, Path]:
    paths = {}
    for rel, expected in spec.files:
        path = root / rel
        if not path.is_file():
            raise InputError(
                f"dataset {spec.name!r}: file {rel} not found in the data directory {root} "
                f"(expected {path}). The files come from the Zenodo records {ZENODO}: "
                f"`uqx datasets fetch {spec.name}` downloads them."
            )
        if verify:
            actual = file_sha256(path)
            if actual != expected:
                raise InputError(
                    f"dataset {spec.name!r}: checksum mismatch for {path}: expected sha256 "
                    f"{expected}, got {actual}. The file differs from the archived version; "
                    f"restore it (`uqx datasets fetch {spec.name} --force`) or pass "
                    "verify=False."
                )
        paths[rel] = path
    return paths


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
        Data directory; default as in :func:`data_dir`.
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
    ds = READERS[spec.reader](spec, paths)
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
        Data directory; default as in :func:`data_dir`.
    verify : bool, default True
        Verify file checksums.

    Returns
    -------
    xarray.Dataset
        Output of :func:`~uqx.dataio.model.stack` in the papers' order (methods: conventions):
        ``set`` coordinate = paper names (``Diffusion_RF`` ... ``logP_150k_LS-GCN``), non-index
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
    cols = ("name", "family", "M", "file", "aliases", "unit", "description")
    return pd.DataFrame(
        [
            {k: ", ".join(s.aliases) if k == "aliases" else getattr(s, k) for k in cols}
            for s in REGISTRY.values()
        ]
    )


def check_datasets(data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Check presence and checksums of every registered file.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory; default as in :func:`data_dir`.

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
            ok = ok and file_sha256(path) == expected
        rows.append({"name": spec.name, "file": spec.file, "present": present, "checksum_ok": ok})
    return pd.DataFrame(rows)
