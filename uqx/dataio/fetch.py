"""Download the literature data sets from their Zenodo records (``uqx datasets fetch``).

The registry file (``uqx/dataio/registry.json``, key ``sources``) names the Zenodo records that
hold the files: record id, DOI, the archive (file key in the record), its SHA-256 where
known, the folder of the data files inside the archive (``Data/`` below the archive's
top folder) and the data-directory paths each archive provides. :func:`fetch_datasets`

1. picks the records to download: the first record (registry order) that holds every
   requested file, else as few as possible, each holding the most files still missing;
2. downloads each archive with :mod:`pooch` into a cache directory (``$UQX_CACHE_DIR``,
   else the user cache, e.g. ``~/.cache/uqx``), with a progress bar, retries after a
   failed or corrupted download, and the archive's SHA-256 checked when the registry
   knows it (pooch writes to a temporary name and renames only a complete, matching
   file);
3. extracts the requested files into a staging folder inside the data directory, checks
   the SHA-256 of every one against the registry, and only when all match moves each
   into place with :func:`os.replace`. A mismatch leaves the data directory untouched
   and removes the cached archive, so that the next run downloads it again.

Files already present with the right checksum are not downloaded again (``force=True``
re-fetches them). The server is ``https://zenodo.org`` unless ``$UQX_DATASETS_URL`` (or
``base_url=``) names a mirror laid out as Zenodo: ``<base>/records/<record>/files/<key>``;
when that URL answers 404, the record's file list is read from
``<base>/api/records/<record>`` (the archive with the registry's name, else the record's
only zip file) and its MD5 is checked.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import uuid
import zipfile
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
import pooch
import requests

from uqx.dataio import datasets as _registry
from uqx.dataio.datasets import ENV_VAR, REGISTRY_FILE, file_sha256, sha256_stream
from uqx.errors import DownloadError, InputError

__all__ = [
    "Source",
    "SOURCES",
    "DownloadError",
    "fetch_datasets",
    "fetch_files",
    "fetch_target_dir",
    "cache_dir",
    "plan_sources",
]

ZENODO_URL = "https://zenodo.org"
ENV_URL = "UQX_DATASETS_URL"
ENV_CACHE = "UQX_CACHE_DIR"
RETRIES = 3
TIMEOUT = 60


@dataclass(frozen=True)
class Source:
    """One Zenodo record that holds registered files.

    Attributes
    ----------
    name : str
        Short name (the GitHub repository archived by the record).
    doi : str
        DOI of the record.
    record : str
        Zenodo record id.
    archive : str
        File key of the archive in the record (a zip file).
    sha256 : str or None
        SHA-256 of the archive (None where not known: the extracted files are checked).
    root : str
        Folder of the data files inside the archive, below its top folder.
    provides : tuple of str
        :mod:`fnmatch` patterns of the data-directory paths the archive holds.
    members : tuple of (str, str)
        (data-directory path, path below ``root``) where the two differ.
    description : str
        What the record is.
    """

    name: str
    doi: str
    record: str
    archive: str
    sha256: str | None
    root: str
    provides: tuple[str, ...]
    members: tuple[tuple[str, str], ...] = ()
    description: str = ""

    def holds(self, rel: str) -> bool:
        """Whether the archive holds the data-directory path ``rel``."""
        return any(fnmatch.fnmatchcase(rel, pattern) for pattern in self.provides)

    def member(self, rel: str) -> str:
        """Path of ``rel`` inside the archive, below its top folder."""
        inner = dict(self.members).get(rel, rel)
        return f"{self.root.strip('/')}/{inner}" if self.root else inner

    def url(self, base: str | None = None) -> str:
        """Download URL of the archive on Zenodo or on a mirror laid out as Zenodo."""
        base = (base or ZENODO_URL).rstrip("/")
        return f"{base}/records/{self.record}/files/{self.archive}?download=1"


def _load_sources() -> tuple[Source, ...]:
    doc = json.loads(resources.files("uqx.dataio").joinpath(REGISTRY_FILE).read_text("utf-8"))
    return tuple(
        Source(name=s["name"], doi=s["doi"], record=str(s["record"]), archive=s["archive"],
               sha256=s.get("sha256"), root=s.get("root", ""),
               provides=tuple(s["provides"]),
               members=tuple(s.get("members", {}).items()),
               description=s.get("description", ""))
        for s in doc.get("sources", ())
    )


#: Zenodo records holding the registered files, in order of preference.
SOURCES: tuple[Source, ...] = _load_sources()


# ------------------------------------------------------------------------ directories


def fetch_target_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Directory the fetched files go to (created when missing).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Target directory. Defaults to ``$UQX_DATA_DIR``, else the repository's ``data/``
        when uqx runs from a source checkout (the folder exists), else ``./data``: the
        places :func:`uqx.dataio.datasets.data_dir` looks in.

    Returns
    -------
    pathlib.Path
    """
    if data_dir is None and os.environ.get(ENV_VAR):
        data_dir = os.environ[ENV_VAR]
    if data_dir is None:
        checkout, cwd = _registry.default_data_dirs()[:2]
        data_dir = checkout if checkout.is_dir() else cwd
    path = Path(data_dir).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the data directory {path}: {exc.strerror}") from None
    return path


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """Download cache: ``path``, else ``$UQX_CACHE_DIR``, else the user cache of uqx."""
    if path is None:
        path = os.environ.get(ENV_CACHE)
    if path is None:
        path = pooch.os_cache("uqx")
    return Path(path).expanduser()


# ------------------------------------------------------------------------- planning


def _wanted(names, all_sets: bool) -> list[tuple[str, str]]:
    """List the unique (data-directory path, SHA-256) of the requested sets in order."""
    if all_sets:
        specs = list(_registry.REGISTRY.values())
    elif names:
        specs = [_registry.get_spec(n) for n in names]
    else:
        raise InputError("give dataset names (see `uqx datasets list`) or --all")
    files: dict[str, str] = {}
    for spec in specs:
        for rel, sha in spec.files:
            files.setdefault(rel, sha)
    return list(files.items())


def plan_sources(files, sources=None) -> list[tuple[Source, list]]:
    """Choose the archives to download for ``files`` (data-directory paths or pairs).

    The first source (registry order) holding every file, else, repeatedly, the source
    holding the most files still missing.

    Returns
    -------
    list of (Source, list)
        Each source with the entries of ``files`` taken from it.

    Raises
    ------
    InputError
        A file that no source holds.
    """
    sources = SOURCES if sources is None else tuple(sources)
    files = list(files)

    def rel(f):
        return f if isinstance(f, str) else f[0]

    for src in sources:
        if all(src.holds(rel(f)) for f in files):
            return [(src, files)] if files else []
    plan, left = [], files
    while left:
        best = max(sources, key=lambda s: sum(s.holds(rel(f)) for f in left), default=None)
        got = [f for f in left if best is not None and best.holds(rel(f))]
        if not got:
            raise InputError(
                f"no Zenodo record of the registry holds {', '.join(rel(f) for f in left)}")
        plan.append((best, got))
        left = [f for f in left if f not in got]
    return plan


# ------------------------------------------------------------------------ downloading


class _CorruptArchive(DownloadError):
    """The cached archive was unreadable or did not match: removed, worth one more try."""


class _NotFound(Exception):
    """HTTP 404/410: not retried (pooch retries only requests and hash errors)."""


class _Downloader:
    """pooch's HTTP downloader that reports a missing file at once (no retries)."""

    def __init__(self, progress: bool):
        self.http = pooch.HTTPDownloader(progressbar=progress, timeout=TIMEOUT)

    def __call__(self, url, output_file, pooch_obj, check_only=False):
        try:
            return self.http(url, output_file, pooch_obj, check_only=check_only)
        except requests.HTTPError as exc:
            if exc.response is not None and exc.response.status_code in (404, 410):
                raise _NotFound(url) from exc
            raise


def _download(src: Source, cache: Path, base_url, progress: bool, retries: int) -> Path:
    """Download (or reuse) the archive of ``src`` in the cache; return its path."""
    logger = pooch.get_logger()
    fname = f"{src.record}-{src.archive.replace('/', '_')}"
    url = src.url(base_url)
    known = f"sha256:{src.sha256}" if src.sha256 else None

    def retrieve(url, known):
        store = pooch.create(path=cache, base_url="", registry={fname: known},
                             urls={fname: url}, retry_if_failed=retries)
        # quiet: pooch's messages off (its logger is outside logging's manager, whose
        # level cache setLevel does not clear: `disabled` is the dependable switch)
        logger.disabled = not progress
        try:
            return Path(store.fetch(fname, downloader=_Downloader(progress),
                                    progressbar=progress))
        finally:
            logger.disabled = False

    try:
        try:
            return retrieve(url, known)
        except _NotFound:
            url, checksum = _api_file(src, base_url)
            return retrieve(url, known or checksum)
    except _NotFound:
        raise DownloadError(f"cannot download {src.archive} of the Zenodo record {src.doi}: "
                            f"{url} answers 404 Not Found. Nothing was written.") from None
    except requests.RequestException as exc:
        raise DownloadError(
            f"cannot download {src.archive} of the Zenodo record {src.doi} from {url}: "
            f"{_reason(exc)}. Check the network connection (a proxy is taken from "
            f"HTTPS_PROXY), or download the record by hand and unpack its {src.root}/ "
            f"folder into the data directory. Nothing was written."
        ) from None
    except ValueError as exc:  # pooch: hash mismatch after every retry
        raise DownloadError(
            f"the download of {src.archive} (Zenodo record {src.doi}, {url}) is corrupted: "
            f"{exc} (after {retries + 1} attempts). Nothing was written; run the command "
            "again later."
        ) from None
    except OSError as exc:
        raise DownloadError(f"cannot write the download cache {cache}: {exc}") from None


def _reason(exc) -> str:
    """Short reason of a requests exception (offline, refused, dropped, HTTP status)."""
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code} {exc.response.reason}"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc)
        if "Name or service not known" in text or "resolve" in text.lower():
            return "the server name cannot be resolved (offline?)"
        if "refused" in text.lower():
            return "connection refused"
        return f"connection failed ({type(exc).__name__})"
    if isinstance(exc, requests.Timeout):
        return f"no answer within {TIMEOUT} s"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return "the server dropped the connection during the transfer"
    return f"{type(exc).__name__}: {exc}"


def _api_file(src: Source, base_url) -> tuple[str, str | None]:
    """URL and ``md5:`` checksum of the archive from the record's API entry."""
    base = (base_url or ZENODO_URL).rstrip("/")
    api = f"{base}/api/records/{src.record}"
    resp = requests.get(api, timeout=TIMEOUT)
    resp.raise_for_status()
    try:
        entries = resp.json()["files"]
        entries = entries["entries"].values() if isinstance(entries, dict) else entries
        files = {f["key"]: f for f in entries}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DownloadError(f"{api}: unexpected answer (no file list)") from None
    zips = [k for k in files if k.endswith(".zip")]
    if src.archive in files:
        key = src.archive
    elif len(zips) == 1:  # the record's only archive, under another name
        key = zips[0]
    else:
        raise DownloadError(f"Zenodo record {src.doi} has no archive {src.archive!r} "
                            f"(files: {', '.join(sorted(files))})")
    entry = files[key]
    links = entry.get("links", {})
    url = links.get("content") or links.get("self") or links.get("download")
    checksum = entry.get("checksum") or None
    return url, checksum if checksum and ":" in checksum else None


# ------------------------------------------------------------------------- unpacking


def _members(zf: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """Archive members by path below the single top folder (when there is one)."""
    infos = [i for i in zf.infolist() if not i.is_dir()]
    tops = {i.filename.split("/", 1)[0] for i in infos}
    strip = len(tops) == 1 and all("/" in i.filename for i in infos)
    return {(i.filename.split("/", 1)[1] if strip else i.filename): i for i in infos}


def _extract(archive: Path, src: Source, files, target: Path) -> list[str]:
    """Extract and check ``files`` of one archive; move them into ``target``.

    Returns the data-directory paths written. Nothing is moved unless every file is
    found and matches its SHA-256.
    """
    stage = target / f".uqx-fetch-{uuid.uuid4().hex[:12]}"
    try:
        try:
            zf = zipfile.ZipFile(archive)
        except (zipfile.BadZipFile, OSError) as exc:
            archive.unlink(missing_ok=True)
            raise _CorruptArchive(
                f"the downloaded archive {archive.name} of the Zenodo record {src.doi} is "
                f"not a readable zip file ({exc}); it was removed from the cache: run the "
                "command again. Nothing was written."
            ) from None
        with zf:
            index = _members(zf)
            missing = [rel for rel, _ in files if src.member(rel) not in index]
            if missing:
                archive.unlink(missing_ok=True)
                raise DownloadError(
                    f"{archive.name} (Zenodo record {src.doi}) lacks "
                    f"{', '.join(src.member(r) for r in missing)}; it was removed from the cache. "
                    "Nothing was written."
                )
            bad = []
            for rel, expected in files:
                dest = stage / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(index[src.member(rel)]) as fin, open(dest, "wb") as fout:
                    digest = sha256_stream(fin, fout)
                if digest != expected:
                    bad.append(f"{rel} (sha256 {digest}, expected {expected})")
        if bad:
            archive.unlink(missing_ok=True)
            raise _CorruptArchive(
                f"checksum mismatch in {archive.name} (Zenodo record {src.doi}): "
                f"{'; '.join(bad)}. The download is corrupted or the record changed; the "
                "cached archive was removed and nothing was written to the data directory."
            )
        for rel, _ in files:
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / rel, dest)
        return [rel for rel, _ in files]
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:  # a damaged member
        archive.unlink(missing_ok=True)
        raise _CorruptArchive(f"{archive.name}: damaged archive ({exc}); it was removed from "
                            "the cache: run the command again. Nothing was written.") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


# ------------------------------------------------------------------------ public API


def fetch_datasets(names=None, data_dir=None, *, all: bool = False,
                   cache: str | os.PathLike | None = None, base_url: str | None = None,
                   force: bool = False, progress: bool = True, retries: int = RETRIES,
                   sources=None) -> pd.DataFrame:
    """Download registered data sets from their Zenodo records into the data directory.

    Parameters
    ----------
    names : str or list of str, optional
        Registry names or aliases (see :func:`uqx.dataio.datasets.list_datasets`).
    data_dir : str or path-like, optional
        Target directory; default as in :func:`fetch_target_dir`.
    all : bool
        Fetch every registered data set (``names`` ignored).
    cache, base_url, force, progress, retries, sources :
        As in :func:`fetch_files`.

    Returns
    -------
    pandas.DataFrame
        As :func:`fetch_files`.

    Raises
    ------
    InputError
        Unknown name, nothing requested, unwritable data directory.
    DownloadError
        As :func:`fetch_files`.

    Examples
    --------
    >>> fetch_datasets(["Set1", "Set7"], "data")  # doctest: +SKIP
    """
    names = [names] if isinstance(names, str) else list(names or [])
    return fetch_files(_wanted(names, all), data_dir, cache=cache, base_url=base_url,
                       force=force, progress=progress, retries=retries, sources=sources)


def fetch_files(files, data_dir=None, *, cache: str | os.PathLike | None = None,
                base_url: str | None = None, force: bool = False, progress: bool = True,
                retries: int = RETRIES, sources=None) -> pd.DataFrame:
    """Download files from the records that hold them, check them, put them in place.

    Parameters
    ----------
    files : sequence of (str, str)
        (path relative to the data directory, expected SHA-256).
    data_dir : str or path-like, optional
        Target directory; default as in :func:`fetch_target_dir`.
    cache : str or path-like, optional
        Download cache; default as in :func:`cache_dir`.
    base_url : str, optional
        Server laid out as Zenodo (default ``$UQX_DATASETS_URL``, else
        ``https://zenodo.org``).
    force : bool
        Fetch files that are already present with the right checksum too.
    progress : bool
        Progress bar and download messages on stderr.
    retries : int
        Further attempts after a failed or corrupted download.
    sources : sequence of Source, optional
        Records to use instead of :data:`SOURCES`.

    Returns
    -------
    pandas.DataFrame
        One row per file: ``file``, ``status`` (``fetched`` or ``present``), ``source``
        (record DOI, empty when present) and ``data_dir``.

    Raises
    ------
    DownloadError
        Offline, HTTP error, dropped connection, corrupted download or checksum
        mismatch; nothing is written to the data directory then.
    """
    files = [(str(rel), str(sha)) for rel, sha in files]
    target = fetch_target_dir(data_dir)
    base_url = base_url or os.environ.get(ENV_URL) or None
    present = [] if force else [
        rel for rel, sha in files if (target / rel).is_file() and file_sha256(target / rel) == sha
    ]
    todo = [f for f in files if f[0] not in present]
    rows = [{"file": rel, "status": "present", "source": "", "data_dir": str(target)}
            for rel in present]
    store = cache_dir(cache)
    for src, group in plan_sources(todo, sources):
        tries = 2 if retries > 0 else 1  # a corrupted archive is downloaded once more
        for attempt in range(tries):
            archive = _download(src, store, base_url, progress, retries)
            try:
                written = _extract(archive, src, group, target)
                break
            except _CorruptArchive:
                if attempt + 1 == tries:
                    raise
        rows += [{"file": rel, "status": "fetched", "source": src.doi,
                  "data_dir": str(target)} for rel in written]
    order = {rel: i for i, (rel, _) in enumerate(files)}
    rows.sort(key=lambda r: order[r["file"]])
    return pd.DataFrame(rows, columns=["file", "status", "source", "data_dir"])
