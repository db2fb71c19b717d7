"""``uqx datasets fetch``: real downloads from a local HTTP server on 127.0.0.1.

The server serves zip archives laid out as the Zenodo records (a top folder, then
``Data/``), built here from files the tests write; it can corrupt the bytes of the next
answers or drop the connection half-way. With the literature data at hand (``data``
marker) the records of the real registry are rebuilt from those files, so that the
registry's sources (archive names, folders, renamed members) are checked as well.
"""

import hashlib
import io
import json
import socket
import threading
import zipfile
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import uqx.dataio.fetch as F
from uqx.cli import main
from uqx.dataio import datasets as D
from uqx.errors import DownloadError, InputError

TOP = "owner-repo-abc1234"  # the top folder of a GitHub archive on Zenodo


class _Server:
    """Threaded HTTP server on 127.0.0.1 with fault injection."""

    def __init__(self):
        self.routes: dict[str, bytes] = {}
        self.hits: Counter = Counter()
        self.corrupt = 0  # answers still to corrupt (same length, bytes flipped)
        self.drop = 0  # answers still to cut half-way (connection closed)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                path = urlsplit(self.path).path
                server.hits[path] += 1
                body = server.routes.get(path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if server.drop > 0:
                    server.drop -= 1
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if server.corrupt > 0:
                    server.corrupt -= 1
                    mid = len(body) // 2
                    body = body[:mid] + bytes(b ^ 0xFF for b in body[mid:mid + 64]) + \
                        body[mid + 64:]
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{TOP}/", b"")
        for name, data in members.items():
            zf.writestr(f"{TOP}/{name}", data)
    return buf.getvalue()


#: the files of the tests: data-directory path -> content
FILES = {
    "FAM/a.csv": b"E,uE\n" + b"".join(b"%d,%d\n" % (i, i + 1) for i in range(3000)),
    "FAM/b.csv": b"E,uE\n0.1,0.2\n",
    "OTHER/c.csv": b"E,uE\n1,2\n",
}


def _files(*names):
    return [(n, _sha(FILES[n])) for n in names]


@pytest.fixture
def records(server):
    """Two records: R1 holds FAM/ (b.csv is 'b(1).csv' inside), R2 holds everything."""
    r1 = _zip({"Data/FAM/a.csv": FILES["FAM/a.csv"], "Data/FAM/b(1).csv": FILES["FAM/b.csv"],
               "R/code.R": b"x <- 1\n", "README.md": b"# repo\n"})
    r2 = _zip({f"Data/{k}": v for k, v in FILES.items()})
    s1 = F.Source(name="one", doi="10.5281/zenodo.1", record="1", archive="owner/one-v1.zip",
                  sha256=None, root="Data", provides=("FAM/*",),
                  members=(("FAM/b.csv", "FAM/b(1).csv"),))
    s2 = F.Source(name="two", doi="10.5281/zenodo.2", record="2", archive="owner/two-v1.zip",
                  sha256=_sha(r2), root="Data", provides=("*",))
    server.routes[f"/records/1/files/{s1.archive}"] = r1
    server.routes[f"/records/2/files/{s2.archive}"] = r2
    return s1, s2


def _fetch(server, files, tmp_path, sources, **kw):
    kw = {"progress": False, "retries": 1, **kw}
    return F.fetch_files(files, tmp_path / "data", cache=tmp_path / "cache",
                         base_url=server.url, sources=sources, **kw)


def _leftovers(tmp_path):
    """Files other than finished data files and cached archives (temporaries, stages)."""
    return [p for p in tmp_path.rglob("*") if p.name.startswith(".") or "tmp" in p.name]


def test_fetch_unpacks_checks_and_reuses(server, records, tmp_path, capfd):
    s1, s2 = records
    df = _fetch(server, _files("FAM/a.csv", "FAM/b.csv"), tmp_path, records, progress=True)
    assert list(df["status"]) == ["fetched", "fetched"]
    assert set(df["source"]) == {s1.doi}  # the first record holding both files
    data = tmp_path / "data"
    assert (data / "FAM/a.csv").read_bytes() == FILES["FAM/a.csv"]
    assert (data / "FAM/b.csv").read_bytes() == FILES["FAM/b.csv"]  # renamed member
    assert not (data / "R").exists() and not _leftovers(tmp_path)
    assert "100%" in capfd.readouterr().err  # pooch's progress bar
    assert server.hits[f"/records/1/files/{s1.archive}"] == 1
    # present and correct: nothing downloaded; the third file comes from record 2
    df = _fetch(server, _files("FAM/a.csv", "FAM/b.csv", "OTHER/c.csv"), tmp_path, records)
    assert list(df["status"]) == ["present", "present", "fetched"]
    assert df["source"].iloc[2] == s2.doi
    assert server.hits[f"/records/1/files/{s1.archive}"] == 1
    # a damaged local file is fetched again (from the cached archive: no new request)
    (data / "FAM/a.csv").write_bytes(b"edited")
    df = _fetch(server, _files("FAM/a.csv"), tmp_path, records)
    assert list(df["status"]) == ["fetched"] and sum(server.hits.values()) == 2
    assert (data / "FAM/a.csv").read_bytes() == FILES["FAM/a.csv"]
    df = _fetch(server, _files("FAM/a.csv"), tmp_path, records, force=True)
    assert list(df["status"]) == ["fetched"]


def test_plan_prefers_one_record(records):
    s1, s2 = records
    assert [s.name for s, _ in F.plan_sources(["FAM/a.csv"], records)] == ["one"]
    assert [s.name for s, _ in F.plan_sources(["FAM/a.csv", "OTHER/c.csv"], records)] == [
        "two"]
    assert [s.name for s, _ in F.plan_sources(["OTHER/c.csv"], (s1,) + (s2,))] == ["two"]
    with pytest.raises(InputError, match="no Zenodo record"):
        F.plan_sources(["OTHER/c.csv"], (s1,))
    # greedy cover when no single record holds everything
    s3 = F.Source(name="three", doi="d3", record="3", archive="t.zip", sha256=None, root="",
                  provides=("OTHER/*",))
    plan = F.plan_sources(["FAM/a.csv", "OTHER/c.csv", "FAM/b.csv"], (s1, s3))
    assert [(s.name, f) for s, f in plan] == [("one", ["FAM/a.csv", "FAM/b.csv"]),
                                             ("three", ["OTHER/c.csv"])]


def test_corrupted_download_is_retried_then_refused(server, records, tmp_path):
    s1, s2 = records
    path = f"/records/2/files/{s2.archive}"
    server.corrupt = 1  # archive SHA-256 known: pooch retries
    df = _fetch(server, _files("OTHER/c.csv"), tmp_path, [s2])
    assert list(df["status"]) == ["fetched"] and server.hits[path] == 2
    server.corrupt = 100
    with pytest.raises(DownloadError, match="corrupted") as exc:
        _fetch(server, _files("OTHER/c.csv"), tmp_path / "b", [s2], retries=1)
    assert "Nothing was written" in str(exc.value) and server.hits[path] == 4
    assert not list((tmp_path / "b" / "data").rglob("*.csv"))
    assert not list((tmp_path / "b" / "cache").glob("*"))  # no partial download kept


def test_member_checksum_mismatch_writes_nothing(server, records, tmp_path):
    s1, _ = records
    path = f"/records/1/files/{s1.archive}"
    files = [("FAM/a.csv", _sha(FILES["FAM/a.csv"])), ("FAM/b.csv", "0" * 64)]
    with pytest.raises(DownloadError, match=r"checksum mismatch.*FAM/b.csv") as exc:
        _fetch(server, files, tmp_path, [s1])
    assert "nothing was written" in str(exc.value)
    assert server.hits[path] == 2  # downloaded once more before giving up
    assert not list((tmp_path / "data").rglob("*.csv")) and not _leftovers(tmp_path)
    assert not list((tmp_path / "cache").glob("*"))  # the bad archive is not kept
    # archive SHA-256 unknown, bytes corrupted: the zip CRC catches it, one more download
    server.corrupt = 1
    df = _fetch(server, _files("FAM/a.csv"), tmp_path, [s1])
    assert list(df["status"]) == ["fetched"] and server.hits[path] == 4


def test_dropped_connection(server, records, tmp_path):
    s1, _ = records
    path = f"/records/1/files/{s1.archive}"
    server.drop = 1
    df = _fetch(server, _files("FAM/a.csv"), tmp_path, [s1])
    assert list(df["status"]) == ["fetched"] and server.hits[path] == 2
    server.drop = 100
    with pytest.raises(DownloadError, match="dropped the connection") as exc:
        _fetch(server, _files("FAM/a.csv"), tmp_path / "b", [s1], retries=1)
    assert server.url in str(exc.value)
    assert not list((tmp_path / "b").rglob("*.csv")) and not _leftovers(tmp_path / "b")
    assert not list((tmp_path / "b" / "cache").glob("*"))


def test_offline_and_not_found(server, records, tmp_path, monkeypatch):
    s1, _ = records
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    with pytest.raises(DownloadError, match="connection refused"):
        F.fetch_files(_files("FAM/a.csv"), tmp_path / "d", cache=tmp_path / "c",
                      base_url=f"http://127.0.0.1:{port}", sources=[s1], progress=False,
                      retries=0)

    def no_dns(*args, **kwargs):
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(DownloadError, match=r"cannot be resolved \(offline\?\)") as exc:
        F.fetch_files(_files("FAM/a.csv"), tmp_path / "d", cache=tmp_path / "c",
                      base_url="https://zenodo.invalid", sources=[s1], progress=False,
                      retries=0)
    assert "download the record by hand" in str(exc.value)
    assert not list((tmp_path / "d").rglob("*.csv"))
    monkeypatch.undo()
    # not at the usual URL: the record's file list (Zenodo API) gives the link and MD5
    body = server.routes.pop(f"/records/1/files/{s1.archive}")
    with pytest.raises(DownloadError, match="404"):
        _fetch(server, _files("FAM/a.csv"), tmp_path, [s1])
    server.routes["/elsewhere/one.zip"] = body
    server.routes["/api/records/1"] = json.dumps({"files": [
        {"key": "notes.txt", "links": {"self": f"{server.url}/nowhere"}},
        {"key": "owner/one-v1.zip", "checksum": "md5:" + hashlib.md5(body).hexdigest(),
         "links": {"self": f"{server.url}/elsewhere/one.zip"}}]}).encode()
    df = _fetch(server, _files("FAM/a.csv"), tmp_path, [s1])
    assert list(df["status"]) == ["fetched"]
    assert server.hits["/elsewhere/one.zip"] == 1 and server.hits["/nowhere"] == 0


@pytest.fixture
def fake_registry(monkeypatch, records):
    """Registry of two data sets made of FILES, served by the two records."""
    specs = {
        "FAKE_A": D.DatasetSpec(name="FAKE_A", family="PAL2022", file="FAM/a.csv",
                                reader="pal2022", sha256=_sha(FILES["FAM/a.csv"]), M=3000,
                                unit="", description="test", aliases=("SetA",),
                                extra_files=tuple(_files("FAM/b.csv"))),
        "FAKE_C": D.DatasetSpec(name="FAKE_C", family="PAL2022", file="OTHER/c.csv",
                                reader="pal2022", sha256=_sha(FILES["OTHER/c.csv"]), M=1,
                                unit="", description="test"),
    }
    monkeypatch.setattr(D, "REGISTRY", specs)
    monkeypatch.setattr(D, "_LOOKUP", {"fake_a": "FAKE_A", "seta": "FAKE_A",
                                       "fake_c": "FAKE_C"})
    monkeypatch.setattr(F, "SOURCES", records)
    return specs


def test_cli_fetch_and_check(server, fake_registry, tmp_path, capsys, monkeypatch):
    data, cache = tmp_path / "data", tmp_path / "cache"
    opts = ["--data-dir", str(data), "--cache-dir", str(cache), "--url", server.url]
    assert main(["datasets", "check", "SetA", "--data-dir", str(tmp_path)]) == 1
    assert "uqx datasets fetch FAKE_A" in capsys.readouterr().err
    assert main(["-q", "datasets", "fetch", "SetA", *opts]) == 0
    out = capsys.readouterr().out
    assert "fetched 2 file(s) from the Zenodo record 10.5281/zenodo.1" in out
    assert main(["datasets", "check", "FAKE_A", "--data-dir", str(data)]) == 0
    assert "checksums OK" in capsys.readouterr().out
    # --all: FAM/ is present, the rest comes from record 2; the environment gives the URL
    monkeypatch.setenv("UQX_DATASETS_URL", server.url)
    monkeypatch.setenv("UQX_CACHE_DIR", str(cache))
    assert main(["-q", "datasets", "fetch", "--all", "--data-dir", str(data),
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in rows] == ["present", "present", "fetched"]
    assert main(["datasets", "check", "--data-dir", str(data)]) == 0
    # errors: exit status 2, one line, no traceback
    server.drop = 100
    assert main(["-q", "datasets", "fetch", "FAKE_C", "--retries", "0",
                 "--data-dir", str(tmp_path / "other"), "--cache-dir", str(tmp_path / "c2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uqx: error: cannot download") and "Traceback" not in err
    assert main(["datasets", "fetch"]) == 2
    assert "give dataset names" in capsys.readouterr().err
    assert main(["datasets", "fetch", "Difusion"]) == 2
    assert "unknown dataset" in capsys.readouterr().err


def test_target_and_cache_dirs(monkeypatch, tmp_path):
    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    monkeypatch.setattr(D, "default_data_dirs", lambda: [tmp_path / "checkout" / "data",
                                                         tmp_path / "cwd" / "data"])
    assert F.fetch_target_dir() == tmp_path / "cwd" / "data"  # installed: ./data
    (tmp_path / "checkout" / "data").mkdir(parents=True)
    assert F.fetch_target_dir() == tmp_path / "checkout" / "data"  # source checkout
    monkeypatch.setenv("UQX_DATA_DIR", str(tmp_path / "env"))
    assert F.fetch_target_dir() == tmp_path / "env" and (tmp_path / "env").is_dir()
    monkeypatch.setenv("UQX_CACHE_DIR", str(tmp_path / "c"))
    assert F.cache_dir() == tmp_path / "c"
    assert F.cache_dir(tmp_path / "x") == tmp_path / "x"


def test_registry_sources_cover_every_file():
    files = {rel for spec in D.REGISTRY.values() for rel, _ in spec.files}
    assert {s.doi for s in F.SOURCES} == {"10.5281/zenodo.10666788", "10.5281/zenodo.10730985"}
    plan = F.plan_sources(sorted(files))
    assert [s.doi for s, _ in plan] == ["10.5281/zenodo.10730985"]
    nine = [D.get_spec(reg).file for _, _, reg in D.PAPER_SETS]
    assert [s.doi for s, _ in F.plan_sources(nine)] == ["10.5281/zenodo.10666788"]
    for s in F.SOURCES:
        assert s.url().startswith(f"https://zenodo.org/records/{s.record}/files/")


# ------------------------------------------------------------ the real registry


def _zenodo_archive(data_dir: Path, src: F.Source, top: str) -> bytes:
    """Rebuild a record's archive from the data files, laid out as the registry says."""
    members = {}
    for spec in D.REGISTRY.values():
        for rel, _ in spec.files:
            if src.holds(rel):
                members[f"{top}/{src.member(rel)}"] = (data_dir / rel).read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr(f"{top}/README.md", b"# code and data\n")
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buf.getvalue()


@pytest.mark.data
def test_fetch_real_registry_from_rebuilt_records(data_dir, server, tmp_path, capsys):
    for src in F.SOURCES:
        repo = src.archive.split("/")[-1].removesuffix(".zip")
        server.routes[f"/records/{src.record}/files/{src.archive}"] = _zenodo_archive(
            data_dir, src, f"ppernot-{repo}-0123abc")
    target = tmp_path / "data"
    opts = ["--data-dir", str(target), "--cache-dir", str(tmp_path / "cache"),
            "--url", server.url]
    # the nine sets of the papers come from the smaller record, 2024_RCE
    assert main(["-q", "datasets", "fetch", *[f"Set{i}" for i in range(1, 10)], *opts]) == 0
    assert "10.5281/zenodo.10666788" in capsys.readouterr().out
    assert D.load_paper_sets(target).sizes["set"] == 9
    assert main(["-q", "datasets", "fetch", "--all", *opts]) == 0
    out = capsys.readouterr().out
    assert "10.5281/zenodo.10730985" in out and "already present" in out
    assert main(["datasets", "check", "--data-dir", str(target)]) == 0
    assert (target / "RAS2023/logP_RF_UQ_results.csv").is_file()  # 'results(1).csv' inside
    assert sorted(server.hits.values()) == [1, 1]
