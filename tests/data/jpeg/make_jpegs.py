"""Writes the JPEG test images of this folder and the pixels PIL decodes from them.

Run from this folder with Pillow and numpy (the versions used are in README.md):

    python3 make_jpegs.py

Every image is synthetic (made here from formulas and a fixed-seed generator) except
chelsea-420.jpg and cmyk.jpg, crops of ../chelsea.png (CC0). For each NAME.jpg but
cmyk.jpg, NAME.rgb.npy holds
numpy.asarray(PIL.Image.open(NAME.jpg).convert("RGB")): uint8, HWC, C order.
"""

import numpy as np
from PIL import Image, features


def synthetic(height, width, seed):
    """Smooth gradients, sharp edges and noise: every upsampling and IDCT path matters."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 128 + 100 * np.sin(x / 5.0) * np.cos(y / 7.0)
    g = 255 * x / max(width - 1, 1)
    b = np.where((x // 6 + y // 6) % 2 == 0, 230.0, 25.0)
    img = np.stack([r, g, b], axis=-1) + rng.normal(0, 12, (height, width, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def save(name, image, **options):
    image.save(name + ".jpg", "JPEG", **options)
    decoded = np.asarray(Image.open(name + ".jpg").convert("RGB"))
    np.save(name + ".rgb.npy", np.ascontiguousarray(decoded))


def main():
    print("Pillow libjpeg-turbo", features.version("libjpeg_turbo"))
    # Odd sizes: the chroma planes' last row and column take the edge cases of upsampling.
    save("synthetic-420", Image.fromarray(synthetic(37, 45, 1)), quality=85, subsampling=2)
    save("synthetic-422", Image.fromarray(synthetic(29, 43, 2)), quality=90, subsampling=1)
    save("synthetic-444", Image.fromarray(synthetic(31, 41, 3)), quality=90, subsampling=0)
    gray = synthetic(33, 47, 4).mean(axis=-1).round().astype(np.uint8)
    save("synthetic-gray", Image.fromarray(gray, mode="L"), quality=90)
    save("synthetic-420-progressive", Image.fromarray(synthetic(40, 52, 5)), quality=80,
         subsampling=2, progressive=True)
    photo = Image.open("../chelsea.png").convert("RGB").crop((150, 60, 246, 132))
    save("chelsea-420", photo, quality=75, subsampling=2)
    # A CMYK JPEG (Adobe, inverted), which the CLI refuses: no pixels file.
    photo.crop((0, 0, 16, 8)).convert("CMYK").save("cmyk.jpg", "JPEG", quality=90)


if __name__ == "__main__":
    main()
