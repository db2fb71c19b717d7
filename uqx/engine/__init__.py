"""The numerical engine: numpy/numba kernels that know nothing of xarray, pandas or dask.

Statistics on one sample (:mod:`~uqx.engine.statistic`), binning (:mod:`~uqx.engine.binning`),
resampling plans (:mod:`~uqx.engine.resample`) and intervals (:mod:`~uqx.engine.confidence`),
the generative models of the references (:mod:`~uqx.engine.generators`,
:mod:`~uqx.engine.unit_variance`), the evaluator that runs statistics over bins and
replicates (:mod:`~uqx.engine.evaluator`), the calibrated copies of the tests
(:mod:`~uqx.engine.copies`, :mod:`~uqx.engine.gaussian_sums`, :mod:`~uqx.engine.alternative`),
the Monte-Carlo p-values (:mod:`~uqx.engine.mctest`), the decision design of a result
(:mod:`~uqx.engine.questions`) and the resolutions (:mod:`~uqx.engine.resolution`); the
papers' ζ decision, kept beside the verdicts for comparison (:mod:`~uqx.engine.verdict`);
the tailedness and correlation kernels (:mod:`uqx.engine.stats`, :mod:`~uqx.engine.ranks`).
Everything above (data model, inference, workflow) calls down into these; none of them
imports upward (an import-linter contract in ``pyproject.toml``).
"""
