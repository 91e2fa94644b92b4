#!/usr/bin/env python3
"""PyTorch eager on the GPU, the reference tools/gpu-check.sh compares minirt with.

    python tools/gpu_bench_torch.py --models resnet50 mobilenetv2 --batches 1 32 --math fp32 tf32

Builds ResNet-50 (v1.5) and MobileNetV2 (width 1.0) with random weights --
torchvision's definitions when torchvision is installed, else the equivalent
definitions below -- in eval mode, and times them with
torch.backends.cudnn.benchmark=True under torch.inference_mode(), at each
batch size on 224x224 inputs: on-GPU (`model(x)` with x already on the GPU;
synchronized after each run) and end to end from host memory
(`model(x_host.cuda()).cpu()`, what runmodel measures). fp32 turns TF32 off
in cuDNN and in matrix products; tf32 turns it on.

Prints one JSON object per line: first {"kind": "meta", ...} (versions, the
GPU), then one per (model, batch, math) with min/median/mean in ms.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn

try:
    import torchvision

    TORCHVISION = torchvision.__version__
except Exception:  # not installed, or broken against this torch
    torchvision = None
    TORCHVISION = None


# ---- The architectures, for when torchvision is absent (same layers and shapes) ----


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inp, width, stride, downsample):
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(inp, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)  # v1.5: stride on the 3x3
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + idt)


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inp = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            seq = []
            for i in range(blocks):
                s = stride if i == 0 else 1
                ds = None
                if s != 1 or inp != width * 4:
                    ds = nn.Sequential(nn.Conv2d(inp, width * 4, 1, s, bias=False), nn.BatchNorm2d(width * 4))
                seq.append(Bottleneck(inp, width, s, ds))
                inp = width * 4
            layers.append(nn.Sequential(*seq))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def conv_bn_relu6(inp, out, k, stride, groups=1):
    return nn.Sequential(nn.Conv2d(inp, out, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(out),
                         nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, out, stride, expand):
        super().__init__()
        hidden = inp * expand
        self.residual = stride == 1 and inp == out
        layers = [] if expand == 1 else [conv_bn_relu6(inp, hidden, 1, 1)]
        layers += [conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden), nn.Conv2d(hidden, out, 1, bias=False),
                   nn.BatchNorm2d(out)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        feats, inp = [conv_bn_relu6(3, 32, 3, 2)], 32
        for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                           (6, 320, 1, 1)):
            for i in range(n):
                feats.append(InvertedResidual(inp, c, s if i == 0 else 1, t))
                inp = c
        feats.append(conv_bn_relu6(inp, 1280, 1, 1))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def build(name):
    if torchvision is not None:
        return getattr(torchvision.models, {"resnet50": "resnet50", "mobilenetv2": "mobilenet_v2"}[name])(weights=None)
    return {"resnet50": ResNet50, "mobilenetv2": MobileNetV2}[name]()


def stats(ms):
    return {"min": min(ms), "median": statistics.median(ms), "mean": statistics.fmean(ms), "runs": len(ms)}


def timed(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenetv2"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--math", nargs="+", default=["fp32", "tf32"])
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=30)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"kind": "error", "error": "torch.cuda.is_available() is False"}))
        return 2
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    print(json.dumps({"kind": "meta", "torch": torch.__version__, "cuda": torch.version.cuda,
                      "cudnn": torch.backends.cudnn.version(), "torchvision": TORCHVISION,
                      "gpu": torch.cuda.get_device_name(0)}), flush=True)
    torch.manual_seed(0)
    for name in a.models:
        model = build(name).eval().to(dev)
        for math in a.math:
            tf32 = math == "tf32"
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            for b in a.batches:
                host = torch.rand(b, 3, 224, 224)
                x = host.to(dev)
                iters = a.iterations if b < 32 else max(10, a.iterations // 2)
                with torch.inference_mode():
                    on_gpu = timed(lambda: model(x), a.warmup, iters)
                    e2e = timed(lambda: model(host.to(dev)).cpu(), 3, iters)
                print(json.dumps({"kind": "result", "model": name, "batch": b, "math": math,
                                  "gpu_resident_ms": stats(on_gpu), "end_to_end_ms": stats(e2e)}), flush=True)
        del model
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
