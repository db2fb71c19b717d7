"""NetCDF archives: atomic, compressed writes with provenance, reads, and lazy opening.

* :func:`atomic_write` is the one atomic file write of the package (hidden temporary file
  in the target directory, then :func:`os.replace`), used by :func:`to_netcdf`, the report
  and the Monte-Carlo studies.
* :func:`to_netcdf` writes any :class:`xarray.Dataset` atomically, compressed, with a
  provenance block (``uqx_version``, ``created_at``, ``seed`` of
  :func:`uqx.dataio.provenance.provenance_attrs`; ``parameters``, ``Conventions``); a result's
  variable that lost its ``long_name`` gets the one of :mod:`uqx.dataio.schema` back.
  Types that netCDF cannot hold natively are encoded reversibly: boolean variables are
  stored as ``int8``, attributes that are dicts, lists, tuples, ``None`` or booleans are
  stored as JSON strings with the prefix :data:`JSON_PREFIX`.
* :func:`read_netcdf` loads a file into memory (the file is closed on return) and undoes
  those encodings.
* :func:`open_dataset` opens the (E, uE) columns of a NetCDF file lazily (dask chunks),
  for data larger than memory: :func:`uqx.validate`, :func:`uqx.bootstrap`,
  :func:`uqx.compute` and :func:`uqx.simulate_reference` stream over its chunks.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

from uqx.dataio.model import from_arrays
from uqx.dataio.paths import check_output_path
from uqx.dataio.provenance import provenance_attrs
from uqx.dataio.schema import group_of
from uqx.errors import InputError, OutputError

__all__ = [
    "atomic_write",
    "to_netcdf",
    "read_netcdf",
    "open_dataset",
    "unreadable_message",
    "netcdf_kind",
    "json_default",
    "NETCDF_SUFFIXES",
    "JSON_PREFIX",
    "DTYPE_ATTR",
]

#: Prefix marking a string attribute that holds a JSON-encoded Python value.
JSON_PREFIX = "uqx-json:"
#: Variable attribute recording the in-memory dtype of a variable that netCDF stores
#: differently (``bool`` stored as ``int8``; ``object``/``<U..`` strings).
DTYPE_ATTR = "uqx_dtype"

#: File suffixes read as NetCDF inputs by :func:`open_dataset` (and the CLI).
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf")
#: Rows per dask chunk of :func:`open_dataset` (2^20: one group of the streamed routes).
OPEN_CHUNK_ROWS = 1 << 20

_COMPRESSION = {"zlib": True, "complevel": 4, "shuffle": True}


def json_default(obj):
    """Convert numpy arrays and scalars and paths for :func:`json.dumps` (its ``default``)."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot JSON-encode {type(obj).__name__}")


def _encode_attr(key: str, value, where: str):
    """Return a netCDF-storable version of an attribute value."""
    if isinstance(value, bool | np.bool_ | dict | list | tuple) or value is None:
        try:
            return JSON_PREFIX + json.dumps(value, default=json_default, allow_nan=True)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"to_netcdf: attribute {key!r} of {where} cannot be stored ({exc})"
            ) from None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value.astype(np.int8)
    return value


def _encode_attrs(attrs: dict, where: str) -> dict:
    return {str(k): _encode_attr(str(k), v, where) for k, v in attrs.items()}


def _damaged(where: str, key: str, value, what: str) -> None:
    """Warn that an attribute could not be decoded (its stored value is kept)."""
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    warnings.warn(f"{where}: attribute {key!r} = {shown} is damaged ({what}); kept as "
                  "stored", UserWarning, stacklevel=4)


def _decode_attrs(attrs: dict, where: str = "the file") -> dict:
    out = {}
    for key, value in attrs.items():
        if isinstance(value, str) and value.startswith(JSON_PREFIX):
            try:
                value = json.loads(value[len(JSON_PREFIX) :])
            except ValueError:  # edited by hand or by another tool: show what is there
                _damaged(where, key, value, f"not JSON after {JSON_PREFIX!r}")
        out[key] = value
    return out


def _encode_variable(name, var: xr.Variable) -> tuple[xr.Variable, dict]:
    """Return (storable variable without encoding, netCDF encoding dict)."""
    attrs = _encode_attrs(dict(var.attrs), f"variable {name!r}")
    if DTYPE_ATTR in attrs:
        raise InputError(f"to_netcdf: attribute {DTYPE_ATTR!r} of {name!r} is reserved by uqx")
    data = var.values
    kind = data.dtype.kind
    encoding: dict = {}
    if kind == "b":
        data = data.astype(np.int8)
        attrs[DTYPE_ATTR] = "bool"
    elif kind in "OU":
        if kind == "O":
            flat = data.ravel()
            bad = [v for v in flat if not isinstance(v, str)]
            if bad:
                raise InputError(
                    f"to_netcdf: object variable {name!r} holds non-string values "
                    f"(first {bad[0]!r}); convert it to str or a numeric dtype"
                )
        attrs[DTYPE_ATTR] = data.dtype.str
        data = data.astype(str)
    elif kind == "f":
        encoding = dict(_COMPRESSION)
    return xr.Variable(var.dims, data, attrs=attrs), encoding


def _decode_variable(var: xr.Variable, where: str = "the file") -> xr.Variable:
    attrs = _decode_attrs(dict(var.attrs), where)
    dtype = attrs.pop(DTYPE_ATTR, None)
    data = var.values
    try:
        if dtype == "bool":
            data = data.astype(bool)
        elif dtype is not None:
            data = data.astype(np.dtype(dtype))
    except (TypeError, ValueError) as exc:
        _damaged(where, DTYPE_ATTR, dtype, f"{exc}; the values keep their stored type "
                 f"{data.dtype}")
    return xr.Variable(var.dims, data, attrs=attrs)


def _declared_attrs(name, var: xr.Variable, group, attrs: dict) -> xr.Variable:
    """Give a result's variable without ``long_name`` its declared attributes back.

    xarray's arithmetic drops the attributes; a variable of a known result
    (:func:`uqx.dataio.schema.group_of`) with the declared dims gets the ``long_name`` and
    fixed attributes of :mod:`uqx.dataio.schema` (the fields of a long name such as
    ``level`` from the data set's attributes; without them it is left as it is).
    """
    if group is None or name not in group or "long_name" in var.attrs:
        return var
    v = group[name]
    if v.long_name is None or tuple(var.dims) != v.dims or not set(v.fields) <= set(attrs):
        return var
    out = var.copy(deep=False)
    out.attrs = {"long_name": v.long_name.format(**{f: attrs[f] for f in v.fields}),
                 **v.attrs, **var.attrs}
    return out


def to_netcdf(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    parameters: dict | None = None,
    seed: int | None = None,
    mkdir: bool = False,
) -> Path:
    """Write a data set to NetCDF atomically, with provenance attributes.

    The file is first written to a hidden temporary file in the target directory and
    then moved into place with :func:`os.replace`, so that a reader never sees a partial
    file and a failure leaves any previous file untouched (the temporary is removed).
    The path is checked first by :func:`uqx.dataio.paths.check_output_path`, the policy
    that the command line follows too: a NetCDF suffix, not a directory, device or FIFO,
    and an existing directory (unless ``mkdir``).

    Parameters
    ----------
    ds : xarray.Dataset
        Data to write; not modified. Boolean variables are stored as ``int8`` and
        string/object variables as netCDF strings, each with a ``uqx_dtype`` attribute;
        attributes that are dicts, lists, tuples, ``None`` or booleans are stored as
        JSON strings prefixed with :data:`JSON_PREFIX`. :func:`read_netcdf` restores all
        of them. In a result of :func:`uqx.validate`, :func:`uqx.bootstrap`,
        :func:`uqx.simulate_reference` or ``uqx sweep``, a variable that lost its
        ``long_name`` (xarray's arithmetic drops the attributes) is written with the
        attributes that :mod:`uqx.dataio.schema` declares for it, where its dims are the
        declared ones.
    path : str or path-like
        Target file, with a NetCDF suffix (``.nc``, ``.nc4``, ``.netcdf``, ``.cdf``).
    parameters : dict, optional
        Run parameters, stored as the JSON string attribute ``parameters`` (when not
        given, an existing ``parameters`` string attribute of ``ds`` is kept, else ``{}``).
    seed : int, optional
        Root random seed, stored as the attribute ``seed`` (when not given, an existing
        ``seed`` attribute of ``ds`` is kept).
    mkdir : bool, default False
        Create a missing directory of ``path``; otherwise a missing directory is refused
        (:class:`~uqx.errors.OutputError` naming it), as on the command line.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    InputError
        Attributes or variables that cannot be stored.
    uqx.errors.OutputError
        The file cannot be written (an :class:`OSError`; the message names ``path``,
        never the temporary file): another suffix than NetCDF's, a directory, a device,
        a FIFO, a missing directory (without ``mkdir``) or an unwritable one.

    Notes
    -----
    Engine ``netcdf4``; float variables are zlib-compressed (level 4, shuffle). Global
    attributes added: ``uqx_version``, ``created_at`` (ISO-8601, UTC), ``parameters``,
    ``seed`` (when given) and ``Conventions = "CF-1.8"``.

    Examples
    --------
    >>> to_netcdf(result, "results.nc", parameters={"n_boot": 1000}, seed=1)  # doctest: +SKIP
    """
    if not isinstance(ds, xr.Dataset):
        raise InputError(f"to_netcdf: expected an xarray.Dataset, got {type(ds).__name__}")
    path = check_output_path(path, kind="netcdf", mkdir=mkdir)
    variables = {}
    encoding = {}
    group = group_of(ds)
    for name, var in ds.variables.items():
        variables[name], enc = _encode_variable(name, _declared_attrs(name, var, group,
                                                                      ds.attrs))
        if enc and name not in ds.coords:
            encoding[name] = enc
    coord_names = [n for n in ds.coords]
    out = xr.Dataset(
        {n: v for n, v in variables.items() if n not in ds.coords},
        coords={n: variables[n] for n in coord_names},
    )
    attrs = _encode_attrs(dict(ds.attrs), "the data set")
    if parameters is not None or not isinstance(attrs.get("parameters"), str):
        try:
            attrs["parameters"] = json.dumps(
                parameters or {}, default=json_default, sort_keys=True
            )
        except (TypeError, ValueError) as exc:
            raise InputError(f"to_netcdf: parameters cannot be JSON-encoded ({exc})") from None
    attrs.update(provenance_attrs(seed=seed, Conventions="CF-1.8"))
    out.attrs = attrs

    return atomic_write(
        path, lambda tmp: out.to_netcdf(tmp, engine="netcdf4", encoding=encoding),
        what="NetCDF file", mkdir=mkdir,
    )


def atomic_write(
    path: str | os.PathLike, write: Callable[[Path], object], *, what: str = "file",
    mkdir: bool = True,
) -> Path:
    """Write a file atomically: a reader sees the old file or the complete new one.

    ``write`` fills a hidden temporary file in the target directory (same file system),
    which is then moved into place with :func:`os.replace`; a file replaced keeps its
    permission bits, and a read-only one is refused. On failure the temporary is
    removed and any previous file is left untouched; on an interruption
    (:class:`KeyboardInterrupt`...) it is removed too and the interruption goes on.

    Parameters
    ----------
    path : str or path-like
        Target file; checked by :func:`uqx.dataio.paths.check_output_path` (not a
        directory, device or FIFO; an existing directory unless ``mkdir``).
    write : callable
        ``write(tmp)`` writes the whole content to the :class:`pathlib.Path` ``tmp``
        (which keeps the suffix of ``path``, so that writers that add a suffix, such as
        :func:`numpy.savez`, do not rename it). Its return value is ignored.
    what : str, default "file"
        What is written, for the error message (``"NetCDF file"``, ``"report"``).
    mkdir : bool, default True
        Create a missing directory of ``path`` (this low-level helper writes the blocks
        of the studies into their run directories); the public writers
        (:func:`to_netcdf`, :func:`uqx.report.write_report`) pass False unless asked.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    uqx.errors.OutputError
        ``path`` is a directory, a device or a FIFO, a read-only file, its directory is
        missing (without ``mkdir``) or cannot be created, or ``write`` failed; the message
        names ``path``, never the temporary file.

    Examples
    --------
    >>> atomic_write("notes.txt", lambda tmp: tmp.write_text("done"))  # doctest: +SKIP
    """
    path = check_output_path(path, mkdir=mkdir, probe=False)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # a replaced file keeps its mode
    except OSError:
        mode = None
    tmp = path.parent / f".{path.stem}.{uuid.uuid4().hex}.tmp{path.suffix}"
    try:
        write(tmp)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        # name the target, never the hidden temporary file
        reason = str(exc).replace(str(tmp), str(path)).replace(tmp.name, path.name)
        msg = f"{path}: cannot write {what} ({reason or type(exc).__name__})"
        raise OutputError(msg) from exc
    except BaseException:  # KeyboardInterrupt...: clean up, re-raise as is
        tmp.unlink(missing_ok=True)
        raise
    return path


def _check_units(path, raw, E: str, uE: str, uE_is_variance: bool) -> None:
    """Refuse E and uE variables whose ``units`` attributes differ (eV and meV).

    Z = E/uE needs both in the same units; with ``uE_is_variance`` the units of uE are
    those of E squared (``eV^2``, ``eV**2``, ``eV2``, ``eV²``). A variable without
    ``units`` says nothing and is accepted.
    """
    units = [str(raw[v].attrs.get("units", "")).strip() for v in (E, uE)]
    if not all(units) or units[0] == units[1]:
        return
    u = units[0]
    if uE_is_variance and units[1].replace(" ", "") in (
            f"{u}^2", f"{u}**2", f"{u}2", f"{u}\u00b2", f"({u})^2", f"({u})**2"):
        return
    what = "variances, in the square of E's units" if uE_is_variance else "in E's units"
    raise InputError(f"{path}: {E!r} is in {units[0]!r} but {uE!r} in {units[1]!r} (units "
                     f"attributes): uE must be {what} for Z = E/uE; convert one variable "
                     "(and its 'units') first")


def read_netcdf(path: str | os.PathLike) -> xr.Dataset:
    """Read a NetCDF file written by :func:`to_netcdf` into memory.

    Parameters
    ----------
    path : str or path-like
        NetCDF file.

    Returns
    -------
    xarray.Dataset
        Fully loaded (the file is closed); booleans, string dtypes and JSON-encoded
        attributes are restored.

    Raises
    ------
    InputError
        Missing or unreadable file.

    Warns
    -----
    UserWarning
        An attribute that cannot be decoded (a ``uqx_dtype`` that is no dtype, text
        after :data:`JSON_PREFIX` that is not JSON): the warning names it, and its
        stored value is kept.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        with xr.open_dataset(path, engine="netcdf4") as raw:
            raw = raw.load()
    except (OSError, ValueError) as exc:
        raise InputError(unreadable_message(path, exc)) from None
    variables = {name: _decode_variable(var, f"{path}: variable {name!r}")
                 for name, var in raw.variables.items()}
    out = xr.Dataset(
        {n: v for n, v in variables.items() if n not in raw.coords},
        coords={n: variables[n] for n in raw.coords},
        attrs=_decode_attrs(dict(raw.attrs), str(path)),
    )
    return out


def netcdf_kind(path: str | os.PathLike) -> str | None:
    """Tell what a NetCDF file holds, from its variables and attributes (data not read).

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    str or None
        ``"result"`` (a saved :func:`uqx.validate` result: variables ``verdict`` or
        ``estimate``), ``"study"`` (an archive of ``uqx sweep``: attribute ``study``),
        ``"data"`` (anything else: input columns for :func:`open_dataset`), or None when
        the file is missing or not NetCDF (the readers say why).

    Examples
    --------
    >>> netcdf_kind("results.nc")  # doctest: +SKIP
    'result'
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with xr.open_dataset(path, engine="netcdf4", decode_times=False) as raw:
            names, attrs = set(map(str, raw.variables)), dict(raw.attrs)
    except (OSError, ValueError):
        return None
    if "verdict" in names or ("estimate" in names and "E" not in names):
        return "result"
    if attrs.get("study"):
        return "study"
    return "data"


#: The first bytes of a NetCDF-4 (HDF5) file and of a classic NetCDF file.
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_CLASSIC_SIGNATURE = b"CDF"


def unreadable_message(path, exc, where: str = "") -> str:
    """Say why a NetCDF file cannot be read, in words: damaged, truncated, or not NetCDF.

    netCDF4 reports a truncated or damaged file as "NetCDF: HDF error"; the file's
    first bytes tell a damaged NetCDF file (its signature is there: an interrupted
    write or copy) from a file that is no NetCDF at all.

    Parameters
    ----------
    path : path-like
        The file.
    exc : Exception
        What the reader raised.
    where : str, optional
        Where in the file (a group), for the message.

    Returns
    -------
    str
        The message.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
        size = Path(path).stat().st_size
    except OSError:
        return f"{path}: cannot read as NetCDF{where} ({exc})"
    if head.startswith(_HDF5_SIGNATURE) or head.startswith(_CLASSIC_SIGNATURE):
        return (f"{path}: cannot read as NetCDF: damaged or truncated NetCDF file{where} "
                f"({size} bytes; it starts "
                f"as NetCDF but its content cannot be read: an interrupted write or copy?); "
                f"write it again or copy it again from its source (reader: {exc})")
    return (f"{path}: cannot read as NetCDF: not a NetCDF file{where} (it does not start "
            "with the NetCDF or HDF5 "
            f"signature); a CSV file needs the suffix .csv (reader: {exc})")


def open_dataset(
    path: str | os.PathLike,
    *,
    E: str = "E",
    uE: str = "uE",
    X: str | None = None,
    V: str | None = None,
    name: str | None = None,
    chunks: int = OPEN_CHUNK_ROWS,
    uE_is_variance: bool = False,
    drop_nonfinite: bool = False,
    group: str | None = None,
) -> xr.Dataset:
    """Open the error / uncertainty columns of a NetCDF file lazily (out of core).

    The variables stay on disk as dask arrays of ``chunks`` rows; the checks of
    :func:`uqx.dataio.model.from_arrays` (finite values, ``uE > 0``, at least 2 rows) read the
    file once, chunk by chunk. The moment statistics (:func:`uqx.compute`), their
    bootstrap (:func:`uqx.bootstrap`), their simulated references
    (:func:`uqx.simulate_reference`) and :func:`uqx.validate` of moment statistics then
    stream over the chunks without loading the columns; binned and rank statistics and
    the conditional routes of :func:`uqx.validate` load them (see its Notes).

    Parameters
    ----------
    path : str or path-like
        NetCDF file (netCDF4/HDF5 or classic) with one-dimensional variables ``E`` and
        ``uE`` (any names, see below) over the same dimension.
    E, uE : str
        Names of the error and uncertainty variables.
    X, V : str, optional
        Names of the input-feature and predicted-value variables.
    name : str, optional
        Data set name; defaults to the file's ``name`` attribute, else its stem.
    chunks : int, default 2^20
        Rows per dask chunk (the file's own HDF5 chunking is read as it is).
    uE_is_variance : bool, default False
        The ``uE`` variable holds variances (``sign(v) * sqrt(|v|)`` is used, lazily).
    drop_nonfinite : bool, default False
        Drop (and count) rows with NaN/inf instead of raising; dropping makes the
        columns' length unknown to dask until computed, so prefer clean files.
    group : str, optional
        NetCDF4 group holding the variables (e.g. ``"preds"`` or ``"/run1/preds"``).
        Default: the root, or the one group that holds ``E`` and ``uE`` when the root
        holds neither (recorded in ``attrs["group"]``).

    Returns
    -------
    xarray.Dataset
        Canonical input data set (dask-backed ``E``, ``uE`` [, ``X``, ``V``] over
        ``sample``, no ``sample`` coordinate); attrs ``name``, ``source`` (the path).

    Raises
    ------
    InputError
        Missing file, a file that is not NetCDF, an unknown variable (the message lists
        the variables and the groups), several groups holding ``E`` and ``uE`` (the
        message names them), a variable that is not one-dimensional or not numeric,
        columns over different dimensions, ``E`` and ``uE`` with different ``units``
        attributes (eV and meV; the square of E's with ``uE_is_variance``), ``chunks`` < 1,
        values equal to a variable's ``_FillValue`` (read as missing: the message says so
        and how many; dropped and counted with ``drop_nonfinite``), and everything
        :func:`uqx.dataio.model.from_arrays` rejects.

    Examples
    --------
    >>> ds = open_dataset("forces.nc", E="err", uE="sigma")  # doctest: +SKIP
    >>> uqx.validate(ds, ["zms", "rce"], bootstrap=1000, conditional=False)  # doctest: +SKIP
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    if not (isinstance(chunks, (int, np.integer)) and chunks >= 1):
        raise InputError(f"chunks must be a positive integer (rows), got {chunks!r}")
    try:
        raw = xr.open_dataset(path, engine="netcdf4", chunks={}, mask_and_scale=True,
                              group=group)
    except (OSError, ValueError) as exc:
        where = f" (group {group!r})" if group else ""
        raise InputError(unreadable_message(path, exc, where)) from None
    if group is None and E not in raw.variables and uE not in raw.variables:
        group = _group_holding(path, (E, uE))
        if group is not None:  # the root holds nothing: the one group that holds E, uE
            raw.close()
            raw = xr.open_dataset(path, engine="netcdf4", chunks={}, mask_and_scale=True,
                                  group=group)
    wanted = {"E": E, "uE": uE, "X": X, "V": V}
    if E not in raw.variables and raw.attrs.get("study"):  # before a result: both have
        raw.close()                                          # estimates and replicates
        raise InputError(f"{path} is an archive of 'uqx sweep {raw.attrs['study']}', not input "
                         f"data: summarise it with `uqx sweep summary {path}` or draw it with "
                         f"`uqx plot study {path}` (uqx.plot.study)")
    if E not in raw.variables and "estimate" in raw.variables and (
            "verdict" in raw.variables or "replicate" in raw.dims):
        raw.close()
        raise InputError(f"{path} is a saved uqx result, not input data: read it with "
                         "uqx.read_netcdf (or `uqx show` / `uqx report` on the command line)")
    cols, dim = {}, None
    for key, var in wanted.items():
        if var is None:
            continue
        if var not in raw.variables:
            avail = ", ".join(map(str, raw.variables)) or "none"
            groups = _groups_text(path) if group is None else ""
            where = f" in group {group!r}" if group else ""
            raise InputError(f"{path}: no variable {var!r} (for {key}){where}; variables: "
                             f"{avail}{groups}")
        arr = raw[var]
        if arr.ndim != 1:
            raise InputError(f"{path}: variable {var!r} must be one-dimensional, got dims "
                             f"{arr.dims}")
        if dim is not None and arr.dims[0] != dim:
            raise InputError(f"{path}: variables {E!r} and {var!r} are over different "
                             f"dimensions ({dim!r}, {arr.dims[0]!r})")
        dim = arr.dims[0]
        cols[key] = arr.chunk({dim: int(chunks)}).data
    try:
        _check_units(path, raw, E, uE, uE_is_variance)
    except InputError:
        raw.close()
        raise
    filled = _filled_values(path, group, {k: v for k, v in wanted.items() if v is not None},
                            chunks)
    if filled and not drop_nonfinite:
        raise InputError(
            f"{path}: {'; '.join(filled)}; NetCDF reads values equal to a variable's "
            "_FillValue (or missing_value) as missing, so these rows are NaN here. If they "
            "are data, the file's fill value is wrong: rewrite it without one (xarray: "
            "del ds[name].encoding['_FillValue'] before to_netcdf); if they are missing, "
            "drop (and count) those rows with drop_nonfinite=True (CLI: --drop-nonfinite)")
    if uE_is_variance:
        v = cols["uE"].astype(np.float64)
        cols["uE"] = np.sign(v) * np.sqrt(np.abs(v))
    label = name if name is not None else str(raw.attrs.get("name") or path.stem)
    out = from_arrays(cols["E"], cols["uE"], X=cols.get("X"), V=cols.get("V"), name=label,
                      source=str(path), drop_nonfinite=drop_nonfinite)
    if filled:  # dropped with the other missing rows: say why they were missing
        out.attrs["filters"] = "; ".join(
            [f for f in [out.attrs.get("filters", "")] if f]
            + [f"rows equal to the _FillValue read as missing ({'; '.join(filled)})"])
    if group is not None:
        out.attrs["group"] = group
    return out


def _group_holding(path: Path, names) -> str | None:
    """Return the one group of a NetCDF4 file that holds all of ``names`` (None: no group).

    Raises
    ------
    InputError
        Several groups hold them: the message names the groups.
    """
    found = []

    def walk(g, prefix):
        for key, sub in g.groups.items():
            where = f"{prefix}/{key}"
            if all(n in sub.variables for n in names):
                found.append(where)
            walk(sub, where)

    try:
        with netCDF4.Dataset(path) as nc:
            walk(nc, "")
    except OSError:
        return None
    if len(found) > 1:
        raise InputError(
            f"{path}: the variables {', '.join(map(repr, names))} are in several groups "
            f"({', '.join(found)}): uqx reads one data set per file; open one with "
            f"uqx.open_dataset(path, group={found[0]!r}), or save each group to its own file")
    return found[0] if found else None


def _groups_text(path: Path) -> str:
    """``"; groups: a (E, uE), b (x)"``: the groups of a file and their variables, or ''."""
    parts = []

    def walk(g, prefix):
        for key, sub in g.groups.items():
            where = f"{prefix}/{key}".lstrip("/")
            parts.append(f"{where} ({', '.join(sub.variables) or 'no variables'})")
            walk(sub, f"{prefix}/{key}")

    try:
        with netCDF4.Dataset(path) as nc:
            walk(nc, "")
    except OSError:
        return ""
    return f"; groups: {', '.join(parts)}" if parts else ""


def _filled_values(path: Path, group, wanted: dict, chunks: int) -> list[str]:
    """Describe the values of the columns equal to their finite ``_FillValue``.

    NetCDF masks them as missing; a fill value that coincides with real values (a
    writer's mistake) would otherwise be reported as NaN in the data. One read of the
    columns that declare a finite fill value (none for xarray's default NaN fill).
    """
    texts = []
    with xr.open_dataset(path, engine="netcdf4", chunks={}, mask_and_scale=False,
                         group=group) as raw:
        for key, var in wanted.items():
            attrs = {**raw[var].attrs, **raw[var].encoding}
            fills = [attrs[a] for a in ("_FillValue", "missing_value") if a in attrs]
            fills = [f for f in np.ravel(np.asarray(fills, dtype=np.float64))
                     if np.isfinite(f)]
            if not fills:
                continue
            data = raw[var].chunk({raw[var].dims[0]: int(chunks)}).data
            hit = np.isin(data, fills) if len(fills) > 1 else data == fills[0]
            n = int(hit.sum().compute())
            if n:
                rows = np.flatnonzero(np.asarray(hit[: min(hit.shape[0], 1 << 24)]))[:5]
                shown = ", ".join(map(str, rows.tolist())) + (", ..." if n > rows.size
                                                              else "")
                texts.append(f"{n} value(s) of {var!r} ({key}) equal its _FillValue "
                             f"{fills[0]:g} (0-based rows {shown})")
    return texts
