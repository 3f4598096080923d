"""PyTorch versions of the bench's programs, exported by torch-mlir as a PyTorch user would.

Runs in an environment with torch and torch-mlir (never the project's: torch-mlir is no test
dependency), e.g. a throwaway venv:

    python -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch torch-mlir
    /tmp/torchvenv/bin/python bench/runtime/torch_programs.py OUTDIR [--quick]

Writes OUTDIR/torch-NAME.mlir for each model: `torch_mlir.fx.export_and_import(model, x,
output_type="stablehlo")`, weights frozen as `dense_resource` blobs, NCHW/OIHW (NCW/OIW) layouts.
The models are written here (no torchvision) with seeded random weights, in eval mode.
"""
# pyright: reportMissingImports=false, reportAttributeAccessIssue=false

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: Any) -> Any:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        blocks, cin = [], 64
        for stage, width in enumerate((64, 128, 256, 512)):
            for block in range(2):
                blocks.append(BasicBlock(cin, width, 2 if stage and not block else 1))
                cin = width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x: Any) -> Any:
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


class Wav2Vec2FeatureEncoder(nn.Module):
    """transformers' Wav2Vec2FeatureEncoder (group norm variant) and feature projection."""

    def __init__(self) -> None:
        super().__init__()
        layers = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
        self.convs = nn.ModuleList(
            nn.Conv1d(1 if i == 0 else 512, 512, k, s, bias=False)
            for i, (k, s) in enumerate(layers)
        )
        self.norm = nn.GroupNorm(512, 512)
        self.projection = nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 768))

    def forward(self, audio: Any) -> Any:
        x = nn.functional.gelu(self.norm(self.convs[0](audio)))
        for conv in self.convs[1:]:
            x = nn.functional.gelu(conv(x))
        return self.projection(x.transpose(1, 2))


def _double_conv(cin: int, cout: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, 1, 1), nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1), nn.ReLU()
    )


class UNet(nn.Module):
    """A small U-Net: max-pool encoder, ConvTranspose2d decoder (2x2/2, 4x4/2 pad 1, 2x2/2)."""

    def __init__(self) -> None:
        super().__init__()
        widths = (32, 64, 128, 256)
        self.down = nn.ModuleList(
            _double_conv(cin, cout) for cin, cout in zip((3, *widths[:-1]), widths, strict=True)
        )
        self.up = nn.ModuleList(
            [
                nn.ConvTranspose2d(256, 128, 2, 2),
                nn.ConvTranspose2d(128, 64, 4, 2, 1),
                nn.ConvTranspose2d(64, 32, 2, 2),
            ]
        )
        self.fuse = nn.ModuleList(_double_conv(2 * c, c) for c in (128, 64, 32))
        self.head = nn.Conv2d(32, 2, 1)

    def forward(self, x: Any) -> Any:
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else nn.functional.max_pool2d(x, 2))
            skips.append(x)
        for up, fuse, skip in zip(self.up, self.fuse, reversed(skips[:-1]), strict=True):
            x = fuse(torch.cat([up(x), skip], 1))
        return self.head(x)


class HiFiGAN(nn.Module):
    """HiFi-GAN V1's generator shape: ConvTranspose1d 16/8, 16/8, 4/2, 4/2 from 512 channels."""

    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Conv1d(80, 512, 7, 1, 3)
        self.ups = nn.ModuleList()
        self.res = nn.ModuleList()
        c = 512
        for k, s in [(16, 8), (16, 8), (4, 2), (4, 2)]:
            self.ups.append(nn.ConvTranspose1d(c, c // 2, k, s, (k - s) // 2))
            c //= 2
            self.res.append(nn.ModuleList(nn.Conv1d(c, c, 3, 1, d, dilation=d) for d in (1, 3)))
        self.post = nn.Conv1d(c, 1, 7, 1, 3)

    def forward(self, mel: Any) -> Any:
        x = self.pre(mel)
        for up, res in zip(self.ups, self.res, strict=True):
            x = up(nn.functional.leaky_relu(x, 0.1))
            for conv in res:
                x = x + conv(nn.functional.leaky_relu(x, 0.1))
        return torch.tanh(self.post(nn.functional.leaky_relu(x, 0.1)))


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x: Any) -> Any:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, 1, 3, groups=c)
        self.mlp = nn.Sequential(
            nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c)
        )
        self.scale = nn.Parameter(torch.full((c,), 1e-2))

    def forward(self, x: Any) -> Any:
        y = self.mlp(self.dw(x).permute(0, 2, 3, 1)) * self.scale
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtStemStage(nn.Module):
    """torchvision's ConvNeXt-T: stem 4x4/4 + LN, a block, downsampling LN + 2x2/2, a block."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 96, 4, 4),
            LayerNorm2d(96),
            CNBlock(96),
            LayerNorm2d(96),
            nn.Conv2d(96, 192, 2, 2),
            CNBlock(192),
        )

    def forward(self, x: Any) -> Any:
        return self.net(x)


class ViTPatchEmbedding(nn.Module):
    """torchvision's ViT-B/16 input: 16x16/16 conv, flatten, class token, position, LN."""

    def __init__(self, patch: int = 16, dim: int = 768, side: int = 224) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (side // patch) ** 2 + 1, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: Any) -> Any:
        tokens = self.proj(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], 1)
        return self.norm(tokens + self.pos)


def programs(quick: bool) -> dict[str, tuple[nn.Module, Any, str]]:
    side = 64 if quick else 224
    return {
        "torch-resnet18": (
            ResNet18(),
            torch.randn(1, 3, side, side),
            f"ResNet-18, 1x3x{side}x{side}",
        ),
        "torch-vit-b16-patch": (
            ViTPatchEmbedding(),
            torch.randn(1, 3, 224, 224),
            "ViT-B/16 patch embedding, 1x3x224x224",
        ),
        "torch-convnext-t-stem": (
            ConvNeXtStemStage(),
            torch.randn(1, 3, side, side),
            f"ConvNeXt-T stem, block, downsampling, block, 1x3x{side}x{side}",
        ),
        "torch-wav2vec2-fe": (
            Wav2Vec2FeatureEncoder(),
            torch.randn(1, 1, 4000 if quick else 16000) * 0.1,
            f"wav2vec2 feature encoder, {0.25 if quick else 1} s of 16 kHz audio",
        ),
        "torch-unet": (
            UNet(),
            torch.randn(1, 3, side // 2, side // 2),
            f"U-Net with ConvTranspose2d 2x2/2, 4x4/2 pad 1, 2x2/2, 1x3x{side // 2}x{side // 2}",
        ),
        "torch-hifigan": (
            HiFiGAN(),
            torch.randn(1, 80, 8 if quick else 32),
            f"HiFi-GAN generator with ConvTranspose1d, 80x{8 if quick else 32} mel",
        ),
    }


def main(argv: list[str] | None = None) -> int:
    from torch_mlir import fx

    parser = argparse.ArgumentParser(description="export the bench's PyTorch programs")
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", help="program names (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name, (model, x, what) in programs(args.quick).items():
        if args.only and name not in args.only:
            continue
        module = fx.export_and_import(model.eval(), x, output_type="stablehlo")
        text = f"// {what}\n{module}"
        (args.out / f"{name}.mlir").write_text(text)
        print(f"{name}: {what}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
