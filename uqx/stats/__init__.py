"""Numpy kernels over the last axis (no xarray inside)."""
