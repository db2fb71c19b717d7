"""The ``.uqx`` accessor of :class:`xarray.Dataset`: uqx's functions as methods.

Registered when ``uqx`` and ``xarray`` are both imported, in either order (see
:mod:`uqx`). It only forwards, as the accessors of arviz-stats and xskillscore do: every
method calls the public function of the same job with the Dataset as its first argument,
so the two spellings always give the same result::

    ds = uqx.from_dataframe(df, E="err", uE="sigma", X="mass")
    res = ds.uqx.validate(compute=uqx.Compute(seed=1))   # uqx.validate(ds, compute=...)
    res.uqx.verdicts()                      # uqx.verdict_table(res)
    res.uqx.plot.zeta_bars()                # uqx.plot.zeta_bars(res)

Nothing heavy is imported here (no dask, numba or matplotlib): each method imports the
function it forwards to when it is called (a plain import, seen by import-linter).
"""

from __future__ import annotations

import xarray as xr

from uqx import plot as _plot
from uqx.plot import FIGURES, figure_of

__all__ = ["UqxAccessor", "PlotMethods", "PLOT_KINDS"]

#: Figure functions of :mod:`uqx.plot` reachable as ``ds.uqx.plot.<name>(...)``: the
#: registry :data:`uqx.plot.FIGURES`.
PLOT_KINDS = FIGURES


def _plot_method(name: str):
    def method(self, **kwargs):
        return getattr(_plot, name)(self._ds, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"Draw :func:`uqx.plot.{name}` of this Dataset; keyword arguments are "
                      "passed on.\n\nReturns\n-------\nmatplotlib.figure.Figure\n"
                      "    The figure.\n")
    return method


class PlotMethods:
    """Figures of a Dataset: ``ds.uqx.plot.<kind>(**options)`` is ``uqx.plot.<kind>(ds, ...)``.

    Every function of :mod:`uqx.plot` listed in :data:`PLOT_KINDS` is a method; calling
    the object with a kind of :data:`uqx.plot.KINDS`, as named by ``uqx plot``
    (``"e-vs-u"``, ``"lzv"``, ``"zeta"``...), draws the same figure.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data or a result, as the figure needs.
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def __call__(self, kind: str, **kwargs):
        """Draw the figure ``kind`` (``"reliability"``, ``"e-vs-u"``, ``"zeta"``...).

        Parameters
        ----------
        kind : str
            A kind of :data:`uqx.plot.KINDS` or a name of :data:`PLOT_KINDS`, with ``-``
            or ``_``; ``"zeta"`` is :func:`uqx.plot.zeta_bars`, ``"tailedness"``
            :func:`uqx.plot.tailedness_map`, ``"lzv"`` :func:`uqx.plot.lzisd` with
            ``stat="lzv"`` (:func:`uqx.plot.figure_of`).
        **kwargs
            Options of the figure function (over the kind's defaults).

        Returns
        -------
        matplotlib.figure.Figure
            The figure.

        Raises
        ------
        InputError
            Unknown kind.
        """
        name, defaults = figure_of(kind)
        return getattr(self, name)(**{**defaults, **kwargs})

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(PLOT_KINDS))


for _name in PLOT_KINDS:
    setattr(PlotMethods, _name, _plot_method(_name))
del _name


@xr.register_dataset_accessor("uqx")
class UqxAccessor:
    """uqx methods of an :class:`xarray.Dataset` (``ds.uqx.<method>``), forwarding only.

    On input data (``E``, ``uE``, optional ``X``, ``V``): :meth:`validate`,
    :meth:`describe`, :meth:`compute`, :meth:`bootstrap`; on a validation result:
    :meth:`summary`, :meth:`explain`, :meth:`verdicts`, :meth:`questions`, :meth:`table`,
    :meth:`conditional_table`, :meth:`to_dataframe`, :meth:`records`, :meth:`report`;
    on both: :attr:`plot` and :meth:`to_netcdf`.

    Parameters
    ----------
    ds : xarray.Dataset
        The Dataset the accessor is attached to.
    """

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    @property
    def _result(self) -> xr.Dataset:
        """Return the result with its ``set`` dimension.

        One set selected (``res.isel(set=0)``, ``res.sel(set="a")``) keeps ``set`` as a
        scalar coordinate: it becomes a dimension of length one again for the tables.
        """
        from uqx.dataio.schema import VALIDATE

        ds = self._ds
        if not ("set" not in ds.dims and "set" in ds.coords and ds["set"].ndim == 0):
            return ds
        # the variables over set per the result schema (those it does not know: all)
        no_set = {n for n in VALIDATE if "set" not in VALIDATE[n].dims}
        out = ds.expand_dims("set")
        for name in [n for n in out.data_vars if n in no_set]:
            out[name] = ds[name]
        for name in [n for n, c in out.coords.items()
                     if c.ndim == 0 and n != "set" and n not in no_set]:
            out = out.assign_coords({name: ("set", [out[name].values.item()])})
        return out

    # ---------------------------------------------------------------- input data

    def validate(self, stats=None, **kwargs) -> xr.Dataset:
        """Validate the uncertainties: :func:`uqx.validate` of this Dataset.

        Parameters
        ----------
        stats : str or sequence of str, optional
            Statistics (default those of :func:`uqx.validate`).
        **kwargs
            Options of :func:`uqx.validate`: its groups of settings (``bootstrap``,
            ``copies``, ``binning``, ``conditional``, ``decision``, ``compute``).

        Returns
        -------
        xarray.Dataset
            The validation result.
        """
        args = () if stats is None else (stats,)
        from uqx.workflow.validation import validate

        return validate(self._ds, *args, **kwargs)

    def recalibrate(self, method: str = "auto", *, check: bool = False, **kwargs):
        """Recalibrate uE: :func:`uqx.fit_recalibration` of this Dataset.

        With ``check``, the cross-fitted :func:`uqx.check_recalibration` instead.

        Parameters
        ----------
        method : str, default "auto"
            ``auto``, ``scale``, ``power``, ``scaling-binning``, ``isotonic``, ``bvs-uE``
            or ``bvs-X``.
        check : bool, default False
            Cross-fit and validate before and after instead of fitting one map.
        **kwargs
            Options of the function forwarded to (``seed``, ``n_bins``, ``folds``,
            ``split``, ``n_boot`` of the map's band; with ``check``, the groups of
            :func:`uqx.validate`: ``bootstrap``, ``copies``...).

        Returns
        -------
        uqx.workflow.recalibrate.RecalMap or uqx.workflow.recalibrate.RecalCheck
            The map (``.apply(ds)``, ``.to_netcdf(path)``), or the check (``.text()``).
        """
        from uqx.workflow.recalibrate import check_recalibration, fit_recalibration

        if check:
            return check_recalibration(self._ds, method, **kwargs)
        return fit_recalibration(self._ds, method, **kwargs)

    def describe(self, **kwargs) -> xr.Dataset:
        """Summary statistics and tailedness: :func:`uqx.describe` of this Dataset.

        Parameters
        ----------
        **kwargs
            Options of :func:`uqx.describe`.

        Returns
        -------
        xarray.Dataset
            One variable per statistic.
        """
        from uqx.inference.describe import describe

        return describe(self._ds, **kwargs)

    def compute(self, stats=None, **kwargs) -> xr.DataArray:
        """Point estimates of statistics: :func:`uqx.compute` of this Dataset.

        Parameters
        ----------
        stats : sequence of str, optional
            Statistics (default those of :func:`uqx.compute`).
        **kwargs
            Options of :func:`uqx.compute`.

        Returns
        -------
        xarray.DataArray
            Estimates over ``stat`` (and ``set``).
        """
        args = () if stats is None else (stats,)
        from uqx.inference.describe import compute

        return compute(self._ds, *args, **kwargs)

    def bootstrap(self, stats=None, **kwargs) -> xr.Dataset:
        """Bootstrap confidence intervals: :func:`uqx.bootstrap` of this Dataset.

        Parameters
        ----------
        stats : sequence of str, optional
            Statistics (default those of :func:`uqx.bootstrap`).
        **kwargs
            Options of :func:`uqx.bootstrap`.

        Returns
        -------
        xarray.Dataset
            Estimates with their intervals.
        """
        args = () if stats is None else (stats,)
        from uqx.inference.bootstrap import bootstrap

        return bootstrap(self._ds, *args, **kwargs)

    # ---------------------------------------------------------------- results

    def table(self, **kwargs):
        """Per-statistic table of a result: :func:`uqx.result_table`.

        Parameters
        ----------
        **kwargs
            Options of :func:`uqx.result_table` (``digits``).

        Returns
        -------
        pandas.DataFrame
            Rows (set, stat); estimate, interval, reference, ζ and verdict columns.
        """
        from uqx.text.tables import result_table

        return result_table(self._result, **kwargs)

    def verdicts(self):
        """One row per set, the summary first: :func:`uqx.verdict_table`.

        Returns
        -------
        pandas.DataFrame
            A :class:`uqx.text.tables.VerdictTable`, printed with the summary of every
            set above it. Index ``set``; ``M``, the verdict of every question (average,
            consistency, adaptivity, ranking, up to a factor), the ``scale factor``
            conclusion and the verdict of every statistic.
        """
        from uqx.text.tables import verdict_table

        return verdict_table(self._result)

    def summary(self) -> list[str]:
        """Say the answer in words, one paragraph per set: :func:`.summary_lines`.

        Returns
        -------
        list of str
            Per set: each question's verdict in the units of uE, then what to do next.
        """
        from uqx.text.summary import summary_lines

        return summary_lines(self._result)

    def explain(self) -> list[str]:
        """How each verdict was reached, one paragraph per set.

        :func:`uqx.text.summary.explain_lines`: per question, its test, its level, the
        members of the null family that take part with their p-values, and how they were
        combined.

        Returns
        -------
        list of str
        """
        from uqx.text.summary import explain_lines

        return explain_lines(self._result)

    def questions(self):
        """Tabulate the questions of every set: :func:`uqx.text.tables.question_table`.

        Returns
        -------
        pandas.DataFrame
            Rows (set, question); verdict, level, p, members, resolution, tests, reason.
        """
        from uqx.text.tables import question_table

        return question_table(self._result)

    def conditional_table(self, **kwargs):
        """Consistency and adaptivity routes: :func:`uqx.text.tables.conditional_table`.

        Parameters
        ----------
        **kwargs
            Options of :func:`uqx.text.tables.conditional_table`.

        Returns
        -------
        pandas.DataFrame
            Rows (set, cond, route); value, interval and verdict.
        """
        from uqx.text.tables import conditional_table

        return conditional_table(self._result, **kwargs)

    def to_dataframe(self):
        """Convert the result to one long tidy DataFrame: :func:`uqx.result_dataframe`.

        Returns
        -------
        pandas.DataFrame
            One row per (set, statistic), unrounded numbers, verdict columns.
        """
        from uqx.text.tables import result_dataframe

        return result_dataframe(self._result)

    def records(self) -> list[dict]:
        """JSON-ready records of a result: :func:`uqx.result_records`.

        Returns
        -------
        list of dict
            One record per set.
        """
        from uqx.text.tables import result_records

        return result_records(self._result)

    def report(self, path=None, data=None, **kwargs):
        """HTML or Markdown report of a result (:mod:`uqx.report`).

        Parameters
        ----------
        path : str or path-like, optional
            Write the report there (:func:`uqx.report.document.write_report`, format from the
            suffix); without it the page is returned (:func:`uqx.report.document.report`).
        data : xarray.Dataset, optional
            The validated inputs, for the figures of the raw data.
        **kwargs
            Options of the report functions.

        Returns
        -------
        pathlib.Path or str
            The file written, or the page.
        """
        from uqx.report import report, write_report

        if path is None:
            return report(self._result, data, **kwargs)
        return write_report(self._result, path, data, **kwargs)

    # ---------------------------------------------------------------- both

    @property
    def plot(self) -> PlotMethods:
        """Figures: ``ds.uqx.plot.<kind>(**options)`` is ``uqx.plot.<kind>(ds, ...)``."""
        return PlotMethods(self._ds)

    def to_netcdf(self, path, **kwargs):
        """Write atomically with provenance attributes: :func:`uqx.to_netcdf`.

        Parameters
        ----------
        path : str or path-like
            Target file.
        **kwargs
            Options of :func:`uqx.to_netcdf` (``parameters``, ``seed``).

        Returns
        -------
        pathlib.Path
            The file written.
        """
        from uqx.dataio.netcdf import to_netcdf

        return to_netcdf(self._ds, path, **kwargs)
