"""What a validation result says, for people: words, tables and the printed text.

:mod:`~uqx.text.summary` puts the answer in words (one paragraph per set, how each
verdict was reached), :mod:`~uqx.text.tables` gives the tables (pandas), JSON records and
the cells of both, :mod:`~uqx.text.console` the text that ``uqx validate`` and ``uqx show``
print. Everything here reads a result :class:`xarray.Dataset` (in memory or from NetCDF)
and computes nothing: the workflow below does not import it.
"""
