"""Kernels of tailedness (:mod:`~uqx.engine.stats.tailedness`) and rank correlation."""
