"""Real photos for the media tests, and an independent check of what Roost stored.

    media_samples.py make DIR     writes photos (JPEG, PNG, WebP) drawn by Pillow and tagged by
                                  exiftool with GPS, camera make and model, XMP and IPTC; prints
                                  {"name": {"path", "content_type", "orientation"}} as JSON
    media_samples.py check ORIGINAL STORED
                                  exiftool reads STORED: no GPS, no make or model, no XMP, no
                                  IPTC; Pillow decodes both to the same pixels; a JPEG keeps its
                                  orientation. Prints the problems found as a JSON list.

Needs Pillow (scripts/requirements/tools.txt) and exiftool (Debian libimage-exiftool-perl).
"""
import json
import os
import subprocess
import sys

from PIL import Image

TAGS = ["-GPSLatitude=55.6761", "-GPSLatitudeRef=N", "-GPSLongitude=12.5683", "-GPSLongitudeRef=E",
        "-Make=Canon", "-Model=EOS 5D Mark IV", "-XMP-dc:Creator=Ann Neighbour", "-XMP-dc:Description=from my window"]


def draw(width=64, height=48):
    image = Image.new("RGB", (width, height))
    image.putdata([((x * 4) % 256, (y * 5) % 256, (x * y) % 256) for y in range(height) for x in range(width)])
    return image


def exiftool(*args):
    return subprocess.run(["exiftool", "-q", "-q", *args], check=True, capture_output=True, text=True).stdout


def make(directory):
    made = {}
    image = draw()
    jpeg = os.path.join(directory, "photo.jpg")
    image.save(jpeg, "JPEG", quality=95)
    exiftool("-overwrite_original", *TAGS, "-IPTC:City=Copenhagen", "-IPTC:Keywords=suspicious car", "-Orientation#=6",
             "-Comment=taken at home", jpeg)
    made["jpeg"] = {"path": jpeg, "content_type": "image/jpeg", "orientation": 6}
    png = os.path.join(directory, "photo.png")
    image.save(png, "PNG")
    exiftool("-overwrite_original", *TAGS, "-PNG:Comment=taken at home", png)
    made["png"] = {"path": png, "content_type": "image/png", "orientation": None}
    webp = os.path.join(directory, "photo.webp")
    image.save(webp, "WEBP", lossless=True)
    exiftool("-overwrite_original", *TAGS, webp)
    made["webp"] = {"path": webp, "content_type": "image/webp", "orientation": None}
    # Big enough to span several of the stored chunks (256 KiB each).
    large = os.path.join(directory, "large.jpg")
    Image.merge("RGB", [Image.effect_noise((900, 700), 80 + 20 * band) for band in range(3)]).save(large, "JPEG", quality=95)
    exiftool("-overwrite_original", *TAGS, "-Orientation#=3", large)
    made["large_jpeg"] = {"path": large, "content_type": "image/jpeg", "orientation": 3}
    # What went in really carries the metadata (else the check below proves nothing).
    for name, sample in made.items():
        tags = json.loads(exiftool("-j", "-G", sample["path"]))[0]
        assert any("GPSLatitude" in key for key in tags), f"{name}: exiftool wrote no GPS"
        assert any(key.startswith("XMP") for key in tags), f"{name}: exiftool wrote no XMP"
    print(json.dumps(made))


def check(original, stored):
    problems = []
    tags = json.loads(exiftool("-j", "-G", "-a", stored))[0]
    for key, value in tags.items():
        group, _, name = key.partition(":")
        if "GPS" in key or name in ("Make", "Model", "Creator", "Description", "Comment", "City", "Keywords", "UserComment"):
            problems.append(f"{key} = {value} survived")
        if group.startswith(("XMP", "IPTC")):
            problems.append(f"{key} ({group}) survived")
    before, after = Image.open(original), Image.open(stored)
    if before.size != after.size:
        problems.append(f"size {before.size} became {after.size}")
    elif before.convert("RGB").tobytes() != after.convert("RGB").tobytes():
        problems.append("the pixels changed")
    if before.format == "JPEG":
        was = before.getexif().get(0x0112)
        now = after.getexif().get(0x0112)
        if was != now:
            problems.append(f"orientation {was} became {now}")
    print(json.dumps(problems))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3])
