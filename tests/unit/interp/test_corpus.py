"""Tests for interp.data.corpus: real extraction on tiny .deb packages built at test time."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from interp.data import corpus
from interp.errors import InterpError
from tests.support import FIXTURE_DIR
from tests.support.bad_inputs import Case, Ctx, _under_file

FIXTURES = FIXTURE_DIR / "corpus"
DPKG_DEB = shutil.which("dpkg-deb")
needs_dpkg = pytest.mark.skipif(DPKG_DEB is None, reason="dpkg-deb is not installed")

DICTD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
WORDS = (
    "harbour keeper lantern tide storm sailor rope anchor gull island compass chart wave boat "
    "net quay pier shore cliff beacon"
).split()

# Paragraphs the fixture package must yield, exactly as normalised.
LIGHTHOUSE = (
    "The lighthouse keeper walked along the shore every morning, counting the boats that had "
    "returned from the night's fishing and noting in his book which of them had come back with "
    "full nets and which had come back empty."
)
WINTER = (
    "Winter storms arrived early that year, and the harbour master ordered every vessel to stay "
    "tied up at the quay until the wind dropped, which annoyed the younger sailors who wanted to "
    "try their luck beyond the breakwater regardless of the danger."
)
DIV_PARA = (
    "The old keeper kept a second notebook in which he wrote down the weather, the height of the "
    "tide, and the colour of the sky at dawn, believing that careful records would one day let "
    "him predict the storms before the almanac did."
)
NESTED_PARA = (
    "A nested paragraph inside a list item explains that the notebooks were later given to the "
    "village school, where the children used them to learn about tides, winds and the patient "
    "habit of writing things down every single day."
)
ENTITIES = (
    "Entities & references like café and “quotes” are decoded properly, and a line break inside "
    "a paragraph becomes a single space, so the sentence stays readable for anyone who studies "
    "the extracted text later on."
)
POD_OPEN = (
    'The open function attaches a filehandle to a file, and the manual page "open" in perlfunc '
    "explains every mode in detail; when the comparison 3 > 2 holds, bold and italic text are "
    "rendered as plain words by the extractor."
)
POD_SORT = (
    "Double-bracket codes such as $a <=> $b and links with text like the sorting guide must "
    "read naturally as well, and an index entry disappears completely from the text that the "
    "extractor keeps for the corpus."
)
POD_AFTER_CUT = (
    "After the cut, a new command resumes the documentation, and this ordinary paragraph is "
    "prose again, long enough to pass the length filter and real enough to be kept by the "
    "extractor without any complaint."
)
FORTUNE = (
    "A fortune that is long enough to keep: the sailor asked the sea why it never rested, and "
    "the sea replied that rest is for those who have somewhere to arrive, while the sea is "
    "already everywhere it wants to be. -- Harbour proverb"
)
DICT_ENTRY = (
    "A tall tower with a bright light at the top, built on a rock or a cliff so that ships at "
    "sea can see it from far away and steer clear of the dangerous shore during the long "
    "dark and stormy winter nights."
)
EXPECTED = [LIGHTHOUSE, WINTER, DIV_PARA, NESTED_PARA, ENTITIES, POD_OPEN, POD_SORT]
EXPECTED += [POD_AFTER_CUT, FORTUNE, DICT_ENTRY]

# Fragments that must never reach the corpus: code, tables, skipped regions, short junk.
FORBIDDEN = [
    "ledger.write",
    "def spin",
    "inside a table cell",
    "script text",
    "style rule",
    "long title",
    "heading",
    "Too short",
    "preformatted block",
    "rot13",
    "my $verbatim",
    "HTML block lives",
    "for paragraph is also",
    "after_cut",
    "Short quip",
    "Ahab",
    "Fake dictionary metadata",
    "index page",
]


def _b64(n: int) -> str:
    out = ""
    while True:
        out = DICTD_ALPHABET[n % 64] + out
        n //= 64
        if n == 0:
            return out


def _dictd(entries: list[tuple[str, str]]) -> tuple[bytes, bytes]:
    data, index = b"", []
    for head, body in entries:
        raw = body.encode()
        index.append(f"{head}\t{_b64(len(data))}\t{_b64(len(raw))}\n")
        data += raw
    return gzip.compress(data, mtime=0), "".join(sorted(index)).encode()


def _bulk_paragraph(i: int) -> str:
    rng = random.Random(i)
    sentences: list[str] = []
    while len(" ".join(sentences)) < 260:
        a, b, c = rng.sample(WORDS, 3)
        sentences.append(f"The {a} near the {b} was quieter than the {c} on day {i}.")
    return " ".join(sentences)


BULK = [_bulk_paragraph(i) for i in range(150)]


def make_deb(tmp_path: Path, name: str, files: dict[str, str | bytes], version="1.0-1") -> Path:
    """Build a real .deb with dpkg-deb -b from ``files`` (path inside the package -> content)."""
    root = tmp_path / f"src-{name}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: Test <test@example.invalid>\nDescription: fake docs for corpus tests\n"
    )
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    out = tmp_path / f"{name}_{version}_all.deb"
    subprocess.run(
        [DPKG_DEB, "--root-owner-group", "-Zgzip", "-b", str(root), str(out)],
        check=True,
        capture_output=True,
    )
    return out


def fake_doc_files() -> dict[str, str | bytes]:
    dict_data, dict_index = _dictd(
        [
            ("00-database-info", "Fake dictionary metadata " * 20 + "\n"),
            (
                "lighthouse",
                "lighthouse\n\n   <architecture> A tall {tower} with a bright {light} at the\n"
                "   top, built on a rock or a cliff so that ships at sea can see it from far\n"
                "   away and steer clear of the dangerous shore during the long\n"
                "   dark and stormy winter nights.\n\n"
                "   (2001-01-01)\n\n",
            ),
        ]
    )
    bulk = "<html><body>" + "".join(f"<p>{p}</p>\n" for p in BULK) + "</body></html>"
    index_page = "<p>" + "This index page lists every term and must be skipped. " * 8 + "</p>"
    return {
        "usr/share/doc/interp-fake-doc/copyright": "Fake-Licence: free as in freedom\n",
        "usr/share/doc/interp-fake-doc/html/guide.html": (FIXTURES / "guide.html").read_text(),
        "usr/share/doc/interp-fake-doc/html/bulk.html": bulk,
        "usr/share/doc/interp-fake-doc/html/genindex.html": index_page,
        "usr/share/perl/pod/fakepod.pod": (FIXTURES / "fake.pod").read_text(),
        "usr/share/games/fortunes/harbour": (FIXTURES / "harbour").read_text(),
        "usr/share/games/fortunes/harbour.dat": bytes(range(256)) * 2,
        "usr/share/games/fortunes/off/rude": (
            "This rot13 offensive fortune file lives in the off folder, which fortunes-off uses "
            "for jokes that are encoded and offensive by design, so the corpus never reads it "
            "whatever it contains, however long and harmless the text inside it may look.\n%\n"
        ),
        "usr/share/dictd/fake.dict.dz": dict_data,
        "usr/share/dictd/fake.index": dict_index,
    }


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERP_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def fake_deb(tmp_path) -> Path:
    if DPKG_DEB is None:
        pytest.skip("dpkg-deb is not installed")
    return make_deb(tmp_path / "debs", "interp-fake-doc", fake_doc_files())


@pytest.fixture
def extra_deb(tmp_path) -> Path:
    if DPKG_DEB is None:
        pytest.skip("dpkg-deb is not installed")
    # Same WINTER paragraph, differently wrapped: normalisation + dedup must drop it.
    wrapped = WINTER.replace(" ", "\n   ", 5)
    html = f"<html><body><p>{wrapped}</p><p>{_bulk_paragraph(1000)}</p></body></html>"
    files = {
        "usr/share/doc/interp-fake-extra/copyright": "Extra licence\n",
        "usr/share/doc/interp-fake-extra/extra.html": html,
    }
    return make_deb(tmp_path / "debs", "interp-fake-extra", files, version="2:0.5")


def records(folder: Path) -> dict[str, list[dict]]:
    return {
        split: [
            json.loads(line)
            for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        for split in ("train", "heldout")
    }


def all_texts(folder: Path) -> list[str]:
    recs = records(folder)
    return [r["text"] for r in recs["train"] + recs["heldout"]]


def rule(text: str) -> bool:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) % 100 < 5


# --------------------------------------------------------------------------- extraction


def test_build_extracts_prose_from_every_format(tmp_path, fake_deb):
    out = tmp_path / "out"
    info = corpus.build(out, debs=[fake_deb], progress=False)
    texts = all_texts(out)
    for para in EXPECTED:
        assert para in texts, para[:60]
    for para in BULK:
        assert para in texts
    assert len(texts) == len(EXPECTED) + len(BULK)
    joined = "\n".join(texts)
    for fragment in FORBIDDEN:
        assert fragment not in joined, fragment
    assert all(r["source"] == "interp-fake-doc" for r in records(out)["train"])
    assert info["packages"][0]["name"] == "interp-fake-doc"


def test_duplicates_are_dropped_across_files_and_packages(tmp_path, fake_deb, extra_deb):
    out = tmp_path / "out"
    # Given out of order on purpose: packages are processed sorted by name.
    info = corpus.build(out, debs=[extra_deb, fake_deb], progress=False)
    recs = records(out)
    both = recs["train"] + recs["heldout"]
    winters = [r for r in both if r["text"] == WINTER]
    assert len(winters) == 1
    assert winters[0]["source"] == "interp-fake-doc"
    assert len({r["text"] for r in both}) == len(both)
    by_name = {p["name"]: p for p in info["packages"]}
    assert by_name["interp-fake-doc"]["duplicates_dropped"] == 1  # WINTER twice in guide.html
    assert by_name["interp-fake-extra"]["duplicates_dropped"] == 1
    assert sum(by_name["interp-fake-extra"]["paragraphs"].values()) == 1


def test_heldout_split_follows_the_sha256_rule(tmp_path, fake_deb):
    out = tmp_path / "out"
    info = corpus.build(out, debs=[fake_deb], progress=False)
    recs = records(out)
    assert recs["heldout"] and recs["train"]
    assert all(rule(r["text"]) for r in recs["heldout"])
    assert not any(rule(r["text"]) for r in recs["train"])
    assert all(corpus.is_heldout(r["text"]) for r in recs["heldout"])
    files = info["files"]
    assert files["heldout.jsonl"]["paragraphs"] == len(recs["heldout"])
    assert files["train.jsonl"]["words"] == sum(len(r["text"].split()) for r in recs["train"])
    pkg = info["packages"][0]
    assert pkg["paragraphs"] == {"train": len(recs["train"]), "heldout": len(recs["heldout"])}


def test_rebuild_is_byte_identical(tmp_path, fake_deb, extra_deb):
    a, b = tmp_path / "a", tmp_path / "b"
    corpus.build(a, debs=[fake_deb, extra_deb], progress=False)
    corpus.build(b, debs=[extra_deb, fake_deb], progress=False)
    names_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    names_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    assert names_a == names_b
    assert "licenses/interp-fake-extra.copyright" in names_a
    for name in names_a:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert corpus.corpus_hash(a) == corpus.corpus_hash(b)


def test_manifest_records_packages_licences_and_hashes(tmp_path, fake_deb, extra_deb):
    out = tmp_path / "out"
    corpus.build(out, debs=[fake_deb, extra_deb], progress=False)
    m = corpus.manifest(out)
    assert m["builder_version"] == corpus.BUILDER_VERSION
    assert "% 100 < 5" in m["split_rule"]
    extra = next(p for p in m["packages"] if p["name"] == "interp-fake-extra")
    assert extra["version"] == "2:0.5"
    assert extra["deb"] == extra_deb.name
    assert extra["deb_sha256"] == hashlib.sha256(extra_deb.read_bytes()).hexdigest()
    assert extra["license"] == "licenses/interp-fake-extra.copyright"
    assert (out / extra["license"]).read_text() == "Extra licence\n"
    assert set(extra["words"]) == {"train", "heldout"}
    for name, f in m["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == f["sha256"]
    # A different corpus gets a different hash.
    other = tmp_path / "other"
    corpus.build(other, debs=[fake_deb], progress=False)
    assert corpus.corpus_hash(other) != corpus.corpus_hash(out)
    assert len(corpus.corpus_hash(out)) == 64


def test_interrupted_build_never_looks_complete(tmp_path, fake_deb, extra_deb, monkeypatch):
    """A build killed while writing: a first build leaves nothing that looks built; a
    rebuild leaves the previous corpus byte for byte (never a mix of old and new files)."""
    out = tmp_path / "out"
    real_write = corpus._write
    order: list[str] = []

    def recording_write(staged, name, data):
        order.append(name)
        real_write(staged, name, data)

    def dying_write(staged, name, data):
        if name == "heldout.jsonl":
            raise KeyboardInterrupt  # the build is killed half-way through writing
        real_write(staged, name, data)

    with monkeypatch.context() as mp:
        mp.setattr(corpus, "_write", dying_write)
        with pytest.raises(KeyboardInterrupt):
            corpus.build(out, debs=[fake_deb], progress=False)
    assert not (out / "manifest.json").exists()
    assert not corpus.is_built(out)
    with pytest.raises(InterpError, match="not built"):
        corpus.load_texts(path=out)
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]

    corpus.build(out, debs=[fake_deb], progress=False)
    assert corpus.is_built(out)
    with monkeypatch.context() as mp:
        mp.setattr(corpus, "_write", recording_write)
        corpus.build(out, debs=[fake_deb], progress=False)
    assert order[-1] == "manifest.json"
    assert order.count("manifest.json") == 1

    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    texts = corpus.load_texts(path=out)
    with monkeypatch.context() as mp:
        mp.setattr(corpus, "_write", dying_write)
        with pytest.raises(KeyboardInterrupt):  # a rebuild with more text, killed
            corpus.build(out, debs=[fake_deb, extra_deb], progress=False)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert corpus.is_built(out) and corpus.load_texts(path=out) == texts
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name or ".old" in p.name]


def test_default_location_and_load_texts(tmp_path, fake_deb):
    assert not corpus.is_built()
    corpus.build(debs=[fake_deb], progress=False)
    folder = tmp_path / "cache" / "corpus" / corpus.CORPUS_NAME
    assert corpus.default_dir() == folder
    assert corpus.is_built()
    recs = records(folder)
    assert corpus.load_texts() == [r["text"] for r in recs["train"]]
    assert corpus.load_texts("heldout") == [r["text"] for r in recs["heldout"]]
    assert corpus.manifest()["files"]["train.jsonl"]["paragraphs"] == len(recs["train"])
    for empty in ("", " "):  # never the current folder read as a corpus (issue 28)
        with pytest.raises(InterpError, match="the corpus path is empty"):
            corpus.load_texts(path=empty)


def test_is_built_rejects_truncated_outputs(tmp_path, fake_deb):
    out = tmp_path / "out"
    corpus.build(out, debs=[fake_deb], progress=False)
    with open(out / "train.jsonl", "ab") as f:
        f.write(b"{}\n")
    assert not corpus.is_built(out)


def test_package_without_prose_is_an_error(tmp_path):
    if DPKG_DEB is None:
        pytest.skip("dpkg-deb is not installed")
    deb = make_deb(tmp_path, "interp-empty", {"usr/share/doc/interp-empty/copyright": "x\n"})
    with pytest.raises(InterpError, match="no prose"):
        corpus.build(tmp_path / "out", debs=[deb], progress=False)
    with pytest.raises(InterpError, match="not found"):
        corpus.build(tmp_path / "out", debs=[tmp_path / "missing.deb"], progress=False)


def test_progress_goes_to_stderr_only(tmp_path, fake_deb, capsys):
    corpus.build(tmp_path / "a", debs=[fake_deb], progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "corpus" in captured.err
    corpus.build(tmp_path / "b", debs=[fake_deb], progress=False)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# --------------------------------------------------------------------------- apt-get


def test_download_uses_apt_get_in_a_temp_dir(tmp_path, fake_deb, monkeypatch):
    real_run = subprocess.run
    calls: list[tuple[list[str], Path]] = []

    def fake_run(cmd, *args, cwd=None, **kwargs):
        if cmd[0] == "apt-get":
            calls.append((list(cmd), Path(cwd)))
            shutil.copy(fake_deb, Path(cwd) / fake_deb.name)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return real_run(cmd, *args, cwd=cwd, **kwargs)

    monkeypatch.setattr(corpus.subprocess, "run", fake_run)
    info = corpus.build(tmp_path / "out", packages=["interp-fake-doc"], progress=False)
    assert calls and calls[0][0] == ["apt-get", "download", "interp-fake-doc"]
    cwd = calls[0][1]
    assert cwd != Path.cwd() and not cwd.exists()  # a temp dir, cleaned up afterwards
    assert info["packages"][0]["deb"] == fake_deb.name


def test_apt_get_failure_says_to_run_update(tmp_path, monkeypatch):
    def failing_run(cmd, *args, **kwargs):
        assert cmd[0] == "apt-get"
        return subprocess.CompletedProcess(cmd, 100, "", "E: Unable to locate package nope\n")

    monkeypatch.setattr(corpus.subprocess, "run", failing_run)
    with pytest.raises(InterpError, match="apt-get update") as err:
        corpus.build(tmp_path / "out", packages=["nope"], progress=False)
    assert "Unable to locate package nope" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out" / "manifest.json").exists()


# --------------------------------------------------------------------------- reading errors


def test_load_texts_without_corpus_explains_how_to_build(tmp_path):
    with pytest.raises(InterpError, match=r"interp corpus build.*make setup"):
        corpus.load_texts()
    with pytest.raises(InterpError, match="not built"):
        corpus.manifest()
    with pytest.raises(InterpError, match="not built"):
        corpus.corpus_hash()
    assert not corpus.is_built(tmp_path / "nowhere")


def test_unknown_split_is_an_error(tmp_path):
    with pytest.raises(InterpError, match="unknown corpus split 'test'"):
        corpus.load_texts("test")
    f = tmp_path / "t.txt"
    f.write_text("one line\n")
    with pytest.raises(InterpError, match="unknown corpus split"):
        corpus.load_texts("validation", text_file=f)


# --------------------------------------------------------------------------- user text files


def _split_both(path: Path) -> tuple[list[str], list[str]]:
    return corpus.load_texts("train", text_file=path), corpus.load_texts("heldout", text_file=path)


def test_text_file_jsonl(tmp_path):
    docs = [f"Document number {i} talks about the sea." for i in range(200)]
    f = tmp_path / "docs.jsonl"
    f.write_text("".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(docs)))
    train, heldout = _split_both(f)
    assert sorted(train + heldout) == sorted(docs)
    assert heldout and all(rule(d) for d in heldout)
    assert not any(rule(d) for d in train)
    assert train == [d for d in docs if not rule(d)]  # file order kept


def test_text_file_jsonl_malformed_line_names_it(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"text": "fine"}\n\n{"text": "fine too"}\n{"text": broken\n')
    with pytest.raises(InterpError, match="line 4"):
        corpus.load_texts(text_file=f)
    f.write_text('{"text": "fine"}\n["not", "an", "object"]\n')
    with pytest.raises(InterpError, match='line 2.*"text"'):
        corpus.load_texts(text_file=f)
    f.write_text('{"body": "no text key"}\n')
    with pytest.raises(InterpError, match="line 1"):
        corpus.load_texts(text_file=f)


def test_text_file_paragraphs(tmp_path):
    paras = [f"Paragraph {i} begins here\nand continues on a second line." for i in range(200)]
    f = tmp_path / "book.txt"
    f.write_text("\n\n".join(paras) + "\n")
    train, heldout = _split_both(f)
    assert sorted(train + heldout) == sorted(paras)
    assert heldout and all(rule(p) for p in heldout)


def test_text_file_lines(tmp_path):
    lines = [f"Line {i} is its own document." for i in range(200)]
    f = tmp_path / "lines.txt"
    f.write_text("\n".join(lines) + "\n\n")  # trailing blank lines do not make paragraphs
    train, heldout = _split_both(f)
    assert sorted(train + heldout) == sorted(lines)
    assert not any(rule(d) for d in train)


def test_text_file_errors(tmp_path):
    with pytest.raises(InterpError, match="cannot read"):
        corpus.load_texts(text_file=tmp_path / "missing.txt")
    with pytest.raises(InterpError, match="cannot read"):
        corpus.load_texts(text_file=tmp_path)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n")
    with pytest.raises(InterpError, match="no text"):
        corpus.load_texts(text_file=empty)
    binary = tmp_path / "latin1.txt"
    binary.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(InterpError, match="not UTF-8"):
        corpus.load_texts(text_file=binary)
    few = tmp_path / "few.txt"
    docs = [f"doc {i}" for i in range(40)]
    few.write_text("\n".join(d for d in docs if not rule(d)) + "\n")
    with pytest.raises(InterpError, match="no heldout documents"):
        corpus.load_texts("heldout", text_file=few)
    for err_path in (tmp_path / "missing.txt",):
        with pytest.raises(InterpError) as err:
            corpus.load_texts(text_file=err_path)
        assert "\n" not in str(err.value)


def test_text_file_hash(tmp_path):
    f = tmp_path / "t.txt"
    f.write_bytes(b"hello\n")
    assert corpus.text_file_hash(f) == hashlib.sha256(b"hello\n").hexdigest()
    with pytest.raises(InterpError, match="cannot read"):
        corpus.text_file_hash(tmp_path / "nope.txt")


# --------------------------------------------------------------------------- filters


def test_is_prose_filters():
    assert corpus.is_prose(LIGHTHOUSE)
    assert not corpus.is_prose("A short but perfectly fine sentence.")
    code = "x = {k: v for k, v in d.items() if v}; y = [f(a) for a in b]; z = x[0] + y[1] * 2; " * 3
    assert not corpus.is_prose(corpus.normalise(code))
    korean = "펄은 내부적으로 유니코드를 문자 표현을 위해 사용합니다. " * 12
    assert not corpus.is_prose(korean)
    sigils = "Set $foo to the sum of $bar and $baz when $qux is true for the $row. " * 4
    assert not corpus.is_prose(sigils)  # mostly words and letters, but too many code symbols
    ids = " ".join(f"PERL_MAGIC_thing_{i}," for i in range(40))
    assert not corpus.is_prose(ids)
    links = " ".join(f"See http://example.org/page{i} for more." for i in range(10))
    assert not corpus.is_prose(links)


def test_normalise_and_pod_inline():
    assert corpus.normalise("  a\n\tb\u00a0 c  ") == "a b c"
    assert corpus.normalise("cafe\u0301") == "café"
    assert corpus._pod_inline("B<I<nested>> C<< a->b >> E<lt>E<gt> X<gone>Z<>L<text|url>") == (
        "nested a->b <> text"
    )
    assert corpus._pod_inline('L</"Section"> and L<perlop>') == '"Section" and perlop'


def test_fortune_table_is_rejected_but_prose_kept():
    raw = (FIXTURES / "harbour").read_bytes()
    paras = [corpus.normalise(p) for p in corpus._fortune_paragraphs(raw)]
    assert FORTUNE in paras
    assert not any("Ahab" in p for p in paras)
    assert os.path.getsize(FIXTURES / "harbour") > 0


# ------------------------------------------------------------------ bad inputs


def _damaged_corpus(ctx: Ctx) -> str:
    """A corpus folder whose train.jsonl was edited after its manifest was written."""
    import hashlib

    from interp.data.corpus import BUILDER_VERSION

    folder = ctx.tmp / "corpus"
    folder.mkdir()
    files = {}
    for name, text in (("train.jsonl", "a"), ("heldout.jsonl", "b")):
        data = json.dumps({"text": text, "source": "x"}).encode() + b"\n"
        files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                       "paragraphs": 1, "words": 1}
        (folder / name).write_bytes(data.replace(b'"a"', b'"e"'))
    (folder / "manifest.json").write_text(json.dumps({"builder_version": BUILDER_VERSION,
                                                      "files": files}))
    return str(folder)


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("corpus-info-missing", lambda c: ["corpus", "info", "--path", str(c.tmp / "none")],
         "not built"),
    Case("corpus-info-empty-path", lambda c: ["corpus", "info", "--path", ""],
         "the corpus path is empty"),
    Case("corpus-info-edited-corpus", lambda c: ["corpus", "info", "--path", _damaged_corpus(c)],
         "damaged (train.jsonl: sha256 mismatch)"),
    Case("corpus-build-unwritable-out", lambda c: ["corpus", "build", "--out", _under_file(c)],
         "cannot create output folder"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("corpus-build-empty-out", lambda c: ["corpus", "build", "--out", ""],
         "empty output folder name"),
]
