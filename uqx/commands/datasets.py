"""``uqx datasets list|check``: the registry of literature datasets."""

from __future__ import annotations

import sys

from uqx.commands._common import HelpFormatter, print_df

NAME = "datasets"


def register(subparsers):
    """Add the ``datasets`` command."""
    p = subparsers.add_parser(
        NAME,
        help="list or check the literature datasets",
        description="List the registered literature datasets, or check that their files "
        "are present with the right checksums.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("action", choices=["list", "check"], help="what to do")
    p.add_argument(
        "--data-dir", default=None, help="literature data directory (else $UQX_DATA_DIR)"
    )
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    return p


def run(args) -> int:
    """List the registry, or check the files (status 1 when some are missing or wrong)."""
    from uqx.datasets import check_datasets, list_datasets

    if args.action == "list":
        df = list_datasets()
        if args.format == "json":
            print(df.to_json(orient="records", indent=1))
        else:
            print_df(df[["name", "family", "M", "file"]].set_index("name"))
        return 0
    df = check_datasets(args.data_dir)
    print_df(df.set_index("name"))
    bad = df[~(df["present"] & df["checksum_ok"].fillna(False).astype(bool))]
    if len(bad):
        print(
            f"\n{len(bad)} of {len(df)} dataset file(s) missing or with a wrong checksum",
            file=sys.stderr,
        )
        return 1
    print(f"\nall {len(df)} dataset files present, checksums OK")
    return 0
