r"""Synthetic data generators (methods: synthetic data), the primer cases and the demo collection.

* NIG: :math:`u^2 \sim \Gamma^{-1}(a, a)`, :math:`E = u\,\epsilon`, ε ~ N(0,1) —
  calibrated; with a = ν/2 (``ig_shape="half-nu"``, 001/004 p_val studies) the marginal E
  is t(ν); a = ν (``ig_shape="nu"``) is the parameterisation of the 000 App. B code;
* TIG: same uncertainties, ε ~ unit-variance Student :math:`t_s(\nu_D)`; 001 Fig. 4
  right draws the uncertainties once (:func:`tig_uncertainties`) and reuses them;
* primer cases A–F (paper 003 Sect. III A, Tables I–II): :func:`primer_case`,
  :func:`primer_cases`;
* the demo collection of ``uqx demo`` (:func:`demo_sets`).

Randomness is keyed by coordinates (:func:`uqx.engine.resample.seed_sequence`), so every data
set is reproducible on its own. ``python -m uqx.dataio.synth DIRECTORY`` writes the example CSV
files of ``data/examples`` (:func:`write_examples`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from uqx.dataio.model import InputError, from_arrays, stack
from uqx.engine.resample import seed_sequence
from uqx.engine.unit_variance import draw_unit

__all__ = [
    "nig",
    "tig",
    "tig_uncertainties",
    "ig_parameters",
    "primer_case",
    "primer_cases",
    "PRIMER_CASES",
    "demo_sets",
    "write_examples",
]

#: Root seed of the primer cases (the R script uses ``set.seed(12345)``; RNGs differ).
PRIMER_SEED = 12345

#: Primer cases (003 Sect. III A): description, Table I expectations (calibration,
#: consistency, adaptivity) and Table II values (Var(E)/<u²>, Var(Z); * = rejected).
PRIMER_CASES: dict[str, dict[str, str | float]] = {
    "A": dict(
        description="quadratic model R = 0.1 + X^2, heteroscedastic u = 0.1 |R|, "
        "normal errors: calibrated, consistent, adaptive",
        calibration="yes", consistency="yes", adaptivity="yes", var_e_mv=0.98, var_z=1.02,
    ),
    "B": dict(
        description="errors of A, u = RMS(u_A) N(1, 0.1) unrelated to the errors: "
        "calibrated on average, not consistent, not adaptive",
        calibration="yes", consistency="no", adaptivity="no", var_e_mv=0.97, var_z=1.02,
    ),
    "C": dict(
        description="errors of A, u = random permutation of u_A: <E^2> = <u^2> holds, "
        "Var(Z) = 1 fails; not consistent, not adaptive",
        calibration="yes/no", consistency="no", adaptivity="no", var_e_mv=0.98, var_z=53.8,
    ),
    "D": dict(
        description="errors of A, u = 2 u_A (uncertainties overestimated): fails "
        "calibration, consistency and adaptivity",
        calibration="no", consistency="no", adaptivity="no", var_e_mv=0.25, var_z=0.26,
    ),
    "E": dict(
        description="as A with unit-variance Student t(4) errors: calibrated, consistent, "
        "adaptive; tests assuming normal errors fail",
        calibration="yes", consistency="yes", adaptivity="yes", var_e_mv=1.09, var_z=0.96,
    ),
    "F": dict(
        description="homoscedastic: constant u = RMS(u_A), errors redrawn with it: "
        "calibrated (consistency = calibration), u not adaptive to X",
        calibration="yes", consistency="-", adaptivity="no", var_e_mv=1.00, var_z=1.00,
    ),
}


def _rng(seed, *key):
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *key)))


def ig_parameters(nu: float, ig_shape="half-nu", ig_scale=None) -> tuple[float, float]:
    r"""Shape and scale of the inverse gamma law of u² (methods: synthetic data).

    Parameters
    ----------
    nu : float
        Degrees of freedom ν of the generator.
    ig_shape : {"half-nu", "nu"} or float, default "half-nu"
        ``"half-nu"``: IG(ν/2, ν/2) (001/004; E ~ t(ν)); ``"nu"``: IG(ν, ν) (000 App. B
        code, ``rinvgamma(M, ν, ν)``); a number gives the shape directly.
    ig_scale : float, optional
        Scale (rate of the gamma law of 1/u²); defaults to the shape.

    Returns
    -------
    (float, float)
        Shape a and scale b of :math:`u^2 \sim \Gamma^{-1}(a, b)`.
    """
    if isinstance(ig_shape, str):
        if ig_shape not in ("half-nu", "nu"):
            raise InputError(f"ig_shape must be 'half-nu', 'nu' or a number, got {ig_shape!r}")
        a = nu / 2 if ig_shape == "half-nu" else float(nu)
    elif ig_shape is None:
        a = nu / 2
    else:
        a = float(ig_shape)
    b = a if ig_scale is None else float(ig_scale)
    if not (a > 0 and b > 0):
        raise InputError(f"inverse gamma shape and scale must be > 0, got {a}, {b}")
    return a, b


def nig(M: int, nu: float, *, seed: int = 0, key=("nig",), ig_shape="half-nu", ig_scale=None,
        sort_u: bool = False):
    r"""Calibrated NIG sample: :math:`u^2 \sim \Gamma^{-1}(a, b)`, :math:`E = u\,N(0,1)`.

    methods: synthetic data. Inverse gamma draws are ``1 / Gamma(shape=a, rate=b)`` (MCMCpack
    ``rinvgamma``); ``ig_shape``/``ig_scale`` as in :func:`ig_parameters` (default
    IG(ν/2, ν/2), so E ~ t(ν) and E² ~ F(1, ν); ``ig_shape="nu"`` for 000 App. B).
    ``sort_u=True`` sorts u increasingly before E is drawn (000 App. B ``testENCE.R``;
    matters only for binnings on the row order).

    Parameters
    ----------
    M : int
        Sample size.
    nu : float
        ν of the IG distribution of u² (E ~ t(ν) by default).
    seed : int, default 0
        Root seed.
    key : tuple
        Key of the random stream.
    ig_shape, ig_scale
        Parametrisation of the IG law (:func:`ig_parameters`).
    sort_u : bool, default False
        Sort u increasingly before E is drawn.

    Returns
    -------
    E, uE : numpy.ndarray, shape (M,)
    """
    a, b = ig_parameters(nu, ig_shape, ig_scale)
    rng = _rng(seed, *key, M, float(nu))
    u = np.sqrt(1.0 / rng.gamma(a, 1.0 / b, M))
    if sort_u:
        u = np.sort(u)
    return u * rng.standard_normal(M), u


def tig_uncertainties(M: int, *, nu_ig: float = 6.0, seed: int = 0, key=("tig-u",),
                      ig_shape="half-nu"):
    r"""One draw of TIG uncertainties :math:`u = \sqrt{\Gamma^{-1}(a, a)}` to reuse.

    001 Fig. 4 right (``testValidRCE2.R``, methods: synthetic data) draws u = √IG(3, 3) (ν_IG = 6)
    once and reuses it for every ν_D and every replicate; pass the result as ``uE`` to
    :func:`tig`.

    Parameters
    ----------
    M : int
        Sample size.
    nu_ig : float, default 6
        ν of the IG law of u².
    seed : int, default 0
        Root seed.
    key : tuple
        Key of the random stream.
    ig_shape : str, default "half-nu"
        Parametrisation of the IG law (:func:`ig_parameters`).

    Returns
    -------
    numpy.ndarray, shape (M,)
    """
    a, b = ig_parameters(nu_ig, ig_shape)
    rng = _rng(seed, *key, M, float(nu_ig))
    return np.sqrt(1.0 / rng.gamma(a, 1.0 / b, M))


def tig(M: int, nu_d: float, *, nu_ig: float = 6.0, seed: int = 0, key=("tig",), uE=None,
        ig_shape="half-nu"):
    r"""Draw a calibrated heavy-tailed TIG sample.

    :math:`u^2 \sim \Gamma^{-1}(a, a)` (a = ν_IG/2 by default, ``ig_shape="nu"`` for the
    000 App. B T6IG), :math:`E = u\,t_s(\nu_D)` (unit-variance Student errors, calibrated
    but heavy-tailed; methods: synthetic data).

    Parameters
    ----------
    uE : array_like, optional
        Fixed uncertainties (e.g. from :func:`tig_uncertainties`): only E is drawn, from
        a stream keyed by (``key``, M, ν_D, "fixed-u"); ``M`` must equal ``len(uE)``.

    Returns
    -------
    E, uE : numpy.ndarray, shape (M,)
    """
    if uE is not None:
        u = np.asarray(uE, dtype=np.float64)
        if u.shape != (M,):
            raise InputError(f"tig: uE has shape {u.shape}, expected ({M},)")
        rng = _rng(seed, *key, M, float(nu_d), "fixed-u")
        return u * draw_unit(rng, M, dist="t", nu=nu_d), u
    a, b = ig_parameters(nu_ig, ig_shape)
    rng = _rng(seed, *key, M, float(nu_d), float(nu_ig))
    u = np.sqrt(1.0 / rng.gamma(a, 1.0 / b, M))
    return u * draw_unit(rng, M, dist="t", nu=nu_d), u


def _primer_base(M: int, seed: int):
    """Case A: X sorted N(0,1), R = 0.1 + X², u = 0.1 abs(R), E = R − V = −u ε."""
    rng = _rng(seed, "primer", "A", M)
    X = np.sort(rng.standard_normal(M))
    R = 0.1 + X**2
    u = 0.1 * np.abs(R)
    V = R + u * rng.standard_normal(M)
    return X, R, u, V


def primer_case(name: str, *, M: int = 5000, seed: int = PRIMER_SEED):
    r"""One synthetic case A–F of the primer (003 Sect. III A; methods: synthetic data).

    A: X = sort(N(0,1)), R = 0.1 + X², u = 0.1·abs(R), V = R + u·ε, E = R − V.
    B: u ← RMS(u_A)·N(1, 0.1). C: u ← random permutation of u_A. D: u ← 2·u_A.
    E: V = R + u_A·t₄/√2 (unit-variance Student errors). F: constant u = RMS(u_A), V
    redrawn as R + u·ε. RMS(u_A) = √⟨u_A²⟩ (code; the paper's Eq. 14 writes √⟨u⟩).
    Cases B–F share the draws of A (same ``seed`` and ``M``); their own extra draws come
    from streams keyed by (``seed``, "primer", case, M).

    Parameters
    ----------
    name : {"A", "B", "C", "D", "E", "F"}
    M : int, default 5000
    seed : int, default 12345

    Returns
    -------
    xarray.Dataset
        ``E``, ``uE``, ``X``, ``V`` over ``sample``; attrs ``name``, ``description``,
        ``expected_calibration``, ``expected_consistency``, ``expected_adaptivity`` (003
        Table I), ``paper_var_e_mv``, ``paper_var_z`` (003 Table II), ``seed``.
    """
    key = str(name).upper()
    if key not in PRIMER_CASES:
        raise InputError(f"unknown primer case {name!r}; expected one of A, B, C, D, E, F")
    if int(M) < 2:
        raise InputError(f"primer case: M must be >= 2, got {M}")
    X, R, u_a, V = _primer_base(int(M), seed)
    rng = _rng(seed, "primer", key, int(M))
    rms = np.sqrt(np.mean(u_a**2))
    u = u_a
    if key == "B":
        u = rms * rng.normal(1.0, 0.1, M)
    elif key == "C":
        u = rng.permutation(u_a)
    elif key == "D":
        u = 2 * u_a
    elif key == "E":
        V = R + u_a * rng.standard_t(4, M) / np.sqrt(2.0)
    elif key == "F":
        u = np.full(M, rms)
        V = R + u * rng.standard_normal(M)
    info = PRIMER_CASES[key]
    ds = from_arrays(R - V, u, X=X, V=V, name=key,
                     source=f"uqx.dataio.synth.primer_case({key!r}, M={M}, seed={seed})")
    ds.attrs.update(
        description=info["description"],
        expected_calibration=info["calibration"],
        expected_consistency=info["consistency"],
        expected_adaptivity=info["adaptivity"],
        paper_var_e_mv=info["var_e_mv"],
        paper_var_z=info["var_z"],
        seed=int(seed),
    )
    return ds


def primer_cases(names="ABCDEF", *, M: int = 5000, seed: int = PRIMER_SEED):
    """Stack the primer cases on ``set`` (:func:`primer_case` for each name).

    Parameters
    ----------
    names : iterable of str, default "ABCDEF"
        The cases (003 Table I).
    M : int, default 5000
        Size of each set.
    seed : int, default 12345
        Root seed.

    Returns
    -------
    xarray.Dataset
        As :func:`uqx.dataio.model.stack`, plus string variables over ``set``:
        ``expected_calibration``, ``expected_consistency``, ``expected_adaptivity``
        (003 Table I) and ``description``.
    """
    cases = [primer_case(n, M=M, seed=seed) for n in names]
    ds = stack(cases)
    for k in ("expected_calibration", "expected_consistency", "expected_adaptivity",
              "description"):
        ds[k] = ("set", np.array([c.attrs[k] for c in cases], dtype=str))
    for k in ("paper_var_e_mv", "paper_var_z"):
        ds[k] = ("set", np.array([c.attrs[k] for c in cases], dtype=float))
    ds.attrs["source"] = f"uqx.dataio.synth.primer_cases (003 Sect. III A), M={M}, seed={seed}"
    return ds


def demo_sets(M: int = 5000, *, seed: int = 20240101):
    """Build the embedded demo collection (no data directory needed), stacked on ``set``.

    * ``calibrated``: NIG ν = 6 with a feature X unrelated to the errors (valid everywhere);
    * ``overconfident``: same errors, uncertainties × 0.8 (ZMS ≈ 1.56);
    * ``underconfident``: uncertainties × 1.25 (ZMS ≈ 0.64);
    * ``inconsistent``: calibrated on average, uncertainties shuffled (primer case C:
      no consistency, CC ≈ 0);
    * ``nonadaptive``: the variance of E grows with X (from 0.25 u² to 1.75 u²) while u does
      not: consistent on uE (the mean of that variance over X is u²), fails adaptivity. At
      the default seed its consistency reads ``invalid`` with a borderline p-value: a
      false rejection, which the test makes on 3.2 % [1.8, 5.6] of draws of this design
      (400 seeds, M = 5000);
    * ``heavy_tailed``: TIG with ν_D = 3 (calibrated but beyond the tailedness limits).

    Parameters
    ----------
    M : int, default 5000
        Size of each set.
    seed : int, default 20240101
        Root seed.

    Returns
    -------
    xarray.Dataset
        The six sets stacked on ``set``.
    """
    E, u = nig(M, 6.0, seed=seed, key=("demo",))
    rng = _rng(seed, "demo-extra")
    X = rng.uniform(0, 1, M)
    sets = [
        from_arrays(E, u, X=X, name="calibrated", source="uqx.dataio.synth NIG nu=6"),
        from_arrays(E, 0.8 * u, X=X, name="overconfident", source="NIG nu=6, u*0.8"),
        from_arrays(E, 1.25 * u, X=X, name="underconfident", source="NIG nu=6, u*1.25"),
        from_arrays(E, rng.permutation(u), X=X, name="inconsistent", source="NIG, u shuffled"),
    ]
    # Var(E | X) grows from 0.25 u² to 1.75 u²; its mean over X ~ U(0, 1) is u², so the set
    # stays consistent on uE, and Z (a normal scale mixture, kurtosis 3.56) stays within the
    # tailedness limits
    scale = np.sqrt(0.25 + 1.5 * X)
    sets.append(
        from_arrays(E * scale, u, X=X, name="nonadaptive",
                    source="NIG, E scaled by sqrt(0.25 + 1.5 X)")
    )
    Et, ut = tig(M, 3.0, seed=seed, key=("demo-tig",))
    sets.append(from_arrays(Et, ut, X=X, name="heavy_tailed", source="TIG nu_D=3"))
    ds = stack(sets)
    ds.attrs["source"] = "uqx.dataio.synth.demo_sets (synthetic, generated on the fly)"
    return ds


#: Size, seeds and number format of the files written by :func:`write_examples`.
EXAMPLES_M = 2000
EXAMPLES_FORMAT = "%.7g"


def _write_csv(path: Path, columns: dict[str, np.ndarray]) -> None:
    # fixed format and "\n" line ends: the bytes depend only on the values
    lines = [",".join(columns)]
    arrays = list(columns.values())
    for row in zip(*arrays, strict=True):
        lines.append(",".join(EXAMPLES_FORMAT % v for v in row))
    path.write_bytes(("\n".join(lines) + "\n").encode("ascii"))


def write_examples(directory, *, M: int = EXAMPLES_M) -> list[Path]:
    """Write the example CSV files of ``data/examples`` (primer cases and demo sets).

    One file per set: ``primer_<A..F>.csv`` (columns E, uE, X, V; :func:`primer_case`
    with its default seed) and ``demo_<name>.csv`` (columns E, uE, X;
    :func:`demo_sets` with its default seed), ``M`` rows each, numbers written with
    ``%.7g``. Regeneration is bit for bit: ``python -m uqx.dataio.synth data/examples``.

    Parameters
    ----------
    directory : str or path-like
        Output folder (created if needed); existing files of the same names are replaced.
    M : int, default 2000

    Returns
    -------
    list of pathlib.Path
        The files written, in order.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in PRIMER_CASES:
        ds = primer_case(name, M=M)
        path = out / f"primer_{name}.csv"
        _write_csv(path, {k: ds[k].values for k in ("E", "uE", "X", "V")})
        written.append(path)
    demo = demo_sets(M)
    for i, name in enumerate(demo["set"].values):
        path = out / f"demo_{name}.csv"
        _write_csv(path, {k: demo[k].values[i] for k in ("E", "uE", "X")})
        written.append(path)
    return written


def main(argv=None) -> int:
    """``python -m uqx.dataio.synth DIRECTORY``: write the example files.

    See :func:`write_examples`.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m uqx.dataio.synth DIRECTORY  (e.g. data/examples)",
              file=sys.stderr)
        return 2
    for path in write_examples(argv[0]):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
