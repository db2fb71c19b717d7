"""Binned statistics over a sweep of bin numbers, extrapolated to zero bins (002, 004).

:mod:`~uqx.inference.extrapolate.binsweep` computes ENCE, ZMSE, ZVE for each bin number
of a sweep (prefix sums over one sort); :mod:`~uqx.inference.extrapolate.fit` fits the
line in 1/sqrt(M/N) and reads its intercept; :mod:`~uqx.inference.extrapolate.null` gives
the intercepts' Monte-Carlo nulls on calibrated copies.
"""
