"""How much ATD's output depends on the order its category sort gives the tokens of one category (maintainer
tool, test code only, never run by the tests): random-weight models of atd.test.ts's released-width and small
shapes, run with the stable sort Crisp and atd_reference.py use and with PyTorch's CPU unstable sort (upstream's
torch.sort(stable=False)), on two photo crops; prints the largest and mean difference (0–1 pixels).

usage: /usr/bin/python3 test/convert/support/atd_sort_ties.py
"""
import os
import sys

import numpy
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import atd_reference  # noqa: E402
from golden import Weights  # noqa: E402
from ref_common import randomize  # noqa: E402

IMAGES = os.path.join(HERE, '..', '..', '..', '..', 'shared', 'images')
SHAPES = {
    'released widths (210, window 16)': dict(embed_dim=210, depths=[2], num_heads=[6], window_size=16,
                                             category_size=256, num_tokens=128, reducted_dim=20, mlp_ratio=2,
                                             upsampler='pixelshuffle', upscale=4),
    'small (24, window 8)': dict(embed_dim=24, depths=[2, 3], num_heads=[2, 3], window_size=8, num_tokens=16,
                                 reducted_dim=4, mlp_ratio=2, num_feat=8, upsampler='pixelshuffle', upscale=2),
}
CROPS = [('set5/bird.png', 90, 70, 37, 19), ('set14/zebra.png', 100, 100, 96, 80)]


def crop(name, left, top, w, h):
    a = numpy.asarray(Image.open(os.path.join(IMAGES, name)).convert('RGB'), dtype=numpy.float32)
    return torch.from_numpy(a[top:top + h, left:left + w].transpose(2, 0, 1).copy() / 255)[None]


def main():
    torch.set_num_threads(1)
    for label, cfg in SHAPES.items():
        torch.manual_seed(51)
        model = atd_reference.ATD(**cfg).eval()
        randomize(model, 51)
        Weights(51).reseed(model)
        for name, left, top, w, h in CROPS:
            x = crop(name, left, top, w, h)
            with torch.no_grad():
                atd_reference.STABLE_SORT = True
                stable = model(x)
                atd_reference.STABLE_SORT = False
                unstable = model(x)
            d = (stable - unstable).abs()
            print(f'{label} {name} {w}x{h}: max {d.max().item():.3e}, mean {d.mean().item():.2e}')


if __name__ == '__main__':
    main()
