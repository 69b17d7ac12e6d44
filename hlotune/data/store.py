"""The built-in collections as a few compressed shards, unpacked once into the user's cache.

The measurements (tens of thousands of small files) live outside the Python package, in
`datasets/` at the repository's root: one `.tar.xz` shard per part (a collection, or a space's
kernel labels), `MANIFEST.json` naming each shard's checksum, and the data card. A wheel holds
code and models only; `builtin:` names find the shards in `$HLOTUNE_DATA` (a copy of that
folder) or in the checkout the package runs from, and a part is unpacked on first use into
`~/.cache/hlotune/datasets/EDITION/`, EDITION being the manifest's hash, so readers see plain
files and a new edition never mixes with an old one. Collectors write into that tree, and
`hlotune data pack` turns it back into shards.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from hlotune.atomic import write_atomic
from hlotune.errors import HlotuneError

ENV = "HLOTUNE_DATA"
MANIFEST = "MANIFEST.json"
DATACARD = "DATACARD.md"
PARTS = ("flags", "layout", "tile", "kernels/flags", "kernels/layout")
CHECKOUT = Path(__file__).resolve().parents[2] / "datasets"
MISSING = (f"the built-in datasets are not installed: set {ENV} to the datasets/ folder of a "
           "hlotune checkout (it holds MANIFEST.json and the .tar.xz shards)")


@dataclass(frozen=True)
class Shard:
    """One part of the tree (`kernels/layout`) as one file, with what it must hash to."""

    part: str
    file: str
    sha256: str
    bytes: int
    files: int


@dataclass(frozen=True)
class Store:
    """A `datasets/` folder: its shards by part, and the cache tree they unpack into."""

    folder: Path
    shards: dict[str, Shard]
    edition: str

    @classmethod
    def find(cls) -> Store:
        """The store `$HLOTUNE_DATA` names, else the checkout's; a one-line error if neither."""
        named = os.environ.get(ENV)
        folder = Path(named).expanduser() if named else CHECKOUT
        if not (folder / MANIFEST).is_file():
            where = f" ({ENV}={named} has no {MANIFEST})" if named else ""
            raise HlotuneError(MISSING + where)
        return cls.read(folder)

    @classmethod
    def read(cls, folder: Path) -> Store:
        text = (folder / MANIFEST).read_bytes()
        try:
            shards = {s["part"]: Shard(**s) for s in json.loads(text)["shards"]}
        except (ValueError, KeyError, TypeError) as error:
            raise HlotuneError(f"{folder / MANIFEST}: not a datasets manifest ({error})") from None
        return cls(folder, shards, hashlib.sha256(text).hexdigest()[:16])

    @property
    def tree(self) -> Path:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "hlotune" / "datasets" / self.edition

    def unpacked(self, part: str) -> Path:
        """`part`'s folder in the cache tree, unpacking its shard first if it is not there."""
        if part not in self.shards:
            raise HlotuneError(f"{self.folder / MANIFEST}: no shard holds {part!r}")
        folder = self.tree / part
        if not folder.is_dir():
            self._unpack(self.shards[part], folder)
        card = self.tree / DATACARD
        if not card.exists() and (self.folder / DATACARD).exists():
            write_atomic(card, lambda out: out.write((self.folder / DATACARD).read_bytes()))
        return folder

    def unpacked_all(self) -> Path:
        for part in self.shards:
            self.unpacked(part)
        return self.tree

    def _unpack(self, shard: Shard, folder: Path) -> None:
        """Check, then extract into a private folder and rename it into place: two processes
        unpacking at once both succeed, and a crash never leaves half a part behind."""
        path = self.folder / shard.file
        if not path.is_file():
            raise HlotuneError(f"{path}: missing shard of the built-in datasets")
        if _sha256(path) != shard.sha256:
            raise HlotuneError(f"{path}: corrupt shard (its sha256 differs from {MANIFEST}'s)")
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".unpack-") as private:
            try:
                with tarfile.open(path, "r:xz") as archive:
                    archive.extractall(private, filter="data")
            except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as error:
                raise HlotuneError(f"{path}: unreadable shard ({error})") from None
            try:
                os.rename(Path(private) / shard.part, folder)
            except OSError:
                if not folder.is_dir():  # not another process having won the race
                    raise


def pack(tree: Path, folder: Path) -> Store:
    """Write `tree`'s parts as shards into `folder` with a new manifest (and its data card).
    Deterministic: sorted members, no times or owners, so the same tree packs to the same bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    shards = [_pack_part(tree, part, folder) for part in PARTS if (tree / part).is_dir()]
    if not shards:
        raise HlotuneError(f"{tree}: none of {', '.join(PARTS)} to pack")
    if (tree / DATACARD).exists():
        write_atomic(folder / DATACARD, lambda out: out.write((tree / DATACARD).read_bytes()))
    manifest = {"format": "hlotune datasets 1", "shards": [asdict(s) for s in shards]}
    write_atomic(folder / MANIFEST, lambda out: out.write((json.dumps(manifest, indent=1) + "\n").encode()))
    return Store.read(folder)


def _pack_part(tree: Path, part: str, folder: Path) -> Shard:
    name = part.replace("/", "-") + ".tar.xz"
    members = sorted(_files(tree / part))
    partial = folder / f".{name}.partial"
    with lzma.open(partial, "wb", preset=9 | lzma.PRESET_EXTREME) as stream, \
            tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in members:
            info = archive.gettarinfo(path, path.relative_to(tree).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
            with path.open("rb") as content:
                archive.addfile(info, content)
    partial.replace(folder / name)
    return Shard(part, name, _sha256(folder / name), (folder / name).stat().st_size, len(members))


def _files(folder: Path) -> Iterator[Path]:
    for root, _, names in os.walk(folder):
        yield from (Path(root) / name for name in names if not name.endswith(".partial"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()

