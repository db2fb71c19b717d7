"""Data and I/O: the xarray data model of the sets, files, and the literature datasets.

:mod:`~uqx.dataio.model` (``from_arrays``, ``stack``: the checked ``(set, sample)``
Dataset), :mod:`~uqx.dataio.row_order` (the rows in uE order, permuted),
:mod:`~uqx.dataio.provenance` (the input digests and provenance attributes),
:mod:`~uqx.dataio.streaming` (rows read a group at a time),
:mod:`~uqx.dataio.frames` (CSV and DataFrame reading), :mod:`~uqx.dataio.netcdf`
(NetCDF archives: atomic writes, reads, lazy opening),
:mod:`~uqx.dataio.datasets` (the registry of the literature sets and their parsing rules),
:mod:`~uqx.dataio.fetch` (download from Zenodo) and :mod:`~uqx.dataio.schema` (the name,
dims and ``long_name`` of every result variable, once).
"""
