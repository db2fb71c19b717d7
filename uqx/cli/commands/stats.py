"""``uqx stats``: statistics and tailedness of data sets (:func:`uqx.describe`)."""

from __future__ import annotations

import json

from uqx.cli.commands._console import fmt, note, print_df
from uqx.cli.commands._inputs import input_kwargs, load_inputs
from uqx.cli.commands._options import HelpFormatter, add_inputs, bins_chosen
from uqx.engine.defaults import POP_MIN
from uqx.errors import InputError
from uqx.progress import progress_bar

NAME = "stats"


def register(subparsers):
    """Add the ``stats`` command."""
    p = subparsers.add_parser(
        NAME,
        help="statistics and tailedness of data sets",
        description="Point estimates of every statistic (ZMS, RCE, CC, ENCE, ZMSE, ...) and "
        "the tailedness metrics of paper 001 for each input.",
        formatter_class=HelpFormatter,
    )
    add_inputs(p)
    p.add_argument(
        "--ties", default="content", choices=["content", "file-order"],
        help="how rows with equal uE (or X, V) are split between bins, as in 'uqx "
        "validate': 'content' (by a hash of each row: the numbers do not depend on the "
        "order of the rows) or 'file-order' (the papers' R convention); without ties both "
        "give the same numbers")
    return p


def stats_records(desc) -> list[dict]:
    """JSON records of :func:`uqx.describe` output (``uqx stats --format json``)."""
    from uqx.workflow.validation import TAILEDNESS_VARS

    recs = []
    for s in desc["set"].values:
        d = desc.sel(set=s)
        recs.append(
            {
                "dataset": str(s),
                "M": int(d["M"].item()),
                "dropped": int(d["n_dropped"].item()),
                "stats": {str(k): _num(d["estimate"].sel(stat=k)) for k in desc["stat"].values},
                "tailedness": {k: _num(d[k]) for k in TAILEDNESS_VARS},
            }
        )
    return recs


def bins_used_text(ds, args) -> str:
    """Say which bins the binned statistics used: ``"10 equal-count bins of uE"``.

    The bins actually used (fewer than ``--bins`` when a bin would hold fewer than
    :data:`uqx.engine.defaults.POP_MIN` points); when the user chose ``--bins`` and fewer
    were used, a note says so on stderr.

    Parameters
    ----------
    ds : xarray.Dataset
        The stacked inputs.
    args : argparse.Namespace
        Parsed arguments (``bins``, ``binning``).

    Returns
    -------
    str
        The bins per set (one number when all sets agree).
    """
    from uqx.dataio.model import iter_sets
    from uqx.engine.binning import make_bins

    used = {}
    for sd in iter_sets(ds):
        try:
            used[sd.name] = make_bins(sd.uE, args.bins, scheme=args.binning,
                                      pop_min=POP_MIN).n_bins
        except InputError:
            used[sd.name] = 0
        if bins_chosen(args) and 0 < used[sd.name] < args.bins:
            note(args, f"note: {sd.name}: {args.bins} bins requested, {used[sd.name]} used: "
                 f"at least {POP_MIN} points per bin (M = {sd.M})")
    counts = sorted(set(used.values()))
    if len(counts) == 1:
        return f"{counts[0]} {args.binning} bin{'' if counts[0] == 1 else 's'} of uE"
    return f"{args.binning} bins of uE: " + ", ".join(f"{k} {v}" for k, v in used.items())


def _num(v):
    import numpy as np

    v = float(v)
    return v if np.isfinite(v) else None


def run(args) -> int:
    """Describe the inputs and print a table or JSON records."""
    import pandas as pd

    from uqx.inference.describe import describe
    from uqx.workflow.validation import TAILEDNESS_VARS

    ds = load_inputs(args.inputs, **input_kwargs(args))
    with progress_bar(quiet=args.quiet, label="uqx stats"):
        desc = describe(ds, bins=args.bins, binning=args.binning, ties=args.ties)
    if args.format == "json":
        print(json.dumps(stats_records(desc), indent=1))
    else:
        table = desc["estimate"].to_pandas().T
        tail = pd.DataFrame({k: desc[k].to_pandas() for k in TAILEDNESS_VARS}).T
        head = pd.DataFrame(
            {"M": desc["M"].to_pandas(), "dropped": desc["n_dropped"].to_pandas()}
        ).T
        print(f"# statistics ({bins_used_text(ds, args)} for the binned ones)")
        print_df(pd.concat([head, table.map(fmt), tail.map(fmt)]))
    for line in filter(None, str(desc.attrs.get("notes", "")).split("\n")):
        note(args, f"note: {line}")
    return 0
