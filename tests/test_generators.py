"""Random variates of uqx.engine.generators on the keyed xoshiro256** streams.

Checks: a pure-Python twin of every generator (same tables, same stream) gives the same
bits; the ziggurat tables (published r, equal layer areas); each distribution against
scipy.stats (Kolmogorov-Smirnov and Cramer-von Mises on 10^6 draws, moments within a
few standard errors, the normal's mass per ziggurat layer on 10^7 draws); determinism
and split invariance; the numba forms (``*_step``, ``next_*``) against the fill kernel;
independence of neighbouring keyed streams; input errors.
"""

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
from scipy import stats as sps
from twins import PyStream

from uqx.engine import generators as G
from uqx.engine.resample import seed_sequence, xoshiro_state
from uqx.errors import InputError

N = 10**6
P_MIN = 1e-3  # fixed seeds: a pass is reproducible; a real defect gives p ~ 0 at 10^6

# ---------------------------------------------------------------- pure-Python twin
# PyStream: the xoshiro256** twin shared with test_resample (tests/twins.py)


def _signed53(x):
    """Arithmetic shift of the 64-bit word read as a signed integer: [-2^52, 2^52)."""
    return (x - (1 << 64) if x >> 63 else x) >> 11


def py_tables(r, n=256):
    """Ziggurat of f(x) = exp(-x^2/2): n layers of area v, written from the paper."""
    f = lambda x: math.exp(-0.5 * x * x)  # noqa: E731
    v = r * f(r) + math.sqrt(0.5 * math.pi) * math.erfc(r / math.sqrt(2.0))
    X = [v / f(r), r]
    while len(X) < n:
        X.append(math.sqrt(-2.0 * math.log(v / X[-1] + f(X[-1]))))
    X.append(0.0)
    F = [f(x) for x in X]
    K = [math.floor(2.0**52 * (X[i + 1] / X[i])) for i in range(n)]
    W = [X[i] * 2.0**-52 for i in range(n)]
    return v, X, F, K, W


class PyGen:
    """The generators of uqx.engine.generators, line by line, on a PyStream (and path counts)."""

    def __init__(self, state):
        self.st = PyStream(state)
        self.r = G._ZIG_R
        self.v, self.X, self.F, self.K, self.W = py_tables(self.r)
        self.paths = {"wedge": 0, "tail": 0, "log": 0, "neg": 0}

    def uniform01(self):
        return self.st.u01()

    def open01(self):
        return 1.0 - self.st.u01()

    def normal(self):
        while True:
            x = self.st.next()
            i = x & 0xFF
            j = _signed53(x)
            z = float(j) * self.W[i]
            if abs(j) < self.K[i]:
                return z
            if i == 0:
                self.paths["tail"] += 1
                while True:
                    xt = -math.log(self.open01()) * (1.0 / self.r)
                    yt = -math.log(self.open01())
                    if yt + yt > xt * xt:
                        break
                return -(self.r + xt) if j < 0 else self.r + xt
            self.paths["wedge"] += 1
            u = self.st.u01()
            if self.F[i] + u * (self.F[i + 1] - self.F[i]) < math.exp(-0.5 * z * z):
                return z

    def _mt(self, d, c):
        e = 0.75 * d * (c * c) * (c * c)
        while True:
            z = self.normal()
            w = 1.0 + c * z
            if w <= 0.0:
                self.paths["neg"] += 1
                continue
            v = w * w * w
            u = self.open01()
            m = min(w, 1.0)
            if u * m < m - e * ((z * z) * (z * z)):
                return v
            self.paths["log"] += 1
            if math.log(u) < 0.5 * (z * z) + d * (1.0 - v + math.log(v)):
                return v

    def gamma(self, a):
        d = a - 1.0 / 3.0 if a >= 1.0 else a + 1.0 - 1.0 / 3.0
        g = d * self._mt(d, 1.0 / math.sqrt(9.0 * d))
        if a < 1.0:
            g *= math.exp(math.log(self.open01()) * (1.0 / a))
        return g

    def invgamma(self, a):
        return 1.0 / self.gamma(a)

    def chisquare(self, k):
        return 2.0 * self.gamma(0.5 * k)

    def t(self, nu):
        z = self.normal()
        if math.isinf(nu):
            return z
        d = 0.5 * nu - 1.0 / 3.0
        v = self._mt(d, 1.0 / math.sqrt(9.0 * d))
        return z * math.sqrt((nu - 2.0) / (2.0 * d) / v)

    def laplace(self):
        x = self.st.next()
        e = -math.log(1.0 - float(x >> 11) * 2.0**-53) * (1.0 / math.sqrt(2.0))
        return -e if x & 1 else e

    def uniform(self):
        j = _signed53(self.st.next())
        return (float(j) + 0.5) * (math.sqrt(3.0) * 2.0**-52)


CASES = [
    ("uniform01", {}, "uniform01", ()),
    ("normal", {}, "normal", ()),
    ("gamma", {"shape": 2.5}, "gamma", (2.5,)),
    ("gamma", {"shape": 1.0}, "gamma", (1.0,)),
    ("gamma", {"shape": 0.3}, "gamma", (0.3,)),
    ("invgamma", {"shape": 3.0}, "invgamma", (3.0,)),
    ("chisquare", {"nu": 3.0}, "chisquare", (3.0,)),
    ("t", {"nu": 3.0}, "t", (3.0,)),
    ("t", {"nu": 10.0}, "t", (10.0,)),
    ("t", {"nu": np.inf}, "t", (np.inf,)),
    ("laplace", {}, "laplace", ()),
    ("uniform", {}, "uniform", ()),
]


def _case_id(dist, kw):
    return dist + "".join(f"-{k}{v:g}" for k, v in kw.items())


def _bits(a):
    return np.asarray(a, np.float64).view(np.uint64)


def test_tables_match_paper_and_twin():
    # Marsaglia & Tsang (2000) / NumPy: r = 3.6541528853610088 for 256 layers
    assert G._ZIG_R == pytest.approx(3.6541528853610088, rel=1e-15)
    v, X, F, K, W = py_tables(G._ZIG_R)
    assert np.array_equal(_bits(X), _bits(G._ZIG_X))
    assert np.array_equal(_bits(F), _bits(G._ZIG_F))
    assert np.array_equal(np.array(K), G._ZIG_K)
    assert np.array_equal(_bits(W), _bits(G._ZIG_W))
    # every layer has the area v; the base strip is the rectangle under f(r) plus the tail
    X, F = np.array(X), np.array(F)
    areas = X[1:-1] * (F[2:] - F[1:-1])
    assert np.allclose(areas, v, rtol=1e-9, atol=0)
    assert X[0] * F[1] == pytest.approx(v, rel=1e-15)
    assert X[-1] == 0.0 and F[-1] == 1.0 and K[-1] == 0
    # the ziggurat covers the half-density (area sqrt(pi/2)) with 0.7 % to spare, and the
    # inner rectangles (accepted without a test) hold 98.5 % of the draws
    assert math.sqrt(0.5 * math.pi) / (256 * v) == pytest.approx(0.99332, abs=1e-5)
    assert np.mean(np.array(K) / 2.0**52) == pytest.approx(0.98508, abs=1e-5)


@pytest.mark.parametrize("dist, kw, method, args", CASES,
                         ids=[_case_id(c[0], c[1]) for c in CASES])
def test_python_twin_bit_identical(dist, kw, method, args):
    ss = seed_sequence(2026, "twin", dist, len(args) and args[0])
    n = 400
    got = G.draw(ss, n, dist, **kw)
    twin = PyGen(xoshiro_state(ss))
    ref = [getattr(twin, method)(*args) for _ in range(n)]
    assert np.array_equal(_bits(got), _bits(ref))


def test_python_twin_normal_rare_paths():
    """Enough normal draws that the wedges, the tail and the gamma logarithm all run."""
    ss = seed_sequence(7, "rare paths")
    n = 20_000
    got = G.draw(ss, n, "normal")
    twin = PyGen(xoshiro_state(ss))
    ref = [twin.normal() for _ in range(n)]
    assert np.array_equal(_bits(got), _bits(ref))
    assert twin.paths["tail"] > 0 and twin.paths["wedge"] > 100
    assert np.abs(got).max() > G._ZIG_R  # a tail draw came back
    ss = seed_sequence(7, "rare gamma")
    got = G.draw(ss, 3000, "gamma", shape=1.0)
    twin = PyGen(xoshiro_state(ss))
    ref = [twin.gamma(1.0) for _ in range(3000)]
    assert np.array_equal(_bits(got), _bits(ref))
    assert twin.paths["log"] > 10 and twin.paths["neg"] > 0


@pytest.mark.parametrize("d", [2.0 / 3.0, 1.0, 7.0 / 6.0, 13.0 / 6.0, 20.0, 1e4])
def test_gamma_squeeze_lies_under_the_acceptance_curve(d):
    """The squeeze 1 - 0.75 d tau^4 / min(w, 1) <= exp(d phi(w)) on a grid of w in (0, 4]:
    every variate it accepts, the exact Marsaglia-Tsang test accepts."""
    w = np.concatenate([np.geomspace(1e-6, 1.0, 4000), np.linspace(1.0, 4.0, 4000)])
    tau = np.abs(w - 1.0)
    phi = 4.5 * tau**2 + 1.0 - w**3 + 3.0 * np.log(w)
    squeeze = 1.0 - 0.75 * d * tau**4 / np.minimum(w, 1.0)
    assert np.all(squeeze <= np.exp(d * phi) * (1 + 1e-12) + 1e-15)
    # and few draws get past it to the logarithms: P = E_Z[1 - clip(squeeze, 0, 1)]
    # (Z normal, w = 1 + cZ > 0), against E[min(1, 0.0331 Z^4)] = 0.083 for the paper's
    c = 1.0 / math.sqrt(9.0 * d)
    z = np.linspace(-8.0, 8.0, 160_001)
    dens = sps.norm.pdf(z) * (z[1] - z[0])
    w = 1.0 + c * z
    ok = w > 0
    tau = np.abs(w[ok] - 1.0)
    sq = np.clip(1.0 - 0.75 * d * tau**4 / np.minimum(w[ok], 1.0), 0.0, 1.0)
    p_log = np.sum(dens[ok] * (1.0 - sq)) / np.sum(dens[ok])
    p_paper = np.sum(dens * np.minimum(1.0, 0.0331 * z**4))
    assert p_paper == pytest.approx(0.0828, abs=1e-3)
    assert p_log < {2.0 / 3.0: 0.065, 1.0: 0.045}.get(d, 0.039)
    if d >= 13.0 / 6.0:
        assert p_log < 0.25 * p_paper


# ------------------------------------------------------------ distributions (scipy)
_S = {"t3": math.sqrt(1.0 / 3.0), "t5": math.sqrt(3.0 / 5.0), "t10": math.sqrt(8.0 / 10.0)}
DISTS = [
    ("uniform01", {}, sps.uniform()),
    ("normal", {}, sps.norm()),
    ("gamma", {"shape": 0.5}, sps.gamma(0.5)),
    ("gamma", {"shape": 1.5}, sps.gamma(1.5)),
    ("gamma", {"shape": 7.0}, sps.gamma(7.0)),
    ("invgamma", {"shape": 3.0}, sps.invgamma(3.0)),
    ("chisquare", {"nu": 5.0}, sps.chi2(5.0)),
    ("t", {"nu": 3.0}, sps.t(3.0, scale=_S["t3"])),
    ("t", {"nu": 5.0}, sps.t(5.0, scale=_S["t5"])),
    ("t", {"nu": 10.0}, sps.t(10.0, scale=_S["t10"])),
    ("laplace", {}, sps.laplace(scale=1.0 / math.sqrt(2.0))),
    ("uniform", {}, sps.uniform(loc=-math.sqrt(3.0), scale=2.0 * math.sqrt(3.0))),
]


def _gamma_raw(a, k):
    """E X^k of Gamma(a): a (a+1) ... (a+k-1) (exact, a a Fraction)."""
    return math.prod((a + i for i in range(k)), start=Fraction(1))


def _central(raw, k):
    """k-th central moment from exact raw moments raw[1..k] (binomial expansion)."""
    mu = raw[1]
    return sum(math.comb(k, i) * raw[i] * (-mu) ** (k - i) for i in range(k + 1))


def ref_moments(dist, kw):
    """(mean, var, mu4, mu8) in closed form, central; inf where the moment diverges."""
    inf = math.inf
    if dist in ("gamma", "chisquare"):
        a = Fraction(kw["shape"]) if dist == "gamma" else Fraction(kw["nu"]) / 2
        s = 1 if dist == "gamma" else 2
        raw = [s**k * _gamma_raw(a, k) for k in range(9)]
    elif dist == "invgamma":
        a = Fraction(kw["shape"])
        raw = [1 / math.prod((a - i for i in range(1, k + 1)), start=Fraction(1))
               if k < a else inf for k in range(9)]
        return float(raw[1]), float(raw[2] - raw[1] ** 2), inf, inf
    elif dist == "uniform01":
        raw = [Fraction(1, k + 1) for k in range(9)]
    else:  # symmetric, unit variance: even moments
        if dist == "normal":
            m = {4: 3.0, 8: 105.0}
        elif dist == "uniform":  # a^k/(k+1), a = sqrt(3)
            m = {4: 9.0 / 5.0, 8: 81.0 / 9.0}
        elif dist == "laplace":  # k! b^k, b^2 = 1/2
            m = {4: 24.0 / 4.0, 8: 40320.0 / 16.0}
        else:  # t_s(nu): E T^2m = nu^m prod (2i-1)/(nu-2i), times ((nu-2)/nu)^m
            nu = kw["nu"]
            m = {}
            for k in (4, 8):
                ok = nu > k
                m[k] = (math.prod((2 * i - 1) * (nu - 2) / (nu - 2 * i)
                                  for i in range(1, k // 2 + 1)) if ok else inf)
        return 0.0, 1.0, m[4], m[8]
    return (float(raw[1]), float(_central(raw, 2)), float(_central(raw, 4)),
            float(_central(raw, 8)))


def _moment_checks(x, dist, kw):
    """Mean, variance and (where the 8th moment is finite) kurtosis within 6 standard errors.

    Standard errors from the closed-form central moments: mean sqrt(var/n), variance
    sqrt((mu4 - var^2)/n), kurtosis ~ sqrt((mu8 - mu4^2)/n)/var^2.
    """
    n = x.size
    mu, var, mu4, mu8 = ref_moments(dist, kw)
    checked = ["mean"]
    assert abs(x.mean() - mu) < 6 * math.sqrt(var / n)
    if np.isfinite(mu4):
        assert abs(x.var() - var) < 6 * math.sqrt((mu4 - var**2) / n)
        checked.append("var")
    if np.isfinite(mu8):
        d = x - x.mean()
        d2 = d * d
        kurt = np.mean(d2 * d2) / np.mean(d2) ** 2
        assert abs(kurt - mu4 / var**2) < 6 * math.sqrt((mu8 - mu4**2) / n) / var**2
        checked.append("kurtosis")
    return checked


def test_reference_moments_agree_with_scipy():
    """The closed forms above against scipy's moments (where scipy has them in closed form)."""
    for dist, kw, ref in DISTS:
        mu, var, mu4, _ = ref_moments(dist, kw)
        assert mu == pytest.approx(float(ref.mean()), rel=1e-12, abs=1e-15)
        assert var == pytest.approx(float(ref.var()), rel=1e-12)
        if np.isfinite(mu4):
            kurt = float(ref.stats(moments="k")) + 3.0
            assert mu4 / var**2 == pytest.approx(kurt, rel=1e-10)


@pytest.mark.parametrize("dist, kw, ref", DISTS, ids=[_case_id(c[0], c[1]) for c in DISTS])
def test_distribution_against_scipy(dist, kw, ref):
    x = G.draw(seed_sequence(11, "ks", dist, kw.get("nu", kw.get("shape", 0))), N, dist, **kw)
    assert np.isfinite(x).all()
    ks = sps.kstest(x, ref.cdf)
    cvm = sps.cramervonmises(x, ref.cdf)
    assert ks.pvalue > P_MIN, ks
    assert cvm.pvalue > P_MIN, cvm
    checked = _moment_checks(x, dist, kw)
    if dist in ("normal", "gamma", "chisquare", "laplace", "uniform") or kw.get("nu") == 10.0:
        assert "kurtosis" in checked


def test_normal_mass_per_ziggurat_layer():
    """10^7 normals: |z| per layer interval [X_{i+1}, X_i) and the tail against Phi (chi-square)."""
    z = np.abs(G.draw(seed_sequence(12, "layers"), 10**7, "normal"))
    edges = np.concatenate([G._ZIG_X[1:][::-1], [np.inf]])  # 0 = X_256 < ... < X_1 = r < inf
    counts = np.histogram(z, bins=edges)[0]
    p = np.diff(2.0 * sps.norm.cdf(edges) - 1.0)
    res = sps.chisquare(counts, p * z.size)
    assert res.pvalue > P_MIN, res
    # the tail beyond r is about 258 per 10^6; its own binomial test
    tail = sps.binomtest(int(counts[-1]), z.size, p[-1])
    assert tail.pvalue > P_MIN


# -------------------------------------------------------- determinism and splitting
@pytest.mark.parametrize("dist, kw, method, args", CASES[:2] + CASES[4:5] + CASES[7:8],
                         ids=["uniform01", "normal", "gamma0.3", "t3"])
def test_same_seed_same_bits_and_split_invariance(dist, kw, method, args):
    ss = seed_sequence(5, "split", 3)
    whole = G.draw(ss, 1000, dist, **kw)
    assert np.array_equal(_bits(whole), _bits(G.draw(seed_sequence(5, "split", 3), 1000,
                                                     dist, **kw)))
    st = G.stream_state(ss)
    parts = [G.draw(st, k, dist, **kw) for k in (1, 0, 7, 300, 192, 500)]
    assert np.array_equal(_bits(np.concatenate(parts)), _bits(whole))
    other = G.draw(seed_sequence(5, "split", 4), 1000, dist, **kw)
    assert not np.array_equal(other, whole)


def test_shapes_and_fill():
    ss = seed_sequence(1, "shape")
    a = G.draw(ss, (3, 4, 5), "t", nu=4.0)
    assert a.shape == (3, 4, 5)
    assert np.array_equal(a.ravel(), G.draw(ss, 60, "t", nu=4.0))
    out = np.empty((6, 10))
    assert G.fill(ss, out, "t", nu=4.0) is out
    assert np.array_equal(out.ravel(), a.ravel())


def test_t_inf_is_the_normal_stream():
    ss = seed_sequence(3, "inf")
    assert np.array_equal(G.draw(ss, 500, "t", nu=np.inf), G.draw(ss, 500, "normal"))


# ------------------------------------------------------------------ the numba forms
@numba.njit(cache=True)
def _kernel_next(state, out, nu, shape):
    """Uses every state-in-array generator in turn (as a consumer kernel would)."""
    for k in range(out.shape[1]):
        out[0, k] = G.next_uniform(state)
        out[1, k] = G.next_normal(state)
        out[2, k] = G.next_gamma(state, shape)
        out[3, k] = G.next_invgamma(state, shape)
        out[4, k] = G.next_chisquare(state, nu)
        out[5, k] = G.next_t(state, nu)
        out[6, k] = G.next_laplace(state)
        out[7, k] = G.next_unit_uniform(state)


@pytest.mark.parametrize("shape", [0.7, 2.0])
def test_numba_forms_match_the_twin(shape):
    """The state-in-array forms, interleaved in one kernel; the register forms (``*_step``
    with ``gamma_params``/``t_params``) are what :func:`G.fill` runs, checked above."""
    nu = 5.0
    ss = seed_sequence(9, "forms", shape)
    a = np.empty((8, 50))
    st_a = G.stream_state(ss)
    _kernel_next(st_a, a, nu, shape)
    twin = PyGen(xoshiro_state(ss))
    ref = np.empty((8, 50))
    for k in range(50):
        ref[:, k] = [twin.uniform01(), twin.normal(), twin.gamma(shape), twin.invgamma(shape),
                     twin.chisquare(nu), twin.t(nu), twin.laplace(), twin.uniform()]
    assert np.array_equal(_bits(a), _bits(ref))
    # the state continues where the draws stopped: the next output is the twin's next
    assert G.draw(st_a, 1, "uniform01")[0] == twin.uniform01()


# ------------------------------------------------------------- keyed independence
@pytest.mark.parametrize("dist, kw", [("normal", {}), ("t", {"nu": 3.0}),
                                      ("gamma", {"shape": 0.5}), ("uniform01", {})])
def test_neighbouring_keyed_streams_uncorrelated(dist, kw):
    n = 200_000
    xs = [G.draw(np.random.SeedSequence(42, spawn_key=(k,)), n, dist, **kw) for k in range(4)]
    for k in range(3):
        for a, b in ((xs[k], xs[k + 1]), (xs[k][1:], xs[k + 1][:-1])):  # also lagged by one
            r = sps.spearmanr(a, b).statistic  # rank correlation: heavy tails welcome
            assert abs(r) < 5.0 / math.sqrt(n), (k, r)


# ------------------------------------------------------------------- input errors
@pytest.mark.parametrize("kw", [
    {"dist": "cauchy"},
    {"dist": "t"},
    {"dist": "t", "nu": 2.0},
    {"dist": "gamma"},
    {"dist": "gamma", "shape": 0.0},
    {"dist": "invgamma", "shape": -1.0},
    {"dist": "chisquare", "nu": np.inf},
])
def test_bad_parameters(kw):
    with pytest.raises(InputError):
        G.draw(seed_sequence(0), 3, **kw)


def test_bad_sources_and_outputs():
    with pytest.raises(InputError, match="state"):
        G.draw(np.zeros(4, np.int64), 3)
    with pytest.raises(InputError, match="float64"):
        G.fill(seed_sequence(0), np.empty(3, np.float32))
    with pytest.raises(InputError, match="contiguous"):
        G.fill(seed_sequence(0), np.empty((4, 4))[:, ::2])
