"""WCAG 2.2 contrast ratio of color pairs, with the AA and AAA verdicts.

Usage: python3 contrast.py FOREGROUND BACKGROUND [FOREGROUND BACKGROUND ...]
Colors are hex: #rgb or #rrggbb (the # is optional). Prints one line per pair.
"""
import sys


def channel(value):
    c = value / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(color):
    text = color.strip().lstrip("#")
    if len(text) == 3:
        text = "".join(ch * 2 for ch in text)
    if len(text) != 6 or any(ch not in "0123456789abcdefABCDEF" for ch in text):
        raise ValueError(f"{color!r} is not a hex color like #767676 or #fff")
    r, g, b = (int(text[i:i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def ratio(foreground, background):
    lighter, darker = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def verdict(value, needed):
    return "pass" if value >= needed else "fail"


def main(args):
    if len(args) < 2 or len(args) % 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for foreground, background in zip(args[0::2], args[1::2]):
        try:
            value = ratio(foreground, background)
        except ValueError as problem:
            print(problem, file=sys.stderr)
            return 2
        # Rounded down to 2 places, so 4.499 never reads as a pass at 4.50.
        shown = int(value * 100) / 100
        print(
            f"{foreground} on {background}: {shown:.2f}:1"
            f" | AA normal text {verdict(value, 4.5)}, AA large text and UI {verdict(value, 3)}"
            f" | AAA normal text {verdict(value, 7)}, AAA large text {verdict(value, 4.5)}"
        )
    return 0


sys.exit(main(sys.argv[1:]))
