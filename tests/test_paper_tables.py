"""Statistical parity with the published tables on the nine literature sets.

* 001 Table IV (= 004 Table 2): ZMS and RCE, BCa intervals (nptest, R = 10⁴) and ζ —
  point estimates to the printed digits of methods: the papers, interval limits within
  ±0.01 (±0.03 for the Set 7 RCE lower limit) and ζ within ±0.1 of the papers
* 000 Tables A1–A4: simulated references θ̃_N and θ̃_T6 of ZMS, CC, ENCE and ZMSE
  (N = 20 bins) within |Δ| ≤ 4·√(u_ours² + u_pub²) + half a unit of the last published
  digit (= 4·√2·u for N_MC = 10⁴; CC at N_MC_CC in ``make test``, every statistic at
  10⁴ in ``make test-slow``), θ_est of ENCE/ZMSE vs the papers, and the ζ_Sim2 check of
  Table A3 Set 1 ENCE.
* ``uqx validate --paper-sets`` smoke test.

Needs the literature data (``UQX_DATA_DIR``); skipped otherwise.
"""

import numpy as np
import pytest

import uqx
from uqx.cli import main
from uqx.dataio.datasets import load_paper_sets
from uqx.engine.verdict import zeta_se
from uqx.text.tables import paper_table_a, paper_table_iv
from uqx.workflow.validation import validate

pytestmark = pytest.mark.data


def half_unit(text: str) -> float:
    """Half a unit of the last printed digit of a decimal number given as text."""
    frac = text.split(".")[1] if "." in text else ""
    return 0.5 * 10.0 ** (-len(frac))


def half_unit_sig(text: str, sig: int) -> float:
    """Half a unit of the ``sig``-th significant digit of a printed number."""
    return 0.5 * 10.0 ** (np.floor(np.log10(abs(float(text)))) - sig + 1)


def close_to_printed(value: float, text: str, sig: int | None = None) -> bool:
    tol = half_unit(text) if sig is None else half_unit_sig(text, sig)
    return abs(value - float(text)) <= tol * (1 + 1e-9)


# ------------------------------------------------------------------ oracles (methods: the papers)

# published: ZMS and RCE of Sets 1–9 (R, printed digits)
ZMS_141 = ["0.9600940", "0.8845161", "1.119099", "1.226135", "0.8464979", "0.9838740",
           "0.9720056", "0.9256963", "0.9710800"]
RCE_141 = ["0.0185517", "-0.03867108", "-0.007484305", "0.05454818", "0.09864907",
           "0.09235399", "-0.2644578", "0.04590263", "-0.0131247"]
CC_141 = ["0.5028936", "0.6199822", "0.2575537", "0.4006499", "0.03786541", "0.4036108",
          "0.3125928", "-0.02496375", "0.2338776"]

# published: 2024_RCE scores.Rda — ZMS lo, up, ζ, RCE lo, up, ζ
TABLE_IV = np.array([
    [0.8647, 1.1059, -0.274, -0.02135, 0.05506, 0.465],
    [0.8009, 0.99987, -1.001, -0.10920, 0.01921, -0.668],
    [1.0490, 1.1988, 1.698, -0.05257, 0.04143, -0.153],
    [1.1600, 1.3010, 3.417, 0.000706, 0.12534, 1.013],
    [0.7764, 0.9288, -1.865, 0.05761, 0.13660, 2.404],
    [0.8499, 1.1433, -0.101, 0.002738, 0.16197, 1.031],
    [0.9364, 1.0124, -0.694, -0.68769, -0.002810, -1.011],
    [0.8695, 0.9898, -1.159, 0.008466, 0.07713, 1.226],
    [0.9032, 1.0802, -0.265, -0.07381, 0.02564, -0.339],
])

# published: θ_est at N = 20 equal-count bins (= θ_est columns of 000 Tables A3–A4). The
# ENCE column is printed with 5 significant digits padded with zeros to 6 decimals
# (0.120000 is 0.12000, 0.125110 is 0.12511): compared at 5 significant digits.
ENCE_142 = ["0.125110", "0.126420", "0.096897", "0.134770", "0.130540", "0.243790",
            "0.066247", "0.108420", "0.120000"]
ZMSE_142 = ["0.25544", "0.27341", "0.17295", "0.24729", "0.28283", "0.35614", "0.11813",
            "0.22509", "0.25012"]

# published: simulated references of 000 Tables A1–A4 (N_MC = 10⁴), as printed
SIM_REF = {
    "zms": {"N": ["1.00"] * 9, "T6": ["1.00"] * 9},
    "cc": {
        "N": ["0.40", "0.57", "0.25", "0.42", "0.11", "0.50", "0.37", "0.11", "0.13"],
        "T6": ["0.38", "0.55", "0.23", "0.40", "0.10", "0.48", "0.35", "0.10", "0.12"],
    },
    "ence": {
        "N": ["0.056", "0.041", "0.058", "0.043", "0.056", "0.045", "0.026", "0.036", "0.036"],
        "T6": ["0.082", "0.061", "0.083", "0.063", "0.082", "0.066", "0.038", "0.053", "0.054"],
    },
    "zmse": {
        "N": ["0.112", "0.082", "0.112", "0.082", "0.112", "0.082", "0.043", "0.071", "0.071"],
        "T6": ["0.164", "0.121", "0.163", "0.121", "0.163", "0.121", "0.066", "0.107", "0.107"],
    },
}

# N_MC of the paper (10⁴ draws for each of N and T6). Table A is validated without the
# resolutions (the power under alternatives, which it does not hold: with them the run
# takes 3× longer, every other variable bit-identical). The tolerance is written for any
# N_MC: u_ours is this run's Monte-Carlo standard error and the published one is taken as
# u_ours·√(N_MC/10⁴), so 4·√(u_ours² + u_pub²) is the bound 4·√2·u at N_MC = 10⁴. ZMS,
# ENCE and ZMSE run at the paper's N_MC; CC, one argsort of M per copy (3/4 of the run at
# 10⁴), at N_MC_CC: its references are printed to 2 decimals, so the bound grows from
# 0.006 to 0.007, below the 0.01-0.02 between its N and T6 references. The slow tests
# repeat the whole check at the paper's N_MC, this seed and two others.
N_MC_PAPER = 10_000
N_MC_CC = 2_500


@pytest.fixture(scope="module")
def paper_sets(data_dir):
    return load_paper_sets(data_dir)


# ------------------------------------------------------------------ 001 Table IV


@pytest.fixture(scope="module")
def table_iv(paper_sets):
    return validate(paper_sets, ["zms", "rce"], bootstrap=10_000,
                    binning=uqx.Binning(ties="file-order"), conditional=False,
                    compute=uqx.Compute(seed=1))


def test_table_iv_point_estimates(table_iv):
    est_zms = table_iv["estimate"].sel(stat="zms").values
    est_rce = table_iv["estimate"].sel(stat="rce").values
    for i in range(9):
        assert close_to_printed(est_zms[i], ZMS_141[i]), (i + 1, est_zms[i], ZMS_141[i])
        assert close_to_printed(est_rce[i], RCE_141[i]), (i + 1, est_rce[i], RCE_141[i])
    np.testing.assert_array_equal(table_iv["M"].values,
                                  [2040, 3834, 2040, 3836, 2040, 3818, 13885, 5000, 5000])


def test_table_iv_intervals(table_iv):
    got = np.column_stack([
        table_iv["ci_low"].sel(stat="zms"), table_iv["ci_high"].sel(stat="zms"),
        table_iv["ci_low"].sel(stat="rce"), table_iv["ci_high"].sel(stat="rce"),
    ])
    want = TABLE_IV[:, [0, 1, 3, 4]]
    tol = np.full_like(want, 0.01)
    tol[6, 2] = 0.03  # Set 7 RCE lower limit (heavy tails: large MC spread)
    # Set 6 ZMS upper limit (kappa_CS(Z^2) = 24): over 12 seeds uqx gives 1.1497 +- 0.0031
    # and scipy.stats.bootstrap BCa 1.145-1.152 (4 seeds); the published 1.1433 is one R
    # draw ~2 sd below, so the difference of two runs needs 3*sqrt(2)*0.0031 ~ 0.013
    tol[5, 1] = 0.015
    bad = np.argwhere(np.abs(got - want) > tol)
    assert bad.size == 0, [(int(i) + 1, int(j), got[i, j], want[i, j]) for i, j in bad]


def test_table_iv_zeta(table_iv):
    # ζ within ±0.1, or within 3·√2 of uqx's own Monte-Carlo sd of ζ where that is larger
    # (two independent runs, R's and ours). ζ_ZMS of Set 4 (3.417 published) is the most
    # sensitive entry: ζ = (θ-1)/(θ-lo) with θ-lo ≈ 0.066, dζ/dlo ≈ 52, sd(lo) ≈ 0.0012 at
    # R = 10⁴, so sd(ζ) ≈ 0.066 (over 20 seeds uqx gave 3.37–3.61).
    z = np.column_stack([table_iv["zeta"].sel(stat="zms"), table_iv["zeta"].sel(stat="rce")])
    sd = np.column_stack([_zeta_sd(table_iv, "zms"), _zeta_sd(table_iv, "rce")])
    want = TABLE_IV[:, [2, 5]]
    tol = np.maximum(0.1, 3 * np.sqrt(2) * sd)
    bad = np.argwhere(np.abs(z - want) > tol)
    assert bad.size == 0, [(int(i) + 1, ("ZMS", "RCE")[j], z[i, j], want[i, j], tol[i, j])
                           for i, j in bad]
    # entries whose published |ζ| is within 0.05 of 1 (Set 2 ZMS, Sets 4/6/7 RCE, Set 8
    # ZMS at 1.16 is not) are those whose verdict can flip with the seed: uqx must flag
    # each of them "borderline" rather than give a plain verdict that contradicts the
    # paper's (a draw whose ζ lands more than 2 sd from 1, on the paper's side, is no
    # flip: Set 2 ZMS gives -1.07 against -1.001 published when the rows are in uE order)
    bl = np.column_stack([table_iv["zeta_borderline"].sel(stat="zms"),
                          table_iv["zeta_borderline"].sel(stat="rce")])
    near = np.abs(np.abs(want) - 1) < 0.05
    same_side = (np.abs(z) > 1) == (np.abs(want) > 1)
    ok = bl | same_side
    assert ok[near].all(), [(int(i) + 1, j) for i, j in np.argwhere(near & ~ok)]
    # validity decisions as in 001 (|ζ| ≤ 1) away from the boundary: the papers' rule,
    # kept as zeta_verdict
    v = table_iv["zeta_verdict"]
    for s in (1, 6, 7, 9):
        assert v.sel(stat="zms").values[s - 1] == "valid", s
    for s in (3, 4, 5, 8):
        assert v.sel(stat="zms").values[s - 1] == "invalid", s
    for s in (1, 2, 3, 9):
        assert v.sel(stat="rce").values[s - 1] == "valid", s
    for s in (5, 8):
        assert v.sel(stat="rce").values[s - 1] == "invalid", s
    # the Monte-Carlo verdicts reject what is far from calibration (|ζ| ≥ 1.7)
    for s in (3, 4, 5):
        assert table_iv["verdict"].sel(stat="zms").values[s - 1] == "invalid", s


def _zeta_sd(res, st):
    r = res.sel(stat=st)
    return zeta_se(r["estimate"].values, r["reference"].values, r["ci_low"].values,
                   r["ci_high"].values, r["ci_low_se"].values, r["ci_high_se"].values)


def test_table_iv_rendering(table_iv):
    t = paper_table_iv(table_iv)
    assert list(t.index) == list(table_iv["set"].values)
    assert t[("ZMS", "estimate")].iloc[0] == pytest.approx(0.96009, abs=1e-5)
    assert t[("RCE", "zeta")].iloc[4] == pytest.approx(2.404, abs=0.1)


# ------------------------------------------------------------------ 000 Tables A1–A4


def _run_table_a(paper_sets, n_mc, seed=1, stats=("zms", "cc", "ence", "zmse")):
    # resolution=False: the resolutions are not in Table A and leave every other variable
    # as it is (tests/test_verdict_claims.py::test_resolution_off_changes_no_verdict)
    return validate(paper_sets, list(stats), bootstrap=1000,
                    copies=uqx.Copies(n_mc=n_mc, simulate_all=True),
                    binning=uqx.Binning(bins=20, ties="file-order"), conditional=False,
                    decision=uqx.Decision(resolution=False), compute=uqx.Compute(seed=seed))


def _check_references(res, n_mc):
    bad = []
    for st, by_dist in SIM_REF.items():
        if st not in res["stat"].values:
            continue
        for dist, printed in by_dist.items():
            ref = res["sim_reference"].sel(stat=st, dist=dist).values
            u = res["sim_reference_se"].sel(stat=st, dist=dist).values
            u_pub = u * np.sqrt(n_mc / N_MC_PAPER)
            for i, text in enumerate(printed):
                tol = 4 * np.hypot(u[i], u_pub[i]) + half_unit(text)
                if not abs(ref[i] - float(text)) <= tol:
                    bad.append((st, dist, i + 1, ref[i], text, tol))
    assert not bad, bad


def _check_estimates(res):
    for st, printed, sig in (("ence", ENCE_142, 5), ("zmse", ZMSE_142, None),
                             ("zms", ZMS_141, None), ("cc", CC_141, None)):
        if st not in res["stat"].values:
            continue
        est = res["estimate"].sel(stat=st).values
        for i, text in enumerate(printed):
            assert close_to_printed(est[i], text, sig), (st, i + 1, est[i], text)


def _check_sim2_set1_ence(res):
    # 000 Table A3, Set 1 ENCE: q_97.5 ≈ 0.076, ζ_Sim2 = (0.125 - 0.056)/(0.076 - 0.056) ≈ 3.5
    x = res.sel(stat="ence", dist="N").isel(set=0)
    assert float(x["sim2_high"]) == pytest.approx(0.076, abs=0.001)
    assert float(x["zeta_sim2"]) == pytest.approx(3.5, abs=0.15)


@pytest.fixture(scope="module")
def table_a(paper_sets):
    return _run_table_a(paper_sets, N_MC_PAPER, stats=("zms", "ence", "zmse"))


@pytest.fixture(scope="module")
def table_a_cc(paper_sets):
    return _run_table_a(paper_sets, N_MC_CC, stats=("cc",))


def test_table_a_simulated_references(table_a, table_a_cc):
    _check_references(table_a, N_MC_PAPER)
    _check_references(table_a_cc, N_MC_CC)


def test_table_a_estimates(table_a, table_a_cc):
    _check_estimates(table_a)
    _check_estimates(table_a_cc)


def test_table_a_sim2_set1_ence(table_a):
    _check_sim2_set1_ence(table_a)


def test_table_a_verdicts_and_rendering(table_a, table_a_cc):
    # 000: CC, ENCE and ZMSE references depend on D for all nine sets (flag kept); the
    # papers' decision is valid / invalid only where both references agree (uqx.engine.verdict)
    for res, st in ((table_a_cc, "cc"), (table_a, "ence"), (table_a, "zmse")):
        assert res["d_sensitive"].sel(stat=st).values.all(), st
        r = res.sel(stat=st)
        z = r["zeta_sim"].values
        for i, v in enumerate(r["zeta_verdict"].values):
            if v == "valid":
                assert np.all(np.abs(z[i]) <= 1)
            elif v == "invalid":
                assert np.all(z[i] > 1) or np.all(z[i] < -1)
    # the simulated ZMS reference (Table A1) is compatible with 1 for both D
    zms = table_a.sel(stat="zms")
    assert np.all(np.abs(zms["sim_reference"].values - 1) < 4 * zms["sim_reference_se"].values)
    t = paper_table_a(table_a, "ence")
    assert t[("N", "ref")].iloc[0] == pytest.approx(0.056, abs=0.001)
    assert t[("T6", "ref")].iloc[0] == pytest.approx(0.082, abs=0.0015)
    assert np.isnan(t[("BS", "zeta_BS")]).all()
    assert (paper_table_a(table_a, "zms")[("BS", "reference")] == 1.0).all()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_table_a_at_the_papers_n_mc(paper_sets, seed):
    # every statistic at the paper's N_MC (CC too), and the default seed is not a lucky
    # one: the same bounds hold for other seeds
    res = _run_table_a(paper_sets, N_MC_PAPER, seed=seed)
    _check_references(res, N_MC_PAPER)
    _check_estimates(res)
    _check_sim2_set1_ence(res)


# ------------------------------------------------------------------ CLI smoke


def test_cli_paper_sets_smoke(capsys, data_dir):
    rc = main(["validate", "--paper-sets", "--data-dir", str(data_dir), "--n-boot", "200",
               "--n-mc", "20", "--seed", "1", "--no-conditional"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "Table IV" in out
    for st in ("ZMS", "CC", "ENCE", "ZMSE"):
        assert f"Table A ({st})" in out, st
    for name in ("Diffusion_RF", "QM9_E", "logP_150k_LS-GCN"):
        assert name in out
