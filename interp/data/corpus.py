"""The default offline text corpus: real English prose from Debian documentation packages.

Hub datasets are unreachable on the machines interp runs on, so the tuned lens and SAE
trainers stream a corpus that any Debian machine can rebuild from its package mirror.

Sources
    :data:`DEFAULT_PACKAGES` are fetched with ``apt-get download`` (never installed: each
    ``.deb`` is unpacked with ``dpkg-deb -x`` into a temporary folder) and read with one
    extractor per kind of file:

    * HTML manuals (python3.11-doc, postgresql-doc-15, debian-handbook, ...): the text of
      every ``<p>`` element and of DocBook's ``<div class="para">``, parsed with the
      standard library's ``html.parser``; ``<pre>``, ``<table>``, scripts and styles are
      skipped. Indexes and search pages are ignored.
    * POD (perl-doc): ordinary paragraphs only; command, verbatim (code) and ``=begin`` /
      ``=for`` paragraphs are dropped and formatting codes (``C<...>``, ``L<...>``,
      ``E<gt>``...) are rendered to plain text.
    * fortune files (fortunes, fortunes-min): ``%``-separated entries.
    * dictd databases (dict-jargon, dict-foldoc, dict-devil): the gzip/dictzip ``.dict.dz``
      entries, located through the ``.index`` file and split into blank-line paragraphs;
      ``{cross references}`` lose their braces.

Filtering
    Every paragraph is whitespace-normalised (NFC, runs of whitespace become one space)
    and kept only if it looks like prose: at least :data:`MIN_CHARS` characters and
    :data:`MIN_WORDS` words, mostly letters, few code symbols, mostly plain words, and (for
    plain-text sources) not laid out as a table. Paragraphs are then deduplicated by the
    sha256 of their normalised text across all packages; the first occurrence wins, in a
    deterministic order (packages sorted by name, files by path).

Split
    A paragraph is held out iff ``int(sha256(text)[:8], 16) % 100 < 5`` (about 5%). The rule
    depends only on the text, so it is stable across rebuilds and package updates, and
    :func:`load_texts` applies the same rule to a user's own text file.

Output
    ``train.jsonl`` and ``heldout.jsonl`` (one ``{"text": ..., "source": package}`` per
    line), ``licenses/PKG.copyright`` and, written last, ``manifest.json`` (package
    versions, ``.deb`` hashes, counts, output hashes, builder version, split rule). The
    files are staged beside the previous corpus and renamed into place together once all
    are written, so an interrupted build or a full disk leaves the previous corpus as it
    was (a write error is one line), never a mix. Two builds from the same ``.deb`` files
    are byte-identical. Reading the corpus (:func:`load_texts`) checks every file against the
    manifest's sizes and sha256 and its builder version (:func:`corpus_problem`): a
    truncated, edited or other version's corpus is refused in one line naming the command
    that rebuilds it, never used.

Licences
    The text stays under the free licences of its Debian packages (PSF licence for the
    Python docs, Artistic/GPL for Perl's, the PostgreSQL licence, GPL for the Debian
    Administrator's Handbook, public domain for the Jargon File and The Devil's
    Dictionary, GFDL for FOLDOC, various for the fortunes). Each package's
    ``/usr/share/doc/PKG/copyright`` is copied to ``licenses/PKG.copyright`` next to the
    corpus, and the manifest names it.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

from interp.errors import InterpError
from interp.runs.atomic import write_error
from interp.runs.manifest import sha256_file
from interp.runs.paths import cache_dir
from interp.schema.settings import Cli, Config, setting

if TYPE_CHECKING:
    from interp.runs.outdir import OutDir

__all__ = [
    "BUILDER_VERSION",
    "CORPUS_NAME",
    "DEFAULT_PACKAGES",
    "HELDOUT_PERCENT",
    "MIN_CHARS",
    "MIN_WORDS",
    "NOT_BUILT",
    "SPLITS",
    "SPLIT_RULE",
    "build",
    "check_corpus",
    "corpus_hash",
    "corpus_problem",
    "default_dir",
    "extract_paragraphs",
    "is_heldout",
    "is_built",
    "is_prose",
    "load_texts",
    "manifest",
    "normalise",
    "text_file_hash",
]

CORPUS_NAME = "debian-docs-v1"
#: Bumped whenever extraction, filtering or the output format changes.
BUILDER_VERSION = 1
#: Debian 12 (bookworm) package names: 46.5k paragraphs, 2.8M words, 3.8M SmolLM2 tokens
#: after filtering; download + build takes about 20-30 s on 2 cores.
DEFAULT_PACKAGES: tuple[str, ...] = (
    "debian-handbook",
    "debian-reference-en",
    "dict-devil",
    "dict-foldoc",
    "dict-jargon",
    "fortunes",
    "fortunes-min",
    "perl-doc",
    "postgresql-doc-15",
    "python3.11-doc",
)
SPLITS = ("train", "heldout")
HELDOUT_PERCENT = 5
SPLIT_RULE = f"heldout iff int(sha256(utf8 text).hexdigest()[:8], 16) % 100 < {HELDOUT_PERCENT}"
MIN_CHARS = 200
MIN_WORDS = 20

_MANIFEST = "manifest.json"
_FILES = {split: f"{split}.jsonl" for split in SPLITS}
_LICENSES = "licenses"


# --------------------------------------------------------------------------- paths


def default_dir() -> Path:
    """Where the default corpus lives: ``cache_dir()/corpus/debian-docs-v1``."""
    return cache_dir() / "corpus" / CORPUS_NAME


def _dir(path: str | Path | None) -> Path:
    if path is None:
        return default_dir()
    if not str(path).strip():  # Path("") is ".": never read the current folder as a corpus
        raise InterpError("the corpus path is empty: give a folder, or none for the default")
    return Path(path).expanduser()


# --------------------------------------------------------------------------- text rules


def normalise(text: str) -> str:
    """NFC-normalise and collapse every run of whitespace to one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_heldout(text: str) -> bool:
    """The fixed split rule: held out iff ``int(sha256(text)[:8], 16) % 100 < 5``."""
    return int(_sha256(text)[:8], 16) % 100 < HELDOUT_PERCENT


_CODE_CHARS = frozenset("{}[]<>=;$@#\\|^~`*&%")
_WORD_RE = re.compile(r"^[\"'(\[“‘]*[A-Za-z][A-Za-z'’-]*[\"')\]”’.,;:!?]*$")


def is_prose(text: str) -> bool:
    """Whether a normalised paragraph looks like running prose rather than code or junk."""
    if len(text) < MIN_CHARS:
        return False
    words = text.split()
    if len(words) < MIN_WORDS:
        return False
    chars = "".join(words)
    letters = sum(c.isalpha() for c in chars)
    if letters < 0.75 * len(chars):
        return False
    if sum(c.isascii() or c < "\u0250" for c in chars if c.isalpha()) < 0.9 * letters:
        return False  # not (mostly) Latin script: a translation
    if sum(c in _CODE_CHARS for c in chars) > 0.05 * len(chars):
        return False
    if sum("://" in w or w.startswith("www.") for w in words) > 0.1 * len(words):
        return False  # a list of links
    plain = sum(bool(_WORD_RE.match(w)) for w in words)
    if plain < 0.6 * len(words):
        return False
    # Reject lists of identifiers or URLs: prose has short words on average.
    return letters / len(words) <= 9.0


def _looks_tabular(raw: str) -> bool:
    """Plain-text layout check: many lines with column gaps (3+ spaces or a tab)."""
    lines = [line for line in raw.splitlines() if line.strip()]
    if len(lines) < 3:
        return False
    gaps = sum(bool(re.search(r"\S(?: {3,}|\t)\S", line)) for line in lines)
    return gaps > 0.3 * len(lines)


# --------------------------------------------------------------------------- extractors


class _ParagraphParser(HTMLParser):
    """Collects the text of paragraph elements, skipping code, tables and scripts."""

    _VOID = frozenset(
        "area base br col embed hr img input link meta param source track wbr".split()
    )
    _SKIP = frozenset("pre script style table head title svg math".split())
    _BREAK = frozenset("br dd dt li ul ol dl div blockquote tr td th h1 h2 h3 h4 h5 h6".split())

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._stack: list[tuple[str, str]] = []  # (tag, kind) with kind in {"para","skip",""}
        self._paras = 0
        self._skips = 0
        self._buf: list[str] = []
        self.paragraphs: list[str] = []

    @staticmethod
    def _is_para(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag == "p":
            return True
        if tag == "div":
            classes = (dict(attrs).get("class") or "").split()
            return "para" in classes
        return False

    def _flush(self) -> None:
        text = "".join(self._buf)
        self._buf = []
        if text.strip():
            self.paragraphs.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._VOID:
            if tag == "br":
                self.handle_data(" ")
            return
        kind = "skip" if tag in self._SKIP else "para" if self._is_para(tag, attrs) else ""
        if kind == "para":
            self._flush()  # a nested paragraph ends the text gathered so far
            self._paras += 1
        elif kind == "skip":
            self._skips += 1
        elif tag in self._BREAK:
            self.handle_data(" ")
        self._stack.append((tag, kind))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.handle_data(" ")

    def handle_endtag(self, tag: str) -> None:
        if not any(t == tag for t, _ in self._stack):
            return  # stray end tag
        while self._stack:
            t, kind = self._stack.pop()
            if kind == "para":
                self._flush()
                self._paras -= 1
            elif kind == "skip":
                self._skips -= 1
            elif t in self._BREAK:
                self.handle_data(" ")
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._paras and not self._skips:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _html_paragraphs(raw: bytes) -> list[str]:
    parser = _ParagraphParser()
    parser.feed(raw.decode("utf-8", errors="replace"))
    parser.close()
    return parser.paragraphs


_POD_OPEN = re.compile(r"([A-Z])(<+)")


def _pod_entity(name: str) -> str:
    name = name.strip()
    special = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/"}
    if name in special:
        return special[name]
    if name.isdigit():
        return chr(int(name))
    if name.lower().startswith("0x"):
        return chr(int(name, 16))
    return html.unescape(f"&{name};")


def _pod_link(inner: str) -> str:
    if "|" in inner:
        return inner.split("|", 1)[0]
    if "://" in inner:
        return inner
    if "/" in inner:
        name, section = inner.split("/", 1)
        section = section.strip().strip('"')
        return f'"{section}" in {name}' if name else f'"{section}"'
    return inner


def _pod_inline(text: str) -> str:
    """Render POD formatting codes (``B<>``, ``C<< >>``, ``L<>``, ``E<>``...) as plain text."""

    def parse(i: int, closer: re.Pattern[str] | None) -> tuple[str, int]:
        out: list[str] = []
        while i < len(text):
            if closer is not None:
                m = closer.match(text, i)
                if m:
                    return "".join(out), m.end()
            m = _POD_OPEN.match(text, i)
            if m:
                code, n = m.group(1), len(m.group(2))
                start = m.end()
                if n == 1:
                    inner_closer = re.compile(">")
                else:
                    inner_closer = re.compile(r"\s*" + ">" * n)
                    while start < len(text) and text[start].isspace():
                        start += 1
                inner, i = parse(start, inner_closer)
                if code in "XZ":
                    continue
                if code == "E":
                    out.append(_pod_entity(inner))
                elif code == "L":
                    out.append(_pod_link(inner))
                else:
                    out.append(inner)
                continue
            out.append(text[i])
            i += 1
        return "".join(out), i

    return parse(0, None)[0]


def _pod_paragraphs(raw: bytes) -> list[str]:
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    blocks = re.split(r"\n[ \t]*\n", text)
    out: list[str] = []
    in_pod = True  # a .pod file starts in POD; after =cut comes code until the next command
    begin_target: str | None = None
    for block in blocks:
        if not block.strip():
            continue
        block = block.lstrip("\n")
        command = re.match(r"=([a-zA-Z]\w*)\s*(\S*)", block)
        if begin_target is not None:
            if command and command.group(1) == "end":
                begin_target = None
            continue
        if command:
            name = command.group(1)
            in_pod = name != "cut"
            if name == "begin":
                begin_target = command.group(2) or ""
            continue
        if not in_pod or block[0] in " \t":
            continue  # code, or a verbatim (code) paragraph
        out.append(_pod_inline(block))
    return out


def _fortune_paragraphs(raw: bytes) -> list[str]:
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    entries = re.split(r"^%[ \t]*$", text, flags=re.M)
    return [e for e in entries if e.strip() and not _looks_tabular(e)]


_FOLDOC_TAG = re.compile(r"^\s*<[a-z][^>]*>\s*")
_BRACED = re.compile(r"\{([^{}]*)\}")


def _dict_paragraphs(raw: bytes, index: bytes) -> list[str]:
    """Paragraphs of a dictd database: ``raw`` is the (dictzip = gzip) ``.dict.dz``."""
    data = gzip.decompress(raw)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def b64(s: str) -> int:
        value = 0
        for ch in s:
            value = value * 64 + alphabet.index(ch)
        return value

    spans: set[tuple[int, int]] = set()
    for line in index.decode("utf-8", errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or parts[0].startswith(("00-database", "00database")):
            continue
        try:
            spans.add((b64(parts[1]), b64(parts[2])))
        except ValueError:
            continue
    out: list[str] = []
    for offset, length in sorted(spans):
        entry = data[offset : offset + length].decode("utf-8", errors="replace")
        for block in re.split(r"\n[ \t]*\n", entry):
            if not block.strip() or _looks_tabular(block):
                continue
            block = _FOLDOC_TAG.sub("", block)
            for _ in range(3):  # nested braces, innermost first
                block = _BRACED.sub(r"\1", block)
            out.append(block)
    return out


_SKIP_HTML = re.compile(r"(^|/)(genindex[^/]*|search|py-modindex|modindex|bookindex)\.html?$")


def _extractor(rel: str, files: dict[str, Path]) -> Callable[[], list[str]] | None:
    """The extractor for one unpacked file (path ``rel`` inside the package), if any."""
    path = files[rel]
    name = rel.rsplit("/", 1)[-1]
    if rel.endswith((".html", ".htm")):
        if _SKIP_HTML.search(rel) or "/_static/" in rel:
            return None
        # debian-handbook ships translations next to en-US; keep English only.
        m = re.search(r"/html/([a-z]{2}-[A-Z]{2})/", rel)
        if m and m.group(1) != "en-US":
            return None
        return lambda: _html_paragraphs(path.read_bytes())
    if rel.endswith(".pod"):
        return lambda: _pod_paragraphs(path.read_bytes())
    if rel.startswith("usr/share/games/fortunes/") and "." not in name and "/off/" not in rel:
        # fortunes-off's files (under off/) are rot13 and offensive by design: never read.
        return lambda: _fortune_paragraphs(path.read_bytes())
    if rel.endswith(".dict.dz"):
        index = files.get(rel[: -len(".dict.dz")] + ".index")
        if index is None:
            return None
        return lambda: _dict_paragraphs(path.read_bytes(), index.read_bytes())
    return None


def _package_files(root: Path) -> dict[str, Path]:
    """Regular files (not symlinks) under ``root``, keyed by sorted posix relative path."""
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if p.is_file() and not p.is_symlink():
                files[p.relative_to(root).as_posix()] = p
    return dict(sorted(files.items()))


def extract_paragraphs(root: Path) -> Iterator[str]:
    """Normalised prose paragraphs of one unpacked package, in deterministic order."""
    files = _package_files(root)
    for rel in files:
        extract = _extractor(rel, files)
        if extract is None:
            continue
        for para in extract():
            text = normalise(para)
            if is_prose(text):
                yield text


# --------------------------------------------------------------------------- build


_file_sha256 = sha256_file


def _write(staged: OutDir, name: str, data: bytes) -> None:
    """Stage one output file of the corpus (renamed into place with the others)."""
    staged.write_bytes(name, data)


def _write_file(path: Path, data: bytes, shown: Path) -> None:
    """Write a file inside a staged folder; a failure names ``shown`` (its final place)."""
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise write_error(shown, exc) from None


def _run(cmd: list[str], *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise InterpError(f"`{cmd[0]}` not found: building the corpus needs Debian's apt") from e


def _download(packages: Sequence[str], dest: Path) -> list[Path]:
    result = _run(["apt-get", "download", *packages], cwd=dest)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("E:")]
        err = " ".join(" ".join(errors or result.stderr.splitlines()[-2:]).split())[:300]
        raise InterpError(
            f"`apt-get download` of the corpus packages failed ({err}); "
            "run `apt-get update` (as root) and try again, or pass packages this release has"
        )
    debs: list[Path] = []
    for pkg in packages:
        name = pkg.split("=", 1)[0]
        found = sorted(dest.glob(f"{name}_*.deb"))
        if len(found) != 1:
            raise InterpError(
                f"`apt-get download {pkg}` left {len(found)} .deb files; run `apt-get update`"
            )
        debs.append(found[0])
    return debs


def _deb_field(deb: Path, field: str) -> str:
    result = _run(["dpkg-deb", "-f", str(deb), field])
    if result.returncode != 0:
        raise InterpError(f"{deb} is not a readable .deb: {' '.join(result.stderr.split())}")
    return result.stdout.strip()


def _unpack(deb: Path, dest: Path) -> None:
    result = _run(["dpkg-deb", "-x", str(deb), str(dest)])
    if result.returncode != 0:
        raise InterpError(f"cannot unpack {deb}: {' '.join(result.stderr.split())}")


def _find_copyright(root: Path, package: str) -> Path | None:
    own = root / "usr" / "share" / "doc" / package / "copyright"
    if own.is_file():
        return own
    others = sorted((root / "usr" / "share" / "doc").glob("*/copyright"))
    return others[0] if others else None


def _jsonl(records: Iterable[tuple[str, str]]) -> bytes:
    lines = (json.dumps({"text": t, "source": s}, ensure_ascii=False) + "\n" for t, s in records)
    return "".join(lines).encode("utf-8")


def build(
    out_dir: Path | None = None,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    *,
    progress: bool = True,
    debs: Sequence[Path] | None = None,
) -> dict:
    """Build the corpus into ``out_dir`` (default :func:`default_dir`) and return its manifest.

    ``packages`` are fetched with ``apt-get download`` (``NAME`` or ``NAME=VERSION``). If
    ``debs`` is given, those local ``.deb`` files are used instead and nothing is
    downloaded. Outputs are staged and renamed into place together (``manifest.json`` last): a
    write error (a full disk) is one line and leaves the previous corpus as it was.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    out = _dir(out_dir)
    if debs is None and not packages:
        raise InterpError("no packages to build the corpus from")
    from interp.runs.outdir import check_creatable

    check_creatable(out)  # before minutes of downloads, not after
    if debs is None and shutil.which("apt-get") is None:  # said before any progress bar
        raise InterpError("`apt-get` not found: building the corpus needs Debian's apt")
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]corpus[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not progress,
        transient=False,
    )
    with tempfile.TemporaryDirectory(prefix="interp-corpus-") as tmp_name, bar:
        tmp = Path(tmp_name)
        if debs is None:
            task = bar.add_task("apt-get download", total=1)
            (tmp / "debs").mkdir()
            deb_paths = _download(list(packages), tmp / "debs")
            bar.advance(task)
        else:
            deb_paths = [Path(d) for d in debs]
            for d in deb_paths:
                if not d.is_file():
                    raise InterpError(f".deb file not found: {d}")
        infos = []
        for deb in deb_paths:
            name = _deb_field(deb, "Package")
            infos.append((name, deb))
        infos.sort(key=lambda item: item[0])
        names = [n for n, _ in infos]
        if len(set(names)) != len(names):
            raise InterpError(f"the same package was given twice: {sorted(names)}")

        seen: set[str] = set()
        records: dict[str, list[tuple[str, str]]] = {s: [] for s in SPLITS}
        package_info: list[dict] = []
        licences: dict[str, bytes] = {}
        task = bar.add_task("extracting", total=len(infos))
        for name, deb in infos:
            bar.update(task, description=f"extracting {name}")
            root = tmp / "unpacked" / name
            root.mkdir(parents=True)
            _unpack(deb, root)
            counts = {s: 0 for s in SPLITS}
            words = {s: 0 for s in SPLITS}
            duplicates = 0
            for text in extract_paragraphs(root):
                digest = _sha256(text)
                if digest in seen:
                    duplicates += 1
                    continue
                seen.add(digest)
                split = "heldout" if int(digest[:8], 16) % 100 < HELDOUT_PERCENT else "train"
                records[split].append((text, name))
                counts[split] += 1
                words[split] += len(text.split())
            if not sum(counts.values()):
                raise InterpError(f"package {name} gave no prose paragraphs; no extractor fits it")
            copyright_file = _find_copyright(root, name)
            licence_rel = None
            if copyright_file is not None:
                licence_rel = f"{_LICENSES}/{name}.copyright"
                licences[licence_rel] = copyright_file.read_bytes()
            package_info.append(
                {
                    "name": name,
                    "version": _deb_field(deb, "Version"),
                    "deb": deb.name,
                    "deb_sha256": _file_sha256(deb),
                    "paragraphs": counts,
                    "words": words,
                    "duplicates_dropped": duplicates,
                    "license": licence_rel,
                }
            )
            shutil.rmtree(root)
            bar.advance(task)

        task = bar.add_task("writing", total=len(SPLITS) + 1)
        from interp.runs.outdir import OutDir

        # Staged beside the previous corpus and renamed into place together once all are
        # written: a full disk or a kill leaves the previous corpus as it was, no part files.
        with OutDir(out) as staged:
            lic_dir = staged.stage_dir(_LICENSES)
            try:
                lic_dir.mkdir()
            except OSError as exc:
                raise write_error(out / _LICENSES, exc) from None
            for rel, data in licences.items():
                _write_file(lic_dir / Path(rel).name, data, out / rel)
            files: dict[str, dict] = {}
            for split in SPLITS:
                data = _jsonl(records[split])
                _write(staged, _FILES[split], data)
                files[_FILES[split]] = {
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "bytes": len(data),
                    "paragraphs": len(records[split]),
                    "words": sum(len(t.split()) for t, _ in records[split]),
                }
                bar.advance(task)
            result = {
                "name": CORPUS_NAME,
                "builder_version": BUILDER_VERSION,
                "split_rule": SPLIT_RULE,
                "filters": {
                    "min_chars": MIN_CHARS,
                    "min_words": MIN_WORDS,
                    "dedup": "sha256 of the normalised paragraph, first occurrence kept",
                },
                "packages": package_info,
                "files": files,
            }
            data = (json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False)
                    + "\n").encode()
            _write(staged, _MANIFEST, data)
        bar.advance(task)
    return result


# --------------------------------------------------------------------------- reading


def manifest(path: str | Path | None = None) -> dict:
    """The manifest of a built corpus (default location unless ``path``)."""
    folder = check_corpus(path)
    return json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))


def is_built(path: str | Path | None = None) -> bool:
    """Whether an intact corpus is at ``path``: its manifest, every file it lists with its
    size and sha256, and this builder's version (:func:`corpus_problem` finds nothing)."""
    return corpus_problem(path) is None


#: What :func:`corpus_problem` says of a folder with no manifest.
NOT_BUILT = "not built"


def corpus_problem(path: str | Path | None = None) -> str | None:
    """Why the corpus at ``path`` (default location unless given) must not be used, or
    ``None`` when it is intact: :data:`NOT_BUILT` without a manifest, ``"damaged (…)"``
    when the manifest is unreadable or a file it lists is missing, of another size or
    sha256 (truncated or edited), ``"of another version (…)"`` when another
    :data:`BUILDER_VERSION` built it. Every listed file is hashed (about 0.1 s for the
    default corpus)."""
    folder = _dir(path)
    try:
        if not (folder / _MANIFEST).is_file():
            return NOT_BUILT
    except OSError:  # a name too long, say: no corpus there
        return NOT_BUILT
    try:
        data = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"damaged ({_MANIFEST} unreadable)"
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(files, dict):
        return f"damaged ({_MANIFEST} lists no files)"
    version = data.get("builder_version")
    if version != BUILDER_VERSION:
        return f"of another version (builder v{version}, not v{BUILDER_VERSION})"
    for split in SPLITS:
        if _FILES[split] not in files:
            return f"damaged ({_MANIFEST} does not list {_FILES[split]})"
    for name, info in sorted(files.items()):
        p = folder / name
        try:
            size, digest = int(info["bytes"]), str(info["sha256"])
        except (KeyError, TypeError, ValueError):
            return f"damaged ({_MANIFEST} lists {name} without its size and sha256)"
        try:
            actual = p.stat().st_size
            if actual != size:
                return f"damaged ({name} has {actual:,} bytes, not {size:,})"
            if _file_sha256(p) != digest:
                return f"damaged ({name}: sha256 mismatch)"
        except OSError:
            return f"damaged ({name} is missing or unreadable)"
    return None


def check_corpus(path: str | Path | None = None) -> Path:
    """The folder of an intact corpus at ``path``; else one line: not built, or damaged
    or of another version (never used), with the command that rebuilds it."""
    folder = _dir(path)
    problem = corpus_problem(folder)
    if problem == NOT_BUILT:
        what = "default corpus" if path is None else "corpus"
        raise InterpError(
            f"{what} not built at {folder}: run `interp corpus build` (or `make setup`)"
        )
    if problem is not None:
        where = "" if path is None else f" --out {folder}"
        raise InterpError(f"corpus at {folder} is {problem}; it is not used: rebuild it with "
                          f"`interp corpus build --force{where}`")
    return folder


def corpus_hash(path: str | Path | None = None) -> str:
    """A sha256 naming the corpus content, from the manifest's output-file hashes."""
    files = manifest(path)["files"]
    lines = "".join(f"{name}:{files[name]['sha256']}\n" for name in sorted(files))
    return hashlib.sha256(f"{CORPUS_NAME}\n{lines}".encode()).hexdigest()


def text_file_hash(path: str | Path) -> str:
    """The sha256 of a user text file's bytes."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InterpError(f"cannot read text file {p}: no such file")
    try:
        return _file_sha256(p)
    except OSError as e:
        raise InterpError(f"cannot read text file {p}: {e.strerror or e}") from e


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise InterpError(f"unknown corpus split {split!r}; choose one of {', '.join(SPLITS)}")


def _read_text_file(p: Path) -> list[str]:
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InterpError(f"cannot read text file {p}: {e.strerror or e}") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InterpError(f"text file {p} is not UTF-8 (byte {e.start})") from e
    docs: list[str] = []
    if p.suffix.lower() == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InterpError(f"{p} line {lineno}: not valid JSON ({e.msg})") from e
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise InterpError(f'{p} line {lineno}: expected an object with a "text" string')
            if obj["text"].strip():
                docs.append(obj["text"].strip())
    else:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if re.search(r"\S[ \t]*\n[ \t]*\n\s*\S", text):
            chunks = re.split(r"\n[ \t]*\n", text)
        else:
            chunks = text.split("\n")
        docs = [c.strip() for c in chunks if c.strip()]
    if not docs:
        raise InterpError(f"text file {p} has no text")
    return docs


def load_hf_texts(name: str, split: str = "train", column: str = "text") -> list[str]:
    """Documents from a Hugging Face dataset (needs the hub, or its local cache).

    ``name`` may carry a config and split: ``"wikitext:wikitext-2-raw-v1"``. The held-out
    rule (:func:`is_heldout`) splits it as it splits the corpus, so train and held-out
    never share a paragraph whatever splits the dataset has.
    """
    _check_split(split)
    ds_name, _, ds_config = name.partition(":")
    try:
        import datasets as hf_datasets

        ds = hf_datasets.load_dataset(ds_name, ds_config or None, split="train")
        texts = ds[column]
    except Exception as e:  # offline, unknown name, missing column: one line for the user
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise InterpError(f"cannot load Hugging Face dataset {name!r} (offline?): {reason}") from e
    docs = [normalise(t) for t in texts if isinstance(t, str) and t.strip()]
    chosen = [d for d in docs if is_heldout(d) == (split == "heldout")]
    if not chosen:
        raise InterpError(f"Hugging Face dataset {name!r} has no {split} documents")
    return chosen


@dataclass(frozen=True)
class TextSource(Config):
    """Where a run's running text comes from: a user's file, a Hugging Face dataset, or
    (neither given) the default corpus; read by :func:`text_source`."""

    text_file: str | None = setting(
        None, cli=Cli(flag="--text", path="file"),
        help="Your own text (.txt paragraphs, or .jsonl with a 'text' field) instead of the "
        "default corpus; its sha256 rule gives the train / held-out split.")
    hf_dataset: str | None = setting(
        None, cli=Cli(metavar="NAME[:CONFIG]"),
        help="A Hugging Face dataset's 'text' column instead (needs the hub).")


def text_source(
    split: str, *, text_file: str | Path | None = None, hf_dataset: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """Documents of ``split`` from a text file, an HF dataset or the default corpus, and a
    record of where they came from (``{"source": …, "sha256": …}``) for manifests."""
    if text_file is not None and hf_dataset is not None:
        raise InterpError("give --text or --hf-dataset, not both")
    if hf_dataset is not None:
        docs = load_hf_texts(hf_dataset, split)
        from interp.runs.manifest import sha256_texts

        return docs, {"source": f"hf:{hf_dataset}", "sha256": sha256_texts(docs)}
    if text_file is not None:
        docs = load_texts(split, text_file=text_file)
        return docs, {"source": str(text_file), "sha256": text_file_hash(text_file)}
    docs = load_texts(split)
    return docs, {"source": CORPUS_NAME, "sha256": corpus_hash()}


def load_texts(
    split: str = "train",
    *,
    text_file: str | Path | None = None,
    path: str | Path | None = None,
) -> list[str]:
    """Documents of one split of the default corpus, or of a user's ``text_file``.

    A ``.jsonl`` text file gives the ``"text"`` field of each line; any other file gives one
    document per blank-line-separated paragraph, or per non-empty line if it has no blank
    lines. The held-out rule (:func:`is_heldout`) splits a text file as it splits the corpus.
    """
    _check_split(split)
    if text_file is not None:
        p = Path(text_file).expanduser()
        docs = _read_text_file(p)
        chosen = [d for d in docs if is_heldout(d) == (split == "heldout")]
        if not chosen:
            raise InterpError(
                f"text file {p} has no {split} documents: the sha256 rule ({SPLIT_RULE}) "
                f"selected none of its {len(docs)}; give it more paragraphs"
            )
        return chosen
    folder = check_corpus(path)  # a truncated, edited or other version's corpus: refused
    docs = []
    with open(folder / _FILES[split], encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line)["text"])
    return docs


if __name__ == "__main__":  # pragma: no cover - `python -m interp.data.corpus` builds the default
    info = build()
    for name, f in info["files"].items():
        print(f"{name}: {f['paragraphs']} paragraphs, {f['words']} words")
