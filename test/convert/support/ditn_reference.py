"""DITN reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Liu et al., "Unfolding Once is Enough: A Deployment-Friendly Transformer Unit for
Super-Resolution", ACM MM 2023) and the public architecture definition (yongliuy/DITN DITN_Real.py,
Apache-2.0; the copy spandrel loads, libs/spandrel/spandrel/architectures/DITN/__arch/DITN_Real.py): the same
module and parameter names, so the saved state dict has the keys of the released DITN_Real checkpoints.

The body is UFONE blocks: the feature map cut into 8×8 patches, each run through inner transformer layers
(ITL: channel self-attention within the patch on L2-normalised 64-pixel rows, times a learned temperature, then a
gated depth-wise FFN; each branch after tanh and a 1×1 conv), the patches put back, then spatial-attention layers
(SAL: a 5×5 and a dilated 7×7 depth-wise conv gate, scaled per channel, and the same FFN) on the whole map. Then
conv_after_body plus the shallow features, and a one-step pixel-shuffle tail to 3 channels. The input is
reflect-padded to a multiple of 8 and the output cropped (check_image_size).

usage: /usr/bin/python3 ditn_reference.py JOBS.json   (the job format of swinir_reference.py)
"""
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_common import main  # noqa: E402


class FeedForward(nn.Module):
    def __init__(self, dim, factor, bias):
        super().__init__()
        hidden = int(dim * factor)
        self.project_in = nn.Conv2d(dim, hidden * 2, 1, bias=bias)
        self.dwconv = nn.Conv2d(hidden * 2, hidden * 2, 3, 1, 1, groups=hidden * 2, bias=bias)
        self.project_out = nn.Conv2d(hidden, dim, 1, bias=bias)

    def forward(self, x):
        x1, x2 = self.dwconv(self.project_in(x)).chunk(2, dim=1)
        return self.project_out(F.gelu(x1) * x2)


class ISA(nn.Module):
    def __init__(self, dim, bias):
        super().__init__()
        self.temperature = nn.Parameter(torch.ones(1, 1, 1))
        self.qkv = nn.Linear(dim, dim * 3)
        self.project_out = nn.Conv2d(dim, dim, 1, bias=bias)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(x.view(b, c, -1).transpose(-1, -2)).chunk(3, dim=-1)
        q = F.normalize(q.transpose(-1, -2), dim=-1)
        k = F.normalize(k.transpose(-1, -2), dim=-1)
        attn = ((q @ k.transpose(-2, -1)) * self.temperature).softmax(dim=-1)
        return self.project_out((attn @ v.transpose(-1, -2)).view(b, c, h, w))


class SDA(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.zeros((1, n, 1, 1)))
        self.DConvs = nn.Sequential(nn.Conv2d(n, n, 5, 1, 2, groups=n), nn.Conv2d(n, n, 7, 1, 9, groups=n, dilation=3),
                                    nn.Conv2d(n, n, 1))
        self.proj_first = nn.Sequential(nn.Conv2d(n, 2 * n, 1))
        self.proj_last = nn.Sequential(nn.Conv2d(n, n, 1))

    def forward(self, x):
        a, x = torch.chunk(self.proj_first(x), 2, dim=1)
        return self.proj_last(x * self.DConvs(a)) * self.scale


class ITL(nn.Module):
    def __init__(self, n, factor, bias):
        super().__init__()
        self.attn = ISA(n, bias)
        self.conv1 = nn.Conv2d(n, n, 1)
        self.conv2 = nn.Conv2d(n, n, 1)
        self.ffn = FeedForward(n, factor, bias)

    def forward(self, x):
        x = x + self.attn(self.conv1(torch.tanh(x)))
        return x + self.ffn(self.conv2(torch.tanh(x)))


class SAL(nn.Module):
    def __init__(self, n, factor, bias):
        super().__init__()
        self.SDA = SDA(n)
        self.ffn = FeedForward(n, factor, bias)
        self.conv1 = nn.Conv2d(n, n, 1)
        self.conv2 = nn.Conv2d(n, n, 1)

    def forward(self, x):
        x = x + self.SDA(self.conv1(torch.tanh(x)))
        return x + self.ffn(self.conv2(torch.tanh(x)))


class UFONE(nn.Module):
    def __init__(self, dim, factor, bias, itl_blocks, sal_blocks, patch):
        super().__init__()
        self.ITLs = nn.Sequential(*[ITL(dim, factor, bias) for _ in range(itl_blocks)])
        self.SALs = nn.Sequential(*[SAL(dim, factor, bias) for _ in range(sal_blocks)])
        self.patch = patch

    def forward(self, x):
        b, c, h, w = x.shape
        p = self.patch
        local = x.view(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(-1, c, p, p)
        local = self.ITLs(local).view(b, h // p, w // p, c, p, p)
        return self.SALs(local.permute(0, 3, 1, 4, 2, 5).reshape(b, c, h, w))


class DITN(nn.Module):
    def __init__(self, inp_channels=3, dim=60, ITL_blocks=4, SAL_blocks=4, UFONE_blocks=1, ffn_expansion_factor=2,
                 bias=False, patch_size=8, upscale=4):
        super().__init__()
        self.patch, self.scale = patch_size, upscale
        self.sft = nn.Conv2d(inp_channels, dim, 3, 1, 1)
        self.UFONE = nn.Sequential(*[UFONE(dim, ffn_expansion_factor, bias, ITL_blocks, SAL_blocks, patch_size)
                                     for _ in range(UFONE_blocks)])
        self.conv_after_body = nn.Conv2d(dim, dim, 3, 1, 1)
        self.upsample = nn.Sequential(nn.Conv2d(dim, upscale ** 2 * 3, 3, 1, 1), nn.PixelShuffle(upscale))

    def forward(self, x):
        h, w = x.shape[2:]
        ph, pw = (8 - h % 8) % 8, (8 - w % 8) % 8
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), 'reflect')
        sft = self.sft(x)
        out = self.upsample(self.conv_after_body(self.UFONE(sft)) + sft)
        return out[:, :, :h * self.scale, :w * self.scale]


def build(cfg):
    # The bench names the input channels in_chans, as the other references do; DITN calls them inp_channels.
    return DITN(**{('inp_channels' if k == 'in_chans' else k): v for k, v in cfg.items()})


if __name__ == '__main__':
    main(build)
