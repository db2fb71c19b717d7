"""Peers' recalibrators, run in a throwaway environment that has them (not uqx's).

Called by ``bench_recalibrate.py --peers PYTHON`` as ``PYTHON _peers.py IN.npz OUT.npz``:
IN holds, per fit k, ``E_fit_k``, ``uE_fit_k`` and ``uE_apply_k``; OUT gets ``<peer>_k``,
the recalibrated uncertainties of the applied rows. Peers: uncertainty-toolbox's
``get_std_recalibrator`` (one factor, criteria ``ma_cal``, ``rms_cal``, ``miscal``) and
scikit-learn's ``IsotonicRegression`` of E^2 on uE^2 (the map of Busk et al. 2022), and
netcal's ``VarianceScaling`` (one factor, Levi et al. 2022) and ``GPNormal`` (a Gaussian
process over the recalibration of a normal, Küppers et al. 2022; default settings, on the
CPU, torch seeded), where installed. netcal's ``IsotonicRegression`` recalibrates the
cumulative distribution (Kuleshov et al. 2018), not a standard deviation, so it has no
Gaussian NLL to compare and is left out.
"""

import os
import sys
import warnings

import numpy as np


def main(src, dst):
    data = np.load(src)
    n = len([k for k in data.files if k.startswith("E_fit_")])
    out = {}
    try:
        import uncertainty_toolbox as uct
    except ImportError:
        uct = None
    try:
        from sklearn.isotonic import IsotonicRegression
    except ImportError:
        IsotonicRegression = None
    try:
        os.environ.setdefault("TQDM_DISABLE", "1")  # netcal's training bars
        import torch
        from netcal.regression import GPNormal, VarianceScaling

        torch.set_num_threads(1)  # one core: no oversubscription, the same result each run
    except ImportError:
        GPNormal = None
    for k in range(n):
        E, uE, ua = data[f"E_fit_{k}"], data[f"uE_fit_{k}"], data[f"uE_apply_{k}"]
        if uct is not None:
            for crit in ("ma_cal", "rms_cal", "miscal"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rec = uct.recalibration.get_std_recalibrator(
                        np.zeros_like(E), uE, E, criterion=crit)
                out[f"uct-{crit}_{k}"] = np.asarray(rec(ua), dtype=float)
        if IsotonicRegression is not None:
            iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0).fit(uE**2, E**2)
            v = iso.predict(ua**2)
            out[f"sklearn-isotonic_{k}"] = np.sqrt(np.maximum(v, v[v > 0].min()))
        if GPNormal is not None:
            zero, zero_a = np.zeros_like(E), np.zeros_like(ua)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                vs = VarianceScaling().fit((zero, uE), E)
                out[f"netcal-varscaling_{k}"] = np.asarray(vs.transform((zero_a, ua)),
                                                           dtype=float).ravel()
                torch.manual_seed(k)
                gp = GPNormal(use_cuda=False).fit((zero, uE), E)
                out[f"netcal-gpnormal_{k}"] = np.asarray(gp.transform((zero_a, ua)),
                                                         dtype=float).ravel()
    np.savez(dst, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
