"""Error messages as the panel shows them: the failing path named once, one readable line, and the
details (still without floods of garbage) for the tooltip.

Errors from the pipeline already start with the file they are about (`bvh.BVHError`: "PATH: line N:
..."), so a message that adds the path again would say it twice; and a binary file quoted back as a
"token" can be hundreds of characters of garbage that push every button off the panel.
"""

import re
from pathlib import Path

MAX_WORD = 40  # longer runs of non-spaces are cut (garbage tokens, long hashes), paths excepted
MAX_PATH = 240
MAX_DETAILS = 600
_PATH_LIKE = re.compile(r"^['\"(]?~?[\w.+-]*/[\w./+-]*['\")]?[:,]?$")
_PATH_PARTS = re.compile(r"^(['\"(]?)(?:.*/)?([^/]+?)/*(['\")]?[:,]?)$")  # quote, folders, name, end


def failure_message(verb: str, path, error: BaseException) -> str:
    """'Could not VERB PATH: REASON' with PATH said once, whatever the exception repeats."""
    path = str(path)
    if isinstance(error, FileNotFoundError):
        reason = "no such file or folder"
    elif isinstance(error, IsADirectoryError):
        reason = "this is a folder, not a file"
    elif isinstance(error, PermissionError):
        reason = "permission denied"
    else:
        reason = user_error(error)
        if path and reason.startswith(path):
            reason = reason[len(path):].lstrip(" :")
        if path:
            reason = reason.replace(path, Path(path).name)
    return f"Could not {verb} {path}: {reason}" if path else f"Could not {verb}: {reason}"


_CLASS_PREFIX = re.compile(r"^(?:[A-Z]\w*(?:Error|Exception|Warning)|Exception): ")
_REPEATED_PATH = re.compile(r"^(\S+): (?:\1: )+")


def user_error(error) -> str:
    """The one form of an error the viewer shows a person: no Python class name ('ValueError: '), and
    a path the message starts with said once even when the layers below each added it."""
    text = str(error).strip() if not isinstance(error, str) else error.strip()
    if not text and isinstance(error, BaseException):
        return type(error).__name__
    while _CLASS_PREFIX.match(text):
        text = _CLASS_PREFIX.sub("", text, count=1)
    return _REPEATED_PATH.sub(r"\1: ", text)


def _cut_words(text: str, max_word: int) -> str:
    def cut(word: str) -> str:
        limit = MAX_PATH if _PATH_LIKE.match(word) else max_word
        return word if len(word) <= limit else word[: limit - 3] + "..."

    return " ".join(cut(word) for word in text.split(" "))


def short_paths(text: str) -> str:
    """`text` with each path in it said by its last part ('/a/b/walk.bvh:' -> 'walk.bvh:'): a line too
    narrow for a whole path keeps the reason after it (the tooltip has the path)."""
    return " ".join(_PATH_PARTS.sub(r"\1\2\3", word) if _PATH_LIKE.match(word) else word for word in text.split(" "))


def details(message: str) -> str:
    """The whole message for a tooltip: every line kept, garbage tokens cut, at most MAX_DETAILS chars."""
    text = "\n".join(_cut_words(line, MAX_WORD) for line in message.strip().splitlines())
    return text if len(text) <= MAX_DETAILS else text[: MAX_DETAILS - 3] + "..."


def one_line(message: str, max_chars: int) -> str:
    """The first line of a message, garbage tokens cut, shortened to `max_chars` with '...'."""
    lines = message.strip().splitlines()
    text = " ".join(_cut_words(lines[0], MAX_WORD).split()) if lines else ""
    if len(lines) > 1 or len(text) > max_chars:
        text = text[: max(max_chars - 3, 1)].rstrip() + "..."
    return text
