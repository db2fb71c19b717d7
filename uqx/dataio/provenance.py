"""Provenance of a result or a file: version, time, seed and the digests of the input sets.

:func:`provenance_attrs` is the one builder of these attributes (results of
:func:`uqx.validate` and :func:`uqx.bootstrap`, files of :func:`uqx.to_netcdf`, the
manifest of a study); :func:`provenance` gives the input part, whose digests are the
content keys of the sets' random streams, so that a result and its data can be matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from uqx._version import __version__
from uqx.dataio.model import SetData, check_sets
from uqx.dataio.streaming import streamed_content_key
from uqx.engine.resample import key_hex

__all__ = ["provenance", "provenance_attrs"]


def provenance(ds) -> dict:
    """Names, sizes and content digests of the input sets: the ``input_*`` result attributes.

    The digest of a set is :func:`uqx.engine.resample.key_hex` of its
    :func:`uqx.engine.resample.content_key` ``(E, uE)`` (SHA-256 over the float64 bytes of
    the ``M`` real rows of ``E``, ``|``, then ``uE``; the first 16 bytes, as four 32-bit
    words), computed chunk by chunk for dask-backed data. It is the digest that keys the
    set's random streams, and the ``input_digests`` attribute of a :func:`uqx.validate`
    result (:func:`provenance_attrs`), so a result and the data it came from can be
    matched (the report does).

    Parameters
    ----------
    ds : xarray.Dataset, sequence of xarray.Dataset, or sequence of SetData
        Any input form accepted by :func:`as_stacked`, or the sets of :func:`iter_sets`.

    Returns
    -------
    dict
        ``{"input_names": [...], "input_sizes": [...], "input_digests": [...]}`` (one
        entry per set; the digests are 32 hex digits).
    """
    if isinstance(ds, Sequence) and ds and all(isinstance(d, SetData) for d in ds):
        sets = [(sd.name, sd.M, sd.E, sd.uE) for sd in ds]
    else:
        ds = check_sets(ds).data
        sets = []
        for i, name in enumerate(ds["set"].values):
            m = int(ds["M"].values[i])
            sets.append((str(name), m, ds["E"].data[i, :m], ds["uE"].data[i, :m]))
    return {
        "input_names": [name for name, *_ in sets],
        "input_sizes": [int(m) for _, m, *_ in sets],
        "input_digests": [key_hex(streamed_content_key(E, u, m)) for _, m, E, u in sets],
    }


def provenance_attrs(data=None, *, seed=None, created: bool = True, inputs=None,
                     **fields) -> dict:
    """Provenance attributes of a result or a file: the one builder of uqx.

    Used by :func:`uqx.validate`, :func:`uqx.bootstrap`, :func:`uqx.to_netcdf` and the
    manifest of a Monte-Carlo study (:class:`uqx.sweeps.engine.Study`).

    Parameters
    ----------
    data : optional
        The input sets (any form of :func:`provenance`): adds ``input_names``,
        ``input_sizes`` and ``input_digests``.
    seed : int, optional
        Root random seed: adds ``seed`` (an int; a str beyond 64 bits, which NetCDF
        attributes cannot hold).
    created : bool, default True
        Add ``created_at``, the time now (UTC, ISO-8601 to the second, ``Z``). False for
        an identity that must not change from run to run (a study manifest).
    inputs : dict, optional
        ``provenance(data)`` already computed (instead of ``data``), e.g. by
        :func:`uqx.validate` before it reorders the rows: the same attributes, in the
        same place.
    **fields
        Further attributes, added last (in order).

    Returns
    -------
    dict
        ``uqx_version`` [, ``created_at``] [, ``seed``] [, ``input_*``], then ``fields``.
    """
    out = {"uqx_version": __version__}
    if created:
        out["created_at"] = datetime.now(UTC).isoformat(timespec="seconds").replace(
            "+00:00", "Z")
    if seed is not None:
        out["seed"] = int(seed) if -(2**63) <= int(seed) < 2**63 else str(seed)
    if inputs is not None:
        out.update(inputs)
    elif data is not None:
        out.update(provenance(data))
    out.update(fields)
    return out
