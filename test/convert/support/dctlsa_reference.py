"""DCTLSA reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Zeng et al., "Densely Connected Transformer with Linear Self-Attention for Lightweight
Image Super-Resolution", IEEE TIM 2023) and the public architecture definition (zengkun301/DCTLSA, Apache-2.0;
the copy spandrel loads, libs/spandrel/spandrel/architectures/DCTLSA/__arch/dctlsa.py): the same module and
parameter names, so the saved state dict has the keys of the released checkpoints.

fea_conv, then six LSABs densely connected (block k sees the concatenation of fea_conv's output and the k−1
earlier LSAB outputs, squeezed by a 1×1 conv c_{k−1} and LeakyReLU 0.05), a 1×1 conv `c` over all six outputs,
LR_conv plus the shallow features, and a pixel-shuffle tail. Each LSAB is two SwinT, each one BasicLayer of two
blocks (plain, then shifted by 8) in 16×16 windows; each BasicLayer reflect-pads its own input to the window
multiple, LayerNorms the tokens (patch_embed), and crops back. A block has no norms and no residual around its
attention: a local branch (BatchNorm, 1×1, depth-wise 3×3, BatchNorm, 1×1, plus its input) feeds the qkv Linear,
and the window attention is linear: softmax over the keys' tokens, q·(kᵀv), then proj, plus the local branch;
then x + MLP(x). The shifted blocks roll the map but use no mask (upstream passes mask=None).

usage: /usr/bin/python3 dctlsa_reference.py JOBS.json   (the job format of swinir_reference.py)
config: {"in_chans" (upstream's in_nc), "nf", "num_modules", "out_nc", "upscale", "num_head"}
"""
import torch
from torch import nn
from torch.nn import functional as F

from ref_common import main, randomize
from window_attention import Mlp, tokens, image, window_partition, window_reverse

WINDOW = 16
MLP_RATIO = 2.0


class LocalModule(nn.Sequential):
    def __init__(self, c):
        super().__init__()
        self.add_module('pointwise_prenorm_0', nn.BatchNorm2d(c))
        self.add_module('pointwise_conv_0', nn.Conv2d(c, c, 1, bias=False))
        self.add_module('depthwise_conv', nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False))
        self.add_module('pointwise_prenorm_1', nn.BatchNorm2d(c))
        self.add_module('pointwise_conv_1', nn.Conv2d(c, c, 1, bias=False))


class LinearWindowAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.local = LocalModule(dim)

    def forward(self, x):
        b, h, w, c = x.shape
        temp = x.permute(0, 3, 1, 2)
        local = (self.local(temp) + temp).permute(0, 2, 3, 1)
        win = window_partition(self.qkv(local), WINDOW).reshape(-1, WINDOW * WINDOW, 3 * c)
        n = win.shape[1]
        qkv = win.reshape(-1, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1].softmax(dim=-2), qkv[2]
        out = self.proj((q @ (k.transpose(-2, -1) @ v)).transpose(1, 2).reshape(-1, n, c))
        return window_reverse(out.view(-1, WINDOW, WINDOW, c), WINDOW, h, w) + local


class Block(nn.Module):
    def __init__(self, dim, heads, shift):
        super().__init__()
        self.shift = shift
        self.attn = LinearWindowAttention(dim, heads)
        self.mlp = Mlp(dim, int(dim * MLP_RATIO))

    def forward(self, x, size):
        b, _, c = x.shape
        x = x.view(b, size[0], size[1], c)
        if self.shift:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        x = self.attn(x)
        if self.shift:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x.reshape(b, -1, c)
        return x + self.mlp(x)


class PatchEmbed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)


class BasicLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, heads, 0 if i % 2 == 0 else WINDOW // 2) for i in range(2)])
        self.patch_embed = PatchEmbed(dim)

    def forward(self, x):
        h, w = x.shape[2:]
        x = F.pad(x, (0, (WINDOW - w % WINDOW) % WINDOW, 0, (WINDOW - h % WINDOW) % WINDOW), 'reflect')
        size = x.shape[2:]
        t = self.patch_embed.norm(tokens(x))
        for blk in self.blocks:
            t = blk(t, size)
        return image(t, size)[:, :, :h, :w]


class SwinT(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.transformer_body = nn.Sequential(BasicLayer(dim, heads))


class LSAB(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.body = nn.Sequential(SwinT(dim, heads), SwinT(dim, heads))

    def forward(self, x):
        for swin in self.body:
            x = swin.transformer_body[0](x)
        return x


def squeeze(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 1), nn.LeakyReLU(0.05))


class DCTLSA(nn.Module):
    def __init__(self, in_chans=3, nf=55, num_modules=6, out_nc=None, upscale=4, num_head=5):
        super().__init__()
        out_nc = out_nc or in_chans
        self.fea_conv = nn.Conv2d(in_chans, nf, 3, 1, 1)
        for i in range(1, 7):
            setattr(self, f'B{i}', LSAB(nf, num_head))
        self.c = squeeze(nf * num_modules, nf)
        for k in range(1, 6):
            setattr(self, f'c{k}', squeeze(nf * (k + 1), nf))
        self.LR_conv = nn.Conv2d(nf, nf, 3, 1, 1)
        self.upsampler = nn.Sequential(nn.Conv2d(nf, out_nc * upscale ** 2, 3, 1, 1), nn.PixelShuffle(upscale))

    def forward(self, x):
        fea = self.fea_conv(x)
        dense, outs, inp = fea, [], fea
        for i in range(1, 7):
            out = getattr(self, f'B{i}')(inp)
            outs.append(out)
            if i < 6:
                dense = torch.cat([dense, out], dim=1)
                inp = getattr(self, f'c{i}')(dense)
        return self.upsampler(self.LR_conv(self.c(torch.cat(outs, dim=1))) + fea)


# What each block adds to its input (attention proj, the local branch's last conv, the MLP's fc2) at a quarter
# of randomize's scale: a trained DCTLSA keeps its features near unit size through 24 residual blocks and six
# dense concatenations; at full scale a random one grows them to hundreds, where float32 rounding alone nears
# the test's 1e-4 bound.
RESIDUAL_BRANCHES = ('attn.proj.', 'local.pointwise_conv_1.', 'mlp.fc2.')


def randomize_tame(model, seed):
    randomize(model, seed)
    with torch.no_grad():
        for name, t in model.state_dict(keep_vars=True).items():
            if any(s in name for s in RESIDUAL_BRANCHES):
                t.mul_(0.25)


if __name__ == '__main__':
    # 24 blocks of small layers: tensors from 64 values up are generated, so the golden stays small.
    main(lambda cfg: DCTLSA(**cfg), randomizer=randomize_tame, min_numel=64)
