r"""Synthetic data generators (METHODS.md §8) and the embedded demo collection.

* NIG: :math:`u^2 \\sim \\Gamma^{-1}(\\nu/2, \\nu/2)`, :math:`E = u\\,\\epsilon`,
  ε ~ N(0,1) — calibrated, marginal E ~ t(ν) (001/004 p_val studies);
* TIG: same uncertainties, ε ~ unit-variance Student :math:`t_s(\\nu_D)` (001 Fig. 4).

Randomness is keyed by coordinates (:func:`uqx.resample.seed_sequence`).
"""

from __future__ import annotations

import numpy as np

from uqx.data import from_arrays, stack
from uqx.reference import draw_unit
from uqx.resample import seed_sequence

__all__ = ["nig", "tig", "demo_sets"]


def _rng(seed, *key):
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *key)))


def nig(M: int, nu: float, *, seed: int = 0, key=("nig",), ig_shape=None, ig_scale=None):
    r"""Calibrated NIG sample: :math:`u^2 \sim \Gamma^{-1}(a, b)`, :math:`E = u\,N(0,1)`.

    By default :math:`a = b = \nu/2` (so E ~ t(ν)); ``ig_shape``/``ig_scale`` override
    (000 App. B code uses IG(ν, ν), METHODS §8.1). Inverse gamma draws are
    ``1 / Gamma(shape=a, rate=b)``.

    Returns
    -------
    E, uE : numpy.ndarray, shape (M,)
    """
    a = nu / 2 if ig_shape is None else ig_shape
    b = nu / 2 if ig_scale is None else ig_scale
    rng = _rng(seed, *key, M, float(nu))
    u = np.sqrt(1.0 / rng.gamma(a, 1.0 / b, M))
    return u * rng.standard_normal(M), u


def tig(M: int, nu_d: float, *, nu_ig: float = 6.0, seed: int = 0, key=("tig",)):
    r"""Draw a calibrated heavy-tailed TIG sample.

    :math:`u^2 \sim \Gamma^{-1}(\nu_{IG}/2, \nu_{IG}/2)`, :math:`E = u\,t_s(\nu_D)`
    (unit-variance Student errors, calibrated but heavy-tailed).
    """
    rng = _rng(seed, *key, M, float(nu_d), float(nu_ig))
    u = np.sqrt(1.0 / rng.gamma(nu_ig / 2, 2.0 / nu_ig, M))
    return u * draw_unit(rng, M, dist="t", nu=nu_d), u


def demo_sets(M: int = 5000, *, seed: int = 20240101):
    """Build the embedded demo collection (no data directory needed), stacked on ``set``.

    * ``calibrated``: NIG ν = 6 with a feature X unrelated to the errors (valid everywhere);
    * ``overconfident``: same errors, uncertainties × 0.8 (ZMS ≈ 1.56);
    * ``underconfident``: uncertainties × 1.25 (ZMS ≈ 0.64);
    * ``inconsistent``: calibrated on average, uncertainties shuffled (primer case C:
      no consistency, CC ≈ 0);
    * ``nonadaptive``: E grows with X while u does not (consistent on average over X-blind
      bins, fails adaptivity);
    * ``heavy_tailed``: TIG with ν_D = 3 (calibrated but beyond the tailedness limits).
    """
    E, u = nig(M, 6.0, seed=seed, key=("demo",))
    rng = _rng(seed, "demo-extra")
    X = rng.uniform(0, 1, M)
    sets = [
        from_arrays(E, u, X=X, name="calibrated", source="uqx.synth NIG nu=6"),
        from_arrays(E, 0.8 * u, X=X, name="overconfident", source="NIG nu=6, u*0.8"),
        from_arrays(E, 1.25 * u, X=X, name="underconfident", source="NIG nu=6, u*1.25"),
        from_arrays(E, rng.permutation(u), X=X, name="inconsistent", source="NIG, u shuffled"),
    ]
    scale = np.sqrt(3.0) * 2 * X  # mean of scale^2 over X ~ U(0,1) is 4 → rescale to 1
    sets.append(
        from_arrays(E * scale / 2, u, X=X, name="nonadaptive", source="NIG, E scaled by sqrt(3) X")
    )
    Et, ut = tig(M, 3.0, seed=seed, key=("demo-tig",))
    sets.append(from_arrays(Et, ut, X=X, name="heavy_tailed", source="TIG nu_D=3"))
    ds = stack(sets)
    ds.attrs["source"] = "uqx.synth.demo_sets (synthetic, generated on the fly)"
    return ds
