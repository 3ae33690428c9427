#!/usr/bin/env python3
"""Asks Hugging Face tokenizers itself which code points are word characters to its
single_word rule, for word_character_test.cc to compare IsWordCharacter against.

Usage: word_character_reference.py OUTPUT

A tokenizer.json with one added token "X" (single_word, not normalized) over a WordLevel
model encodes every code point c (surrogates aside) twice, as "\\nXc" and as "cX\\n", many per
text. "X" is split out exactly when the character after it (first form) or before it
(second form) is no word character; "\\n" on its other side is none. OUTPUT gets one line per
range of word characters, "after FIRST LAST" and "before FIRST LAST" in hex, so both sides of
the rule are checked.
"""
import json
import sys

from tokenizers import Tokenizer

TOKEN_ID = 1
CHUNK = 50000
CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def tokenizer():
    config = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": TOKEN_ID, "content": "X", "single_word": True, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": False}],
        "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "X": TOKEN_ID}, "unk_token": "[UNK]"},
    }
    return Tokenizer.from_str(json.dumps(config))


def word_characters(encoder, after):
    """The code points next to which (after or before the token) "X" is not split out."""
    words = []
    for start in range(0, len(CODE_POINTS), CHUNK):
        chunk = CODE_POINTS[start:start + CHUNK]
        pieces = [("\nX" + chr(c)) if after else (chr(c) + "X\n") for c in chunk]
        # Each piece is three characters with "X" in the middle; offsets count characters.
        encoding = encoder.encode("".join(pieces), add_special_tokens=False)
        split_out = {begin for token, (begin, _) in zip(encoding.ids, encoding.offsets) if token == TOKEN_ID}
        words += [c for i, c in enumerate(chunk) if 3 * i + 1 not in split_out]
    return words


def ranges(points):
    result = []
    for c in points:
        if result and result[-1][1] == c - 1:
            result[-1][1] = c
        else:
            result.append([c, c])
    return result


def main():
    (output,) = sys.argv[1:]
    encoder = tokenizer()
    with open(output, "w") as out:
        for side, after in (("after", True), ("before", False)):
            for first, last in ranges(word_characters(encoder, after)):
                out.write("%s %X %X\n" % (side, first, last))


if __name__ == "__main__":
    main()
