"""DRCT reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Hsu et al., "DRCT: Saving Image Super-resolution away from Information Bottleneck",
CVPRW 2024) and the public architecture definition (ming053l/DRCT drct_arch.py, MIT; the copy spandrel loads,
libs/spandrel/spandrel/architectures/DRCT/__arch/drct_arch.py): the same module and parameter names and buffers
(each block's relative_position_index, the shifted blocks' attn_mask of the training size), so the saved state dict
has the keys of the released DRCT and DRCT-L checkpoints.

Each residual dense group (RDG) runs five Swin blocks on a growing concatenation: block k sees the group input
and the k earlier blocks' outputs, each squeezed to `gc` channels by a 1×1 conv (LeakyReLU 0.2); block k's width
is dim + k·gc with num_heads − (width mod num_heads) heads (the first keeps num_heads), blocks 4 and 5 have an MLP ratio of 1, and the fifth
1×1 conv maps back to dim for the group's residual, scaled by 0.2. The network itself does not pad; DRCT's model
wrapper (drct_model.py pre_process / post_process) reflect-pads the input to the window multiple and crops the
output, which forward() does here, as the HAT reference does.

usage: /usr/bin/python3 drct_reference.py JOBS.json   (the job format of swinir_reference.py)
"""
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_common import main  # noqa: E402
from window_attention import PatchEmbed, SwinTransformerBlock, add_tail, classical_forward, image  # noqa: E402
from window_attention import swin_features, tokens  # noqa: E402


class RDG(nn.Module):
    def __init__(self, dim, res, heads, ws, mlp_ratio, qkv_bias, gc):
        super().__init__()
        for k in range(5):
            width = dim + k * gc
            block = SwinTransformerBlock(width, res, heads if k == 0 else heads - width % heads, ws, ws // 2 if k % 2 == 1 else 0,
                                         mlp_ratio if k < 3 else 1, qkv_bias)
            setattr(self, f'swin{k + 1}', block)
            setattr(self, f'adjust{k + 1}', nn.Conv2d(width, gc if k < 4 else dim, 1))

    def forward(self, x, size):
        feats = [x]
        for k in range(5):
            y = getattr(self, f'swin{k + 1}')(torch.cat(feats, -1), size)
            y = getattr(self, f'adjust{k + 1}')(image(y, size))
            feats.append(tokens(F.leaky_relu(y, 0.2) if k < 4 else y))
        return feats[5] * 0.2 + x


class DRCT(nn.Module):
    def __init__(self, img_size=64, in_chans=3, embed_dim=180, depths=(6,) * 6, num_heads=(6,) * 6, window_size=16,
                 mlp_ratio=2.0, qkv_bias=True, upscale=2, img_range=1.0, resi_connection='1conv', gc=32,
                 patch_norm=True, num_feat=64):
        super().__init__()
        self.ws, self.upscale, self.img_range = window_size, upscale, img_range
        self.mean = torch.Tensor((0.4488, 0.4371, 0.4040)).view(1, 3, 1, 1) if in_chans == 3 else torch.zeros(1, 1, 1, 1)
        self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.patch_embed = PatchEmbed(embed_dim) if patch_norm else nn.Module()
        res = (img_size, img_size)
        # depths only sets the stochastic-depth schedule in DRCT: every RDG has five blocks whatever it says.
        self.layers = nn.ModuleList([RDG(embed_dim, res, h, window_size, mlp_ratio, qkv_bias, gc) for h in num_heads])
        self.norm = nn.LayerNorm(embed_dim)
        self.conv_after_body = nn.Conv2d(embed_dim, embed_dim, 3, 1, 1) if resi_connection == '1conv' else nn.Identity()
        add_tail(self, 'pixelshuffle', embed_dim, num_feat, in_chans, upscale)

    def features(self, x):
        return swin_features(self, x)

    def forward(self, x):
        return classical_forward(self, x)

if __name__ == '__main__':
    main(lambda cfg: DRCT(**cfg), skip=('attn_mask',))
