"""``uqx fit``: distribution fits of u², E², Z², E and Z (:func:`uqx.inference.fits.fit_sets`)."""

from __future__ import annotations

import json
import warnings

from uqx.cli.commands._console import fmt, note, print_df
from uqx.cli.commands._inputs import load_inputs
from uqx.cli.commands._options import HelpFormatter, add_table_options

NAME = "fit"

#: Rows of the table output, in order (all keys of uqx.inference.fits.FIT_KEYS go to JSON).
TABLE_KEYS = (
    "ig_k", "ig_theta", "nu_u2", "nu_e2", "nu_z2", "nu_eff_e", "nu_eff_z",
    "bias_e", "bias_z", "rel_bias_e", "rel_bias_z",
)


def register(subparsers):
    """Add the ``fit`` command."""
    p = subparsers.add_parser(
        NAME,
        help="distribution fits (IG of u^2, scaled F of E^2 and Z^2, Student t of E and Z)",
        description="Fit u^2 by an inverse gamma law (MLE: 000 Table II k, theta; min-KS: "
        "001 Table I nu(u^2)), E^2 and Z^2 by scaled F(1, nu) laws (min-KS: 001 Table I) "
        "and E, Z by scaled and shifted Student t laws (MLE: 000 Table III nu_eff, bias).",
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="SET",
        help="CSV file or registered dataset name (e.g. QM9_E, Set7; see 'uqx datasets list')",
    )
    p.add_argument("--E", default="E", help="CSV column of errors (reference - prediction)")
    p.add_argument("--uE", default="uE", help="CSV column of uncertainties")
    p.add_argument(
        "--uE-is-variance", action="store_true", help="the uE column holds variances"
    )
    p.add_argument(
        "--drop-nonfinite",
        action="store_true",
        help="drop (and count) rows with NaN/inf instead of failing",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="literature data directory (else $UQX_DATA_DIR, else the repository's data/)",
    )
    p.add_argument(
        "--optimizer",
        default="nmmin",
        choices=["nmmin", "scipy"],
        help="Nelder-Mead variant: port of R's optim (the papers' numbers) or scipy's, "
        "iterated to full convergence",
    )
    add_table_options(p)
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    return p


def fit_records(res, sizes, dropped=None) -> list[dict]:
    """JSON records of :func:`uqx.inference.fits.fit_sets` output, one per set.

    Parameters
    ----------
    res : xarray.Dataset
        The fits, over ``set``.
    sizes : sequence of int
        Rows fitted per set (``M``).
    dropped : sequence of int, optional
        Rows dropped per set (``--drop-nonfinite``), recorded as ``dropped``.

    Returns
    -------
    list of dict
        ``{"dataset", "M", "dropped", <fit keys>}`` per set.
    """
    import numpy as np

    recs = []
    for i, name in enumerate(res["set"].values):
        rec = {"dataset": str(name), "M": int(sizes[i])}
        if dropped is not None:
            rec["dropped"] = int(dropped[i])
        for key in res.data_vars:
            v = float(res[key].values[i])
            rec[str(key)] = v if np.isfinite(v) else None
        recs.append(rec)
    return recs


def run(args) -> int:
    """Fit every input and print a table (rows: parameters) or JSON records."""
    import numpy as np
    import pandas as pd

    from uqx.inference.fits import fit_sets

    ds = load_inputs(
        args.inputs,
        E=args.E,
        uE=args.uE,
        data_dir=args.data_dir,
        uE_is_variance=args.uE_is_variance,
        drop_nonfinite=args.drop_nonfinite,
        sep=args.sep,
        comment=args.comment,
        decimal=args.decimal,
    )
    with warnings.catch_warnings():  # the notes are printed below, as uqx notes
        warnings.simplefilter("ignore", UserWarning)
        res = fit_sets(ds, optimizer=args.optimizer)
    for text in filter(None, str(res.attrs.get("notes", "")).split("\n")):
        note(args, f"uqx: warning: {text}")
    dropped = (ds["n_dropped"].values if "n_dropped" in ds
               else np.zeros(ds.sizes.get("set", 1), dtype=int))
    dropped = np.atleast_1d(dropped).astype(int)
    if args.drop_nonfinite:
        for name, n in zip(res["set"].values, dropped, strict=True):
            note(args, f"note: {name}: {int(n)} row(s) with NaN/inf dropped "
                 "(--drop-nonfinite)")
    if args.format == "json":
        print(json.dumps(fit_records(res, ds["M"].values, dropped), indent=1))
        return 0
    table = pd.DataFrame({k: res[k].to_pandas() for k in TABLE_KEYS}).T.map(fmt)
    table.columns = [str(c) for c in table.columns]
    head = pd.DataFrame([np.atleast_1d(ds["M"].values).astype(int), dropped],
                        index=["M", "dropped"], columns=table.columns)
    table = pd.concat([head.astype(str), table])
    print(f"# distribution fits (methods: distribution fits), Nelder-Mead '{args.optimizer}'")
    print_df(table)
    return 0
