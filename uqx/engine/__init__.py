"""The numerical engine: numpy/numba kernels that know nothing of xarray, pandas or dask.

Statistics on one sample (:mod:`~uqx.engine.statistic`), binning (:mod:`~uqx.engine.binning`),
resampling plans (:mod:`~uqx.engine.resample`), the generative models of the references
(:mod:`~uqx.engine.generators`), the evaluator that runs statistics over bins and replicates
(:mod:`~uqx.engine.evaluator`), the verdict rules (:mod:`~uqx.engine.verdict`,
:mod:`~uqx.engine.mctest`) and the tailedness and correlation kernels
(:mod:`uqx.engine.stats`). Everything above (data model, inference, workflow) calls down
into these; none of them imports upward (an import-linter contract in ``pyproject.toml``).
"""
