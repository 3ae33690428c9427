#!/usr/bin/env python3
"""Records grapheme boundaries from the real Rust crate for grapheme_test.cc to compare against.

Hugging Face tokenizers 0.23.3 segments with the crate unicode-segmentation 1.13.3. The PyPI
package unicode-segmentation-rs 1.0.0 wraps that same crate version (its `graphemes(text, True)`
is the crate's `str::graphemes(true)`), so its answers are the crate's. This script checks the
crate version compiled into the extension, builds random strings that stress every rule, and
writes them with the crate's boundaries in the GraphemeBreakTest.txt format:

  pip install unicode-segmentation-rs==1.0.0
  tests/tokenizer/grapheme_reference.py [--out tests/tokenizer/data/grapheme_crate_test.txt]

The strings mix code points of every property in src/tokenizer/grapheme_tables.inc (so every
rule and every table range gets exercised) with code points drawn from all of Unicode (so a
wrong table entry shows up even where the table has no range). The property table only steers
the sampling; the expected boundaries come from the crate alone.
"""

import argparse
import glob
import os
import random
import re

import unicode_segmentation_rs

CRATE = b"unicode-segmentation-1.13.3"
SEED = 29
CASES = 2000


def check_crate_version():
    package_dir = os.path.dirname(unicode_segmentation_rs.__file__)
    for library in glob.glob(os.path.join(package_dir, "*.so")) + glob.glob(
            os.path.join(package_dir, "*.pyd")):
        with open(library, "rb") as f:
            found = set(re.findall(rb"unicode-segmentation-\d+\.\d+\.\d+", f.read()))
        if found:
            if found != {CRATE}:
                raise SystemExit("extension links %s, expected %s" % (found, CRATE))
            return
    raise SystemExit("cannot find the crate version in %s" % package_dir)


def read_table(path):
    """Returns {property: [code points]} sampled from the generated range table."""
    pattern = re.compile(r"\{0x([0-9A-F]+), 0x([0-9A-F]+), k(\w+)\}")
    pools = {}
    with open(path, encoding="utf-8") as f:
        for first, last, name in pattern.findall(f.read()):
            pools.setdefault(name, []).extend(range(int(first, 16), int(last, 16) + 1))
    hangul = pools.pop("HangulSyllable")
    pools["LV"] = pools.get("LV", []) + [c for c in hangul if (c - 0xAC00) % 28 == 0]
    pools["LVT"] = pools.get("LVT", []) + [c for c in hangul if (c - 0xAC00) % 28 != 0]
    pools["Other"] = [0x20, 0x41, 0x61, 0xE9, 0x4E00, 0x10000]
    return pools


def random_code_point(rng):
    while True:
        c = rng.randrange(0x110000)
        if not 0xD800 <= c < 0xE000:
            return c


def make_text(rng, pools, names):
    # Runs of one property make the multi-code-point rules (RI pairs, conjuncts, jamo) fire.
    text = []
    for _ in range(rng.randint(2, 8)):
        roll = rng.random()
        if roll < 0.15:
            text.append(random_code_point(rng))
        elif roll < 0.25 and text:
            text.append(text[-1])
        else:
            text.append(rng.choice(pools[rng.choice(names)]))
    return "".join(map(chr, text))


def format_case(text, clusters):
    parts = ["\u00f7"]
    for cluster in clusters:
        for i, ch in enumerate(cluster):
            if i:
                parts.append("\u00d7")
            parts.append("%04X" % ord(ch))
        parts.append("\u00f7")
    return " ".join(parts)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--out", default=os.path.join(root, "tests/tokenizer/data/grapheme_crate_test.txt"))
    parser.add_argument("--table", default=os.path.join(root, "src/tokenizer/grapheme_tables.inc"))
    parser.add_argument("--cases", type=int, default=CASES)
    args = parser.parse_args()

    check_crate_version()
    pools = read_table(args.table)
    # The properties GB9c, GB11 and GB12/13 chain weigh more, so those rules fire often.
    names = sorted(pools) + ["Consonant", "Linker", "Extend", "ZWJ", "ExtendedPictographic",
                             "RegionalIndicator"] * 2
    rng = random.Random(SEED)
    lines = [
        "# Boundaries of the Rust crate %s (through unicode-segmentation-rs 1.0.0)," %
        CRATE.decode(),
        "# written by tests/tokenizer/grapheme_reference.py (seed %d); same format as" % SEED,
        "# grapheme_break_test.txt.",
    ]
    seen = set()
    while len(seen) < args.cases:
        text = make_text(rng, pools, names)
        if text in seen:
            continue
        seen.add(text)
        clusters = unicode_segmentation_rs.graphemes(text, True)
        assert "".join(clusters) == text
        lines.append(format_case(text, clusters))
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (args.cases, args.out))


if __name__ == "__main__":
    main()
