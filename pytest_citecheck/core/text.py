"""Text that users give and text that reaches a terminal.

Two rules, kept here so every reader and every printer shares them:

- :func:`text_problem` -- what input text may not hold: a lone surrogate (an
  unpaired ``\\ud800`` escape in JSON or a YAML double-quoted string, which no
  file, database or terminal can encode) or a C0 control character or DEL other
  than tab, newline and carriage return (an escaped ``\\x1b[2J`` would clear the
  terminal that prints it; a CRLF line ending in a quoted document, or U+0085
  NEL, is only text).
- :func:`terminal_safe` -- text from pages, judges and claims made printable:
  escape sequences (``ESC[31m``, ``ESC]...BEL``) and other control characters
  are removed, lone surrogates shown as U+FFFD; :func:`shown` names them instead
  (``<U+001B>``), for a message that quotes the input it refuses.
"""

from __future__ import annotations

import re
import unicodedata

ALLOWED_CONTROLS = frozenset("\t\n")
# Input may also hold carriage returns (CRLF text); the terminal never gets them raw.
INPUT_CONTROLS = frozenset("\t\n\r")

# ESC [ ... final byte (CSI), ESC ] ... BEL or ESC \ (OSC), ESC and one more byte.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" and ch not in ALLOWED_CONTROLS


def text_problem(text: str) -> str | None:
    """Why ``text`` is not acceptable input, or None (names the first bad character)."""
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return (
                f"it holds a lone surrogate U+{ord(ch):04X} at character {i + 1} "
                f"(an unpaired \\u{ord(ch):04x} escape; no file or terminal can store it)"
            )
        if (ch < " " or ch == "\x7f") and ch not in INPUT_CONTROLS:
            return f"it holds the control character U+{ord(ch):04X} at character {i + 1}"
    return None


TEXT_FIX = (
    "remove the character: write the text itself (an emoji as the character or a "
    "surrogate pair like \\ud83d\\ude00, not half of one); only tab, newline and "
    "carriage return may be escaped"
)


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences or control characters (tab and newline kept)."""
    if text.isprintable():
        return text
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _SURROGATE.sub("\ufffd", text)
    return "".join(ch for ch in text if not _is_control(ch))


# Control characters (C0, DEL, C1: ESC and CSI start escape sequences) and lone
# surrogates: what shown() names instead of printing.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
_SPACES = {"\t": " ", "\n": " ", "\r": " "}


def shown(text: str, *, surrogates: bool = True) -> str:
    """``text`` as one line of a message that quotes input: tab and line breaks as
    spaces, every other control character and lone surrogate named (``<U+001B>``), so
    a hostile response's escape sequence, bell or NUL never reaches a terminal raw and
    the message still says what was there (:func:`terminal_safe` removes them). Without
    ``surrogates``, lone surrogates stay (a file name's undecodable bytes, named by
    whoever writes the name to a file)."""
    pattern = _UNPRINTABLE if surrogates else _CONTROLS
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: _SPACES.get(m.group(), f"<U+{ord(m.group()):04X}>"), text)


ELLIPSIS = "…"


def truncate(text: str | None, width: int, *, flatten: bool = False) -> str:
    """``text`` in at most ``width`` characters, its last one ``…`` when cut; no text
    is the empty string. ``flatten`` first folds every run of whitespace (newlines
    included) into one space, for text shown on one line."""
    if not text:
        return ""
    if flatten:
        text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def plural(n: int, word: str) -> str:
    """``1 claim``, ``2 claims``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def ratio(value: float | None) -> str:
    """A precision as reports print it: four decimals, ``n/a`` when undefined."""
    return "n/a" if value is None else f"{value:.4f}"
