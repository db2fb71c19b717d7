"""The ``uqx`` command: datasets, stats, validate, demo.

Bad input prints ``uqx: error: <message>`` on stderr and exits with status 2 (no
traceback); see ``uqx COMMAND --help``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from uqx import __version__
from uqx.data import InputError, stack

__all__ = ["main", "load_inputs"]


def _cols(args):
    return {"E": args.E, "uE": args.uE, "X": args.X, "V": args.V}


def load_inputs(
    inputs,
    *,
    E="E",
    uE="uE",
    X=None,
    V=None,
    data_dir=None,
    uE_is_variance=False,
    drop_nonfinite=False,
):
    """Resolve CLI inputs: each is a CSV path or a registered dataset name -> stacked Dataset."""
    from uqx.datasets import get_spec, load_dataset
    from uqx.io import read_csv

    if not inputs:
        raise InputError(
            "no input given: pass CSV files or dataset names (see 'uqx datasets list')"
        )
    out = []
    for item in inputs:
        p = Path(item)
        if p.suffix.lower() in (".csv", ".txt", ".tsv") or p.exists():
            out.append(
                read_csv(
                    p,
                    E=E,
                    uE=uE,
                    X=X,
                    V=V,
                    uE_is_variance=uE_is_variance,
                    drop_nonfinite=drop_nonfinite,
                )
            )
        else:
            get_spec(item)  # clear error for unknown names
            out.append(load_dataset(item, data_dir))
    names = [d.attrs.get("name") for d in out]
    for i, d in enumerate(out):  # same file twice, or same stem in two folders
        if names.count(d.attrs.get("name")) > 1:
            d.attrs["name"] = f"{d.attrs['name']}#{i + 1}"
    keep = ("E", "uE", "X", "V")
    return stack([d[[k for k in keep if k in d]].assign_attrs(d.attrs) for d in out])


def _print_df(df: pd.DataFrame):
    with pd.option_context(
        "display.max_rows", 500, "display.max_columns", 50, "display.width", 160
    ):
        print(df.to_string())


# ---------------------------------------------------------------- datasets
def _cmd_datasets(args):
    from uqx.datasets import check_datasets, list_datasets

    if args.action == "list":
        df = list_datasets()
        if args.format == "json":
            print(df.to_json(orient="records", indent=1))
        else:
            _print_df(df[["name", "family", "M", "file"]].set_index("name"))
        return 0
    df = check_datasets(args.data_dir)
    _print_df(df.set_index("name"))
    bad = df[~(df["present"] & df["checksum_ok"].fillna(False).astype(bool))]
    if len(bad):
        print(
            f"\n{len(bad)} of {len(df)} dataset file(s) missing or with a wrong checksum",
            file=sys.stderr,
        )
        return 1
    print(f"\nall {len(df)} dataset files present, checksums OK")
    return 0


# ---------------------------------------------------------------- stats
def stats_records(desc):
    """JSON records of :func:`uqx.describe` output (``uqx stats --format json``)."""
    from uqx.validate import TAILEDNESS_VARS

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


def _num(v):
    v = float(v)
    return v if np.isfinite(v) else None


def _cmd_stats(args):
    from uqx.describe import describe

    ds = load_inputs(
        args.inputs,
        **_cols(args),
        data_dir=args.data_dir,
        uE_is_variance=args.uE_is_variance,
        drop_nonfinite=args.drop_nonfinite,
    )
    desc = describe(ds, bins=args.bins, binning=args.binning)
    if args.format == "json":
        print(json.dumps(stats_records(desc), indent=1))
        for note in filter(None, str(desc.attrs.get("notes", "")).split("\n")):
            print(f"note: {note}", file=sys.stderr)
        return 0
    from uqx.validate import TAILEDNESS_VARS

    table = desc["estimate"].to_pandas().T
    tail = pd.DataFrame({k: desc[k].to_pandas() for k in TAILEDNESS_VARS}).T
    head = pd.DataFrame({"M": desc["M"].to_pandas(), "dropped": desc["n_dropped"].to_pandas()}).T
    print(f"# statistics ({args.bins} {args.binning} bins on uE for binned ones)")
    _print_df(pd.concat([head, table.map(_fmt), tail.map(_fmt)]))
    for note in filter(None, str(desc.attrs.get("notes", "")).split("\n")):
        print(f"note: {note}", file=sys.stderr)
    return 0


def _fmt(v):
    return "nan" if v is None or not np.isfinite(v) else f"{v:.6g}"


# ---------------------------------------------------------------- validate
def _stat_list(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def _normalise_stat(s):
    """CLI spelling -> statistic name (case-insensitive, keeps _X/_V suffixes)."""
    low = s.lower()
    for suffix in ("_x", "_v"):
        if low.endswith(suffix):
            return low[:-2] + suffix.upper()
    return low


def _cmd_validate(args):
    from uqx.io import to_netcdf
    from uqx.validate import paper_table_a, paper_table_iv, result_records, result_table, validate

    if args.paper_sets:
        from uqx.datasets import load_paper_sets

        ds = load_paper_sets(args.data_dir)
        if args.inputs:
            ds = stack(
                [
                    *_unstack(ds),
                    *_unstack(load_inputs(args.inputs, **_cols(args), data_dir=args.data_dir)),
                ]
            )
        stats = _stat_list(args.stats) if args.stats else ["zms", "rce", "cc", "ence", "zmse"]
    else:
        ds = load_inputs(
            args.inputs,
            **_cols(args),
            data_dir=args.data_dir,
            uE_is_variance=args.uE_is_variance,
            drop_nonfinite=args.drop_nonfinite,
        )
        stats = (
            _stat_list(args.stats) if args.stats else ["zms", "rce", "cc", "ence", "zmse", "zve"]
        )
    stats = [_normalise_stat(s) for s in stats]
    res = validate(
        ds,
        stats,
        n_boot=args.n_boot,
        n_mc=args.n_mc,
        seed=args.seed,
        bins=args.bins,
        binning=args.binning,
        nu=args.nu,
        simulate_all=args.paper_sets,
        conditional=not args.no_conditional,
    )
    if args.output:
        to_netcdf(
            res,
            args.output,
            parameters={"command": "validate", "inputs": list(args.inputs), "stats": stats},
            seed=int(res.attrs["seed"]),
        )
    if args.format == "json":
        print(json.dumps(result_records(res), indent=1))
    else:
        if args.paper_sets:
            print("# 001 Table IV: RCE and ZMS, bootstrap bias, BCa interval, zeta")
            _print_df(paper_table_iv(res))
            for st in [s for s in ("zms", "cc", "ence", "zmse") if s in res["stat"].values]:
                print(
                    f"\n# 000 Table A ({st.upper()}): BS then simulated references N and "
                    f"T{res.attrs['nu']:g}"
                )
                _print_df(paper_table_a(res, st))
        else:
            print(
                f"# uqx validate: BCa {res.attrs['level']:.0%} intervals, "
                f"n_boot={res.attrs['n_boot']}, "
                f"n_mc={res.attrs['n_mc']}, seed={res.attrs['seed']}"
            )
            _print_df(result_table(res))
            if "fval" in res:
                print(
                    "\n# conditional calibration: fraction of bins whose LZISD interval contains 1"
                )
                _print_df(_fval_table(res))
        _print_warnings(res)
        if args.output:
            print(f"\nresults written to {args.output}")
    return 0


def _fval_table(res):
    from uqx.render import fval_table

    return fval_table(res)


def _print_warnings(res):
    from uqx.render import warning_lines

    lines = warning_lines(res)
    if lines:
        print("\n# warnings")
        print("\n".join(lines))


def _unstack(ds):
    from uqx.data import from_arrays, iter_sets

    return [from_arrays(sd.E, sd.uE, X=sd.X, V=sd.V, name=sd.name) for sd in iter_sets(ds)]


# ---------------------------------------------------------------- demo
def _cmd_demo(args):
    from uqx.datasets import data_dir as find_data_dir
    from uqx.datasets import load_paper_sets
    from uqx.describe import describe
    from uqx.io import to_netcdf
    from uqx.synth import demo_sets
    from uqx.validate import result_table, validate

    ds = demo_sets()
    print("# uqx demo: synthetic data sets generated by uqx.synth.demo_sets (M = 5000 each)")
    desc = describe(ds)
    _print_df(desc["estimate"].to_pandas().T.map(_fmt))
    res = validate(
        ds, ["zms", "rce", "cc", "ence", "zmse"], n_boot=args.n_boot, n_mc=args.n_mc, seed=args.seed
    )
    print(f"\n# validation (n_boot={args.n_boot}, n_mc={args.n_mc}, seed={args.seed})")
    _print_df(result_table(res))
    print("\n# fraction of valid LZISD bins (consistency on uE, adaptivity on X)")
    _print_df(_fval_table(res))
    _print_warnings(res)
    out = Path(args.output)
    to_netcdf(res, out, parameters={"command": "demo"}, seed=args.seed)
    print(f"\nresults written to {out}")
    try:
        root = find_data_dir(args.data_dir)
    except InputError:
        print(
            "\n(no literature data directory: set UQX_DATA_DIR to also cover the nine paper sets)"
        )
        return 0
    print(f"\n# the nine literature sets of papers 000/001/004 ({root})")
    paper = load_paper_sets(root)
    res_p = validate(paper, ["zms", "rce"], n_boot=args.n_boot, seed=args.seed, conditional=False)
    _print_df(result_table(res_p))
    _print_warnings(res_p)
    pout = out.with_name(out.stem + "_paper_sets" + out.suffix)
    to_netcdf(res_p, pout, parameters={"command": "demo", "part": "paper sets"}, seed=args.seed)
    print(f"\nresults written to {pout}")
    return 0


# ---------------------------------------------------------------- parser
def _add_inputs(p, *, required=True):
    p.add_argument(
        "inputs",
        nargs="+" if required else "*",
        metavar="INPUT",
        help="CSV file or registered dataset name (e.g. QM9_E, Set7)",
    )
    p.add_argument("--E", default="E", help="column of errors (default E)")
    p.add_argument("--uE", default="uE", help="column of uncertainties (default uE)")
    p.add_argument("--X", default=None, help="column of the input feature (adaptivity)")
    p.add_argument("--V", default=None, help="column of the predicted value")
    p.add_argument("--uE-is-variance", action="store_true", help="the uE column holds variances")
    p.add_argument(
        "--drop-nonfinite",
        action="store_true",
        help="drop (and count) rows with NaN/inf instead of failing",
    )
    p.add_argument(
        "--data-dir", default=None, help="literature data directory (else $UQX_DATA_DIR)"
    )
    p.add_argument("--bins", type=int, default=20, help="bins of binned statistics (default 20)")
    p.add_argument(
        "--binning", default="equal-count", choices=["equal-count", "equal-width", "adaptive"]
    )
    p.add_argument("--format", default="table", choices=["table", "json"])


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``uqx``."""
    parser = argparse.ArgumentParser(
        prog="uqx",
        description="Validate prediction uncertainties of ML regression models "
        "(calibration, consistency, adaptivity) as in P. Pernot's papers.",
    )
    parser.add_argument("--version", action="version", version=f"uqx {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("datasets", help="list or check the literature datasets")
    p.add_argument("action", choices=["list", "check"])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--format", default="table", choices=["table", "json"])
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("stats", help="statistics and tailedness of data sets")
    _add_inputs(p)
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser("validate", help="bootstrap/zeta-score validation workflow (000 Fig. 1)")
    _add_inputs(p, required=False)
    p.add_argument(
        "--paper-sets",
        action="store_true",
        help="the nine sets of papers 000/001/004; prints 001 Table IV and 000 Tables A1-A4",
    )
    p.add_argument("--stats", default=None, help="comma-separated, e.g. ZMS,RCE,CC,ENCE,ZMSE,ZVE")
    p.add_argument("--n-boot", type=int, default=10_000)
    p.add_argument("--n-mc", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--nu", type=float, default=6.0, help="Student t_s(nu) reference (default 6)")
    p.add_argument("--no-conditional", action="store_true", help="skip the per-bin LZISD analysis")
    p.add_argument("-o", "--output", default=None, help="write the result to this NetCDF file")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser(
        "demo", help="run on embedded synthetic data (and the paper sets if present)"
    )
    p.add_argument("-o", "--output", default="uqx_demo.nc")
    p.add_argument("--n-boot", type=int, default=2000)
    p.add_argument("--n-mc", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", default=None)
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``uqx`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    if args.command == "validate" and not args.inputs and not args.paper_sets:
        parser.error("validate needs INPUT files/names or --paper-sets")
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"uqx: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        print(f"uqx: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `uqx validate ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("uqx: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
